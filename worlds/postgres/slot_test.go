package postgres_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stormctl/stormctl/internal/eventlog"
	"github.com/stormctl/stormctl/worlds"
	"github.com/stormctl/stormctl/worlds/postgres"
	"github.com/stormctl/stormctl/worlds/worldtest"
)

// TestSlotCommitTimesAreTheFills: a reservation is invisible to every reader
// (List, Dump, CommitTimes); once committed, its store commit time is the
// Commit's transaction, not the Reserve's, and a noop's is the seal's, so
// forensics measure when a slot was filled. The noop records the
// reservation's time exactly and who sealed it.
func TestSlotCommitTimesAreTheFills(t *testing.T) {
	cluster.URL(t)
	w := openWorld(t, postgres.Config{})
	ctx := t.Context()
	run := worldtest.NewRun(t, w, eventlog.Run{Scheme: eventlog.SchemeSlot})
	r1, err := w.Reserve(ctx, run, []eventlog.Draft{worldtest.Draft(eventlog.StepCreated, "a")})
	if err != nil {
		t.Fatal(err)
	}
	r2, err := w.Reserve(ctx, run, []eventlog.Draft{worldtest.Draft(eventlog.StepCreated, "b")})
	if err != nil {
		t.Fatal(err)
	}
	if p, err := w.List(ctx, run, eventlog.Cursor{}, 0); err != nil || len(p.Events) != 0 {
		t.Fatalf("List with two reservations = %d events, %v; want none and no hole", len(p.Events), err)
	}
	if d, err := w.Dump(ctx, run); err != nil || len(d) != 0 {
		t.Fatalf("Dump with two reservations = %d events, %v; want none", len(d), err)
	}
	if cts, err := w.CommitTimes(ctx, run); err != nil || len(cts) != 0 {
		t.Fatalf("CommitTimes with two reservations = %d, %v; want none", len(cts), err)
	}

	if _, err := w.Commit(ctx, r1); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Append(ctx, run, []eventlog.Draft{worldtest.Draft(eventlog.StepCreated, "c")}); err != nil {
		t.Fatal(err)
	}
	beforeSeal := time.Now()
	noop, sealed, err := w.Seal(worlds.WithActor(ctx, "inv-3"), run, r2.First)
	if err != nil || !sealed {
		t.Fatalf("Seal(%d) = %v, %v", r2.First, sealed, err)
	}
	var p eventlog.NoopPayload
	if err := json.Unmarshal(noop.Payload, &p); err != nil || !p.ReservedAt.Equal(r2.ReservedAt) || p.SealedBy != "inv-3" {
		t.Fatalf("noop payload %s (%v): want reservedAt %v, sealedBy inv-3", noop.Payload, err, r2.ReservedAt)
	}
	if noop.CorrelationID != "" || noop.Token != "" || noop.Dedup != "" || noop.MintedAt.Before(beforeSeal.Truncate(time.Microsecond)) {
		t.Fatalf("noop %+v: want no draft fields and the seal's own mint time", noop)
	}

	cts, err := w.CommitTimes(ctx, run)
	if err != nil || len(cts) != 3 {
		t.Fatalf("CommitTimes = %+v, %v; want 3", cts, err)
	}
	// Ordered by what happened between: slot 2 was reserved after slot 1's
	// Reserve and before its Commit (the server's clock is this machine's);
	// slot 3's append returned before the seal of slot 2 began.
	if at := cts[0].At; !at.After(r2.ReservedAt) {
		t.Fatalf("slot 1 committed at %v, before slot 2 was reserved (%v): as if its Reserve (%v) had committed it", at, r2.ReservedAt, r1.ReservedAt)
	}
	if at := cts[1].At; !at.After(cts[2].At) {
		t.Fatalf("the noop at slot 2 committed at %v, before slot 3 (%v) whose append returned before the seal began", at, cts[2].At)
	}
	all, err := w.List(ctx, run, eventlog.Cursor{}, 0)
	if err != nil {
		t.Fatal(err)
	}
	for i, e := range all.Events {
		if !e.CommittedAt.Equal(cts[i].At) {
			t.Fatalf("List's event %d committed at %v, CommitTimes says %v", i, e.CommittedAt, cts[i].At)
		}
	}
}

// TestSlotBatchSealRace: a seal of a batch's middle slot races the batch's
// commit. Either the commit wins (every slot committed, nothing sealed) or
// the seal does (the commit fails with ErrSealed and seals the rest): never
// a batch half committed.
func TestSlotBatchSealRace(t *testing.T) {
	cluster.URL(t)
	w := openWorld(t, postgres.Config{})
	ctx := t.Context()
	run := worldtest.NewRun(t, w, eventlog.Run{Scheme: eventlog.SchemeSlot})
	const rounds = 20
	var committed, voided int
	for i := range rounds {
		d := []eventlog.Draft{worldtest.Draft(eventlog.StepCreated, fmt.Sprint("a", i)), worldtest.Draft(eventlog.StepCreated, fmt.Sprint("b", i)), worldtest.Draft(eventlog.StepCreated, fmt.Sprint("c", i))}
		r, err := w.Reserve(ctx, run, d)
		if err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		var cerr, serr error
		var sealed bool
		wg.Go(func() { _, cerr = w.Commit(ctx, r) })
		wg.Go(func() { _, sealed, serr = w.Seal(ctx, run, r.First+1) })
		wg.Wait()
		var se *eventlog.SealedError
		switch {
		case serr != nil:
			t.Fatalf("round %d: Seal: %v", i, serr)
		case cerr == nil && !sealed:
			committed++
		case errors.As(cerr, &se) && sealed && se.Slot == r.First+1:
			voided++
		default:
			t.Fatalf("round %d: Commit %v, sealed %v: want exactly one winner", i, cerr, sealed)
		}
	}
	dump, err := w.Dump(ctx, run)
	if err != nil || len(dump) != 3*rounds {
		t.Fatalf("Dump = %d events, %v; want %d", len(dump), err, 3*rounds)
	}
	for i := 0; i < len(dump); i += 3 {
		noops := 0
		for _, e := range dump[i : i+3] {
			if e.Type == eventlog.Noop {
				noops++
			}
		}
		if noops != 0 && noops != 3 {
			t.Fatalf("batch at slots %d-%d holds %d noops: half committed", dump[i].Seq, dump[i].Seq+2, noops)
		}
	}
	t.Logf("%d commits won, %d seals won", committed, voided)
}

// TestSlotMisuse: the Slotter methods refuse other schemes' runs, unknown
// runs, slots never reserved and a reservation committed twice.
func TestSlotMisuse(t *testing.T) {
	cluster.URL(t)
	w := openWorld(t, postgres.Config{})
	ctx := t.Context()
	seq := worldtest.NewRun(t, w, eventlog.Run{Scheme: eventlog.SchemeSeq})
	d := []eventlog.Draft{worldtest.Draft(eventlog.StepCreated, "a")}
	if _, err := w.Reserve(ctx, seq, d); err == nil {
		t.Fatal("Reserve in a seq run succeeded")
	}
	if _, _, err := w.Seal(ctx, seq, 1); err == nil {
		t.Fatal("Seal in a seq run succeeded")
	}
	if _, err := w.Reserve(ctx, "wrun_missing", d); !errors.Is(err, eventlog.ErrNoRun) {
		t.Fatalf("Reserve in an unknown run = %v, want ErrNoRun", err)
	}
	if _, _, err := w.Seal(ctx, "wrun_missing", 1); !errors.Is(err, eventlog.ErrNoRun) {
		t.Fatalf("Seal in an unknown run = %v, want ErrNoRun", err)
	}
	run := worldtest.NewRun(t, w, eventlog.Run{Scheme: eventlog.SchemeSlot})
	for _, slot := range []int64{0, 1} {
		if _, _, err := w.Seal(ctx, run, slot); err == nil {
			t.Fatalf("Seal(%d) of an empty run succeeded", slot)
		}
	}
	r, err := w.Reserve(ctx, run, d)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Commit(ctx, r); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Commit(ctx, r); err == nil || errors.Is(err, eventlog.ErrSealed) {
		t.Fatalf("a second Commit of one reservation = %v, want an error that is not ErrSealed", err)
	}
	if _, err := w.Commit(ctx, worlds.Reservation{RunID: run, First: 5, Drafts: d}); err == nil {
		t.Fatal("Commit of slots never reserved succeeded")
	}
	if evs, err := w.Commit(ctx, worlds.Reservation{RunID: run}); err != nil || len(evs) != 0 {
		t.Fatalf("Commit of an empty reservation = %v, %v", evs, err)
	}
	if p, err := w.List(ctx, run, eventlog.Cursor{}, 0); err != nil || len(p.Events) != 1 {
		t.Fatalf("List = %d events, %v; want the one committed", len(p.Events), err)
	}
}

// TestSlotIDsPerRun: slot ids are positions, so every slot run of a World
// has its own slot 1; the table keys events on (run_id, id).
func TestSlotIDsPerRun(t *testing.T) {
	cluster.URL(t)
	w := openWorld(t, postgres.Config{})
	for i := range 3 {
		run := worldtest.NewRun(t, w, eventlog.Run{Scheme: eventlog.SchemeSlot})
		evs, err := w.Append(t.Context(), run, []eventlog.Draft{worldtest.Draft(eventlog.RunCreated, "")})
		if err != nil {
			t.Fatalf("run %d: %v", i, err)
		}
		if evs[0].ID != eventlog.SlotID(1) {
			t.Fatalf("run %d: first event %s, want %s", i, evs[0].ID, eventlog.SlotID(1))
		}
	}
}

// TestSlotStormWithSeals: 8 writers append with the seed's windows, one
// write in five given 3 ms to live (mostly dying in its window, a dead
// writer's hole), while two
// readers re-read the log and seal every hole they meet. At the end every
// slot up to the counter holds exactly one event (a commit or a noop), the
// log reads dense, every write that returned is in it at its slot, and every
// sealed write's key is free again.
func TestSlotStormWithSeals(t *testing.T) {
	cluster.URL(t)
	lat, err := worlds.ParseProfile("seed", 7)
	if err != nil {
		t.Fatal(err)
	}
	w := openWorld(t, postgres.Config{Latency: lat, PoolSize: 12})
	ctx := t.Context()
	run := worldtest.NewRun(t, w, eventlog.Run{Scheme: eventlog.SchemeSlot})
	const writers, perWriter = 8, 10
	var (
		mu       sync.Mutex
		accepted = map[string]eventlog.Event{}
		dead     []eventlog.Draft // gave up in their window
		voided   []eventlog.Draft // ErrSealed: a reader sealed them first
		sealed   int
	)
	done := make(chan struct{})
	var readers sync.WaitGroup
	for r := range 2 {
		readers.Go(func() {
			sctx := worlds.WithActor(ctx, fmt.Sprint("reader-", r))
			for {
				select {
				case <-done:
					return
				default:
				}
				_, err := w.List(ctx, run, eventlog.Cursor{}, 0)
				var he *eventlog.HoleError
				switch {
				case errors.As(err, &he):
					time.Sleep(5 * time.Millisecond)
					_, ok, serr := w.Seal(sctx, run, he.Slot)
					if serr != nil {
						t.Errorf("Seal(%d): %v", he.Slot, serr)
						return
					}
					if ok {
						mu.Lock()
						sealed++
						mu.Unlock()
					}
				case err != nil:
					t.Errorf("List: %v", err)
					return
				}
				time.Sleep(time.Millisecond)
			}
		})
	}
	var wg sync.WaitGroup
	for i := range writers {
		wg.Go(func() {
			for j := range perWriter {
				d := worldtest.Draft(eventlog.StepCompleted, fmt.Sprintf("w%d_%d", i, j))
				wctx, cancel := context.WithCancel(ctx)
				if j%5 == 4 {
					// Dies a moment in: mostly in the window, after Reserve.
					wctx, cancel = context.WithTimeout(ctx, 3*time.Millisecond)
				}
				evs, err := w.Append(wctx, run, []eventlog.Draft{d})
				cancel()
				mu.Lock()
				switch {
				case err == nil:
					accepted[evs[0].ID] = evs[0]
				case errors.Is(err, context.DeadlineExceeded):
					dead = append(dead, d)
				case errors.Is(err, eventlog.ErrSealed):
					voided = append(voided, d)
				default:
					t.Errorf("Append: %v", err)
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	close(done)
	readers.Wait()
	// Seal whatever hole the readers left (a dead writer's slot at the tail
	// is a hole once anything commits above it; here nothing will).
	counter := int64(0)
	for {
		p, err := w.List(ctx, run, eventlog.Cursor{}, 0)
		var he *eventlog.HoleError
		if errors.As(err, &he) {
			if _, _, err := w.Seal(ctx, run, he.Slot); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		counter = int64(len(p.Events))
		break
	}
	dump, err := w.Dump(ctx, run)
	if err != nil {
		t.Fatal(err)
	}
	for i, e := range dump {
		if e.Seq != int64(i+1) || e.ID != eventlog.SlotID(e.Seq) {
			t.Fatalf("Dump event %d is %s@%d: slots are not filled once each", i, e.ID, e.Seq)
		}
		if a, ok := accepted[e.ID]; ok && (a.Type != e.Type || a.CorrelationID != e.CorrelationID) {
			t.Fatalf("slot %d holds %s %s, but the write that returned it was %s %s", e.Seq, e.Type, e.CorrelationID, a.Type, a.CorrelationID)
		}
	}
	for id := range accepted {
		if pos, _ := eventlog.SlotPosition(id); pos > counter {
			t.Fatalf("accepted event %s is not in the log of %d", id, counter)
		}
	}
	// A voided write's key is free again. A dead writer's is free once its
	// slot was sealed; one at the tail (nothing committed above it) or that
	// died before its Reserve finished may still hold it or never have.
	for _, d := range voided {
		if _, err := w.Append(ctx, run, []eventlog.Draft{d}); err != nil {
			t.Fatalf("re-append of sealed write %s: %v", d.CorrelationID, err)
		}
	}
	free := 0
	for _, d := range dead {
		if _, err := w.Append(ctx, run, []eventlog.Draft{d}); err == nil {
			free++
		} else if !errors.Is(err, eventlog.ErrConflict) {
			t.Fatal(err)
		}
	}
	t.Logf("%d slots: %d writes accepted, %d voided by a seal, %d dead in their window (%d keys free again), %d seals by readers",
		counter, len(accepted), len(voided), len(dead), free, sealed)
	if len(accepted)+len(voided)+len(dead) != writers*perWriter {
		t.Fatalf("%d accepted + %d voided + %d dead != %d writes", len(accepted), len(voided), len(dead), writers*perWriter)
	}
}
