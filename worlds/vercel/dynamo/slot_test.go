package dynamo_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stormctl/stormctl/internal/eventlog"
	"github.com/stormctl/stormctl/worlds/vercel/dynamo"
)

// slotRun creates a slot run on st.
func slotRun(t *testing.T, st *dynamo.Store, id string) eventlog.Run {
	t.Helper()
	run := eventlog.Run{ID: id, Scheme: eventlog.SchemeSlot}
	if err := st.CreateRun(t.Context(), run); err != nil {
		t.Fatal(err)
	}
	return run
}

// appendSlots reserves and commits drafts at once.
func appendSlots(t *testing.T, st *dynamo.Store, run eventlog.Run, d ...eventlog.Draft) []eventlog.Event {
	t.Helper()
	r, err := st.Reserve(t.Context(), run, d, dynamo.Fence{})
	if err != nil {
		t.Fatalf("Reserve: %v", err)
	}
	w, err := st.Commit(t.Context(), run, r.First, r.ReservedAt, d, "")
	if err != nil {
		t.Fatalf("Commit: %v", err)
	}
	return w.Events
}

func slots(evs []eventlog.Event) []string {
	out := make([]string, len(evs))
	for i, e := range evs {
		out[i] = fmt.Sprintf("%d:%s", e.Seq, e.Type)
	}
	return out
}

// TestSlotLifecycle: reserve, commit and seal through the store on both
// layouts. Reserved slots stay invisible to List and Dump; an empty slot
// below a committed one is a HoleError; a seal fills it with a noop and
// frees its keys; a commit of a sealed slot is void and seals the rest of
// its reservation; reads come back in slot order with slot ids.
func TestSlotLifecycle(t *testing.T) {
	for _, perRun := range []bool{false, true} {
		t.Run(fmt.Sprintf("table_per_run=%v", perRun), func(t *testing.T) {
			ctx := t.Context()
			st := open(t, embedded(t), dynamo.Config{TablePerRun: perRun})
			run := slotRun(t, st, "wrun_slot")
			first := appendSlots(t, st, run, step(eventlog.RunCreated, ""), step(eventlog.StepCreated, "a"))
			if first[0].ID != eventlog.SlotID(1) || first[1].Seq != 2 || !first[1].MintedAt.Equal(first[0].MintedAt) {
				t.Fatalf("first batch = %+v, want slots 1 and 2 minted together", first)
			}
			held := []eventlog.Draft{step(eventlog.StepCompleted, "a"), step(eventlog.StepCreated, "b")}
			r, err := st.Reserve(ctx, run, held, dynamo.Fence{})
			if err != nil || r.First != 3 {
				t.Fatalf("Reserve = %+v, %v; want slots 3-4", r, err)
			}
			if _, err := st.Reserve(ctx, run, []eventlog.Draft{step(eventlog.StepCreated, "b")}, dynamo.Fence{}); !errors.Is(err, eventlog.ErrConflict) {
				t.Fatalf("Reserve of a key held by a reservation = %v, want ErrConflict", err)
			}
			var fe *eventlog.FencedError
			if _, err := st.Reserve(ctx, run, []eventlog.Draft{step(eventlog.StepCreated, "c")}, dynamo.Fence{On: true, Expected: 2}); !errors.As(err, &fe) || fe.Actual != 4 {
				t.Fatalf("fenced Reserve at 2 = %v, want FencedError with Actual 4 (the slots reserved)", err)
			}
			late := appendSlots(t, st, run, step(eventlog.HookReceived, "h"))
			if late[0].Seq != 5 {
				t.Fatalf("append past the reservation at %d, want 5", late[0].Seq)
			}
			var he *eventlog.HoleError
			if _, err := st.List(ctx, run, eventlog.Cursor{}, 0); !errors.As(err, &he) || he.Slot != 3 || he.Above != 5 {
				t.Fatalf("List across the reservation = %v, want a HoleError at 3 below 5", err)
			}
			if p, err := st.List(ctx, run, eventlog.Cursor{}, 2); err != nil || len(p.Events) != 2 || !p.More || p.Next.Seq != 2 {
				t.Fatalf("List(limit 2) = %+v, %v; want slots 1-2 and more", p, err)
			}
			if d, err := st.Dump(ctx, run); err != nil || len(d) != 3 || d[2].Seq != 5 {
				t.Fatalf("Dump = %v, %v; want slots 1, 2, 5", slots(d), err)
			}
			w, sealed, err := st.Seal(ctx, run, 4, "reader")
			if err != nil || !sealed || w.Events[0].Type != eventlog.Noop || w.Events[0].ID != eventlog.SlotID(4) {
				t.Fatalf("Seal(4) = %+v, %v, %v", w, sealed, err)
			}
			var p eventlog.NoopPayload
			if err := json.Unmarshal(w.Events[0].Payload, &p); err != nil || p.SealedBy != "reader" || !p.ReservedAt.Equal(r.ReservedAt) {
				t.Fatalf("noop payload %s (%v), want sealedBy reader, reservedAt %v", w.Events[0].Payload, err, r.ReservedAt)
			}
			cw, err := st.Commit(ctx, run, r.First, r.ReservedAt, held, "writer")
			var se *eventlog.SealedError
			if !errors.As(err, &se) || se.Slot != 4 || len(cw.Noops) != 1 || cw.Noops[0].Seq != 3 {
				t.Fatalf("Commit of a half-sealed reservation = %+v, %v; want SealedError at 4 and a noop it wrote at 3", cw, err)
			}
			all, err := st.List(ctx, run, eventlog.Cursor{}, 0)
			if err != nil || len(all.Events) != 5 || all.Events[2].Type != eventlog.Noop || all.Events[3].Type != eventlog.Noop {
				t.Fatalf("log = %v, %v; want noops at 3 and 4", slots(all.Events), err)
			}
			if err := json.Unmarshal(all.Events[2].Payload, &p); err != nil || p.SealedBy != "writer" {
				t.Fatalf("self-seal payload %s, want sealedBy writer", all.Events[2].Payload)
			}
			again := appendSlots(t, st, run, held...)
			if again[0].Seq != 6 {
				t.Fatalf("re-append of the void reservation's drafts at %d, want 6 (keys released)", again[0].Seq)
			}
			for _, slot := range []int64{1, 3} {
				if _, sealed, err := st.Seal(ctx, run, slot, ""); sealed || err != nil {
					t.Fatalf("Seal(%d) of a filled slot = %v, %v; want nothing", slot, sealed, err)
				}
			}
			for _, slot := range []int64{0, 99} {
				if _, _, err := st.Seal(ctx, run, slot, ""); !errors.Is(err, dynamo.ErrNoSlot) {
					t.Fatalf("Seal(%d) = %v, want ErrNoSlot", slot, err)
				}
			}
			if _, err := st.Commit(ctx, run, 1, first[0].MintedAt, []eventlog.Draft{first[0].Draft()}, ""); !errors.Is(err, dynamo.ErrNotReserved) {
				t.Fatalf("a second Commit of slot 1 = %v, want ErrNotReserved", err)
			}
			r2, err := st.Reserve(ctx, run, []eventlog.Draft{step(eventlog.StepCompleted, "z")}, dynamo.Fence{})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := st.Commit(ctx, run, r2.First, r2.ReservedAt, []eventlog.Draft{step(eventlog.StepCompleted, "other")}, ""); !errors.Is(err, dynamo.ErrNotReserved) {
				t.Fatalf("Commit of other drafts than reserved = %v, want ErrNotReserved", err)
			}
			if _, err := st.Commit(ctx, run, r2.First, r2.ReservedAt.Add(time.Microsecond), []eventlog.Draft{step(eventlog.StepCompleted, "z")}, ""); !errors.Is(err, dynamo.ErrNotReserved) {
				t.Fatalf("Commit at another reservation time = %v, want ErrNotReserved", err)
			}
			if _, err := st.Commit(ctx, run, 50, r2.ReservedAt, []eventlog.Draft{step(eventlog.StepCompleted, "z")}, ""); !errors.Is(err, dynamo.ErrNoSlot) {
				t.Fatalf("Commit of a slot never reserved = %v, want ErrNoSlot", err)
			}
			seq := eventlog.Run{ID: "wrun_seq", Scheme: eventlog.SchemeSeq}
			if err := st.CreateRun(ctx, seq); err != nil {
				t.Fatal(err)
			}
			if _, err := st.Reserve(ctx, seq, []eventlog.Draft{step(eventlog.StepCompleted, "s")}, dynamo.Fence{}); !errors.Is(err, dynamo.ErrNotSlotRun) {
				t.Fatalf("Reserve on a seq run = %v, want ErrNotSlotRun", err)
			}
			if _, err := st.WriteSeq(ctx, run, newMinter().events(run.ID, step(eventlog.StepCompleted, "w")), dynamo.Fence{}); err == nil {
				t.Fatal("WriteSeq wrote to a slot run")
			}
		})
	}
}

// TestSlotPages: a slot run read page by page, with reserved slots
// between committed ones on a page, pages as a whole read does.
func TestSlotPages(t *testing.T) {
	ctx := t.Context()
	st := open(t, embedded(t), dynamo.Config{TablePerRun: true})
	run := slotRun(t, st, "wrun_pages")
	for i := range 7 {
		appendSlots(t, st, run, step(eventlog.StepCompleted, fmt.Sprint("c", i)))
	}
	tail, err := st.Reserve(ctx, run, []eventlog.Draft{step(eventlog.StepCompleted, "tail")}, dynamo.Fence{})
	if err != nil {
		t.Fatal(err)
	}
	var got []eventlog.Event
	after := eventlog.Cursor{}
	for {
		p, err := st.List(ctx, run, after, 3)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, p.Events...)
		if !p.More {
			break
		}
		after = p.Next
	}
	if len(got) != 7 || eventlog.CheckSlots(run.ID, 0, got) != nil {
		t.Fatalf("paged log = %v, want slots 1-7 (the reserved tail is no hole)", slots(got))
	}
	if _, err := st.Commit(ctx, run, tail.First, tail.ReservedAt, []eventlog.Draft{step(eventlog.StepCompleted, "tail")}, ""); err != nil {
		t.Fatal(err)
	}
	p, err := st.List(ctx, run, eventlog.Cursor{Seq: 7}, 3)
	if err != nil || len(p.Events) != 1 || p.More || p.Events[0].CorrelationID != "tail" {
		t.Fatalf("List after 7 = %+v, %v", p, err)
	}
}

// TestSlotSealRace: commits and seals of the same slots race; each slot
// ends filled exactly once, and a lost commit says ErrSealed.
func TestSlotSealRace(t *testing.T) {
	ctx := t.Context()
	st := open(t, embedded(t), dynamo.Config{TablePerRun: true})
	run := slotRun(t, st, "wrun_race")
	const rounds = 30
	var wg sync.WaitGroup
	var sealedCommits atomic.Int64
	for i := range rounds {
		d := []eventlog.Draft{step(eventlog.StepCompleted, fmt.Sprint("r", i)), step(eventlog.StepStarted, fmt.Sprint("r", i))}
		r, err := st.Reserve(ctx, run, d, dynamo.Fence{})
		if err != nil {
			t.Fatal(err)
		}
		wg.Go(func() {
			_, err := st.Commit(ctx, run, r.First, r.ReservedAt, d, "w")
			switch {
			case errors.Is(err, eventlog.ErrSealed):
				sealedCommits.Add(1)
			case err != nil:
				t.Errorf("Commit: %v", err)
			}
		})
		wg.Go(func() {
			if _, _, err := st.Seal(ctx, run, r.First+1, "s"); err != nil {
				t.Errorf("Seal: %v", err)
			}
		})
	}
	wg.Wait()
	p, err := st.List(ctx, run, eventlog.Cursor{}, 0)
	if err != nil || len(p.Events) != 2*rounds {
		t.Fatalf("log: %d events, %v; want %d", len(p.Events), err, 2*rounds)
	}
	noops := 0
	for i := 0; i < len(p.Events); i += 2 {
		a, b := p.Events[i].Type == eventlog.Noop, p.Events[i+1].Type == eventlog.Noop
		if a != b {
			t.Fatalf("slots %d-%d = %v: a reservation half committed", i+1, i+2, slots(p.Events[i:i+2]))
		}
		if a {
			noops++
		}
	}
	if int64(noops) != sealedCommits.Load() {
		t.Fatalf("%d reservations sealed, %d commits said ErrSealed", noops, sealedCommits.Load())
	}
	t.Logf("%d of %d commits lost to a seal", noops, rounds)
}
