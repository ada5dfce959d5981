package local_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/stormctl/stormctl/internal/base/clock"
	"github.com/stormctl/stormctl/internal/base/filetest"
	"github.com/stormctl/stormctl/internal/eventlog"
	"github.com/stormctl/stormctl/worlds"
	"github.com/stormctl/stormctl/worlds/local"
	"github.com/stormctl/stormctl/worlds/worldtest"
)

// TestSlotWindowEndLeavesHole: a writer whose context ends in its window
// returns the context's error and leaves its slot reserved: nothing of it is
// readable, its key stays taken, a commit above it makes a hole, and a seal
// from another handle (another process) fills it and frees the key.
func TestSlotWindowEndLeavesHole(t *testing.T) {
	dir := t.TempDir()
	slow, fast := open(t, dir, 1, worldtest.Latency(t, "fixed:1h")), open(t, dir, 2, nil)
	run := "wrun_window"
	worldtest.NewRun(t, fast, eventlog.Run{ID: run, Scheme: eventlog.SchemeSlot})
	d := worldtest.Draft(eventlog.StepCompleted, "abandoned")
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	done := make(chan error, 1)
	go func() { _, err := slow.Append(ctx, run, []eventlog.Draft{d}); done <- err }()
	for { // end the writer's context once its slot is reserved
		var tbl struct{ States string }
		if b, err := os.ReadFile(filepath.Join(dir, "runs", run+".slot")); err == nil && json.Unmarshal(b, &tbl) == nil && tbl.States == "r" {
			break
		}
		time.Sleep(time.Millisecond)
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("Append whose context ends in its window = %v, want context.Canceled", err)
	}
	if evs := worldtest.ListAll(t, fast, run); len(evs) != 0 {
		t.Fatalf("a reservation is visible: %v", evs)
	}
	if _, err := fast.Append(t.Context(), run, []eventlog.Draft{d}); !errors.Is(err, eventlog.ErrConflict) {
		t.Fatalf("Append of the abandoned draft while its slot is reserved = %v, want a conflict", err)
	}
	if _, err := fast.AppendFenced(t.Context(), run, 0, []eventlog.Draft{worldtest.Draft(eventlog.StepCreated, "x")}); !errors.Is(err, eventlog.ErrFenced) {
		t.Fatalf("AppendFenced(0) over a reserved slot = %v, want fenced (the counter counts reservations)", err)
	}
	above := worldtest.AppendFenced(t, fast, run, 1, worldtest.Draft(eventlog.StepCreated, "x"))
	if above[0].Seq != 2 {
		t.Fatalf("append above the reservation landed at %d, want 2", above[0].Seq)
	}
	var he *eventlog.HoleError
	if _, err := fast.List(t.Context(), run, eventlog.Cursor{}, 0); !errors.As(err, &he) || he.Slot != 1 || he.Above != 2 {
		t.Fatalf("List across the abandoned slot = %v, want a HoleError at slot 1 below 2", err)
	}
	if got := dump(t, fast, run); len(got) != 1 || got[0].Seq != 2 {
		t.Fatalf("Dump = %v, want only slot 2", got)
	}
	noop, sealed, err := fast.Seal(worlds.WithActor(t.Context(), "reader-1"), run, 1)
	if err != nil || !sealed || noop.Type != eventlog.Noop {
		t.Fatalf("Seal(1) = %+v, %v, %v; want a noop", noop, sealed, err)
	}
	log := worldtest.ListAll(t, slow, run)
	if len(log) != 2 || log[0].Type != eventlog.Noop || log[1].ID != above[0].ID {
		t.Fatalf("log after the seal = %v, want the noop and slot 2", log)
	}
	if again := worldtest.Append(t, fast, run, d); again[0].Seq != 3 {
		t.Fatalf("re-append of the sealed draft landed at %d, want 3", again[0].Seq)
	}
}

// TestSlotReadersNeverSeeReservations: List and Dump show a reservation only
// once it commits, on every handle, and never a reservation's keys as free.
func TestSlotReadersNeverSeeReservations(t *testing.T) {
	dir := t.TempDir()
	w, other := open(t, dir, 1, nil), open(t, dir, 2, nil)
	run := "wrun_invisible"
	worldtest.NewRun(t, w, eventlog.Run{ID: run, Scheme: eventlog.SchemeSlot})
	r, err := w.Reserve(t.Context(), run, []eventlog.Draft{worldtest.Draft(eventlog.StepCreated, "a"), worldtest.Draft(eventlog.StepCreated, "b")})
	if err != nil {
		t.Fatal(err)
	}
	for i, h := range []*local.World{w, other} {
		if evs := worldtest.ListAll(t, h, run); len(evs) != 0 {
			t.Fatalf("handle %d lists %d events while only a reservation exists", i, len(evs))
		}
		if evs := dump(t, h, run); len(evs) != 0 {
			t.Fatalf("handle %d dumps %d events while only a reservation exists", i, len(evs))
		}
	}
	if got := names(t, filepath.Join(dir, "events", run)); len(got) != 0 {
		t.Fatalf("events/ holds %v for a reservation, want nothing", got)
	}
	evs, err := other.Commit(t.Context(), r)
	if err != nil {
		t.Fatalf("Commit from another handle: %v", err)
	}
	for i, h := range []*local.World{w, other} {
		if got := worldtest.ListAll(t, h, run); len(got) != 2 || got[0].ID != evs[0].ID || got[1].ID != evs[1].ID {
			t.Fatalf("handle %d lists %v after the commit, want %v", i, got, evs)
		}
	}
}

// TestSlotMisuse: the Slotter methods refuse other schemes, empty and
// mismatched reservations, a second commit, and a slot below 1.
func TestSlotMisuse(t *testing.T) {
	w := open(t, t.TempDir(), 1, nil)
	worldtest.NewRun(t, w, eventlog.Run{ID: "wrun_seq", Scheme: eventlog.SchemeSeq})
	run := "wrun_slot"
	worldtest.NewRun(t, w, eventlog.Run{ID: run, Scheme: eventlog.SchemeSlot})
	ctx := t.Context()
	d := []eventlog.Draft{worldtest.Draft(eventlog.StepCreated, "a")}
	if _, err := w.Reserve(ctx, "wrun_seq", d); err == nil {
		t.Error("Reserve on a seq run succeeded")
	}
	if _, _, err := w.Seal(ctx, "wrun_seq", 1); err == nil {
		t.Error("Seal on a seq run succeeded")
	}
	if _, err := w.Reserve(ctx, "wrun_none", d); !errors.Is(err, eventlog.ErrNoRun) {
		t.Errorf("Reserve on an unknown run = %v, want ErrNoRun", err)
	}
	if _, err := w.Reserve(ctx, run, nil); err == nil {
		t.Error("Reserve of no drafts succeeded")
	}
	if _, _, err := w.Seal(ctx, run, 0); err == nil {
		t.Error("Seal(0) succeeded")
	}
	r, err := w.Reserve(ctx, run, d)
	if err != nil {
		t.Fatal(err)
	}
	forged := r
	forged.Drafts = []eventlog.Draft{worldtest.Draft(eventlog.StepCreated, "b")}
	longer := r
	longer.Drafts = append(slices.Clone(r.Drafts), worldtest.Draft(eventlog.StepCreated, "c"))
	for name, bad := range map[string]worlds.Reservation{"other drafts": forged, "more drafts": longer} {
		if _, err := w.Commit(ctx, bad); err == nil || errors.Is(err, eventlog.ErrSealed) {
			t.Errorf("Commit with %s = %v, want a plain error", name, err)
		}
	}
	if _, err := w.Commit(ctx, r); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Commit(ctx, r); err == nil || errors.Is(err, eventlog.ErrSealed) {
		t.Errorf("second Commit of one reservation = %v, want a plain error", err)
	}
	if n := len(worldtest.ListAll(t, w, run)); n != 1 {
		t.Fatalf("log holds %d events, want 1", n)
	}
}

// TestSlotDamageIsLoud: a slot table that says a slot is filled without its
// file, a file holding another slot's event, or an unreadable table fails
// the read instead of returning a wrong log.
func TestSlotDamageIsLoud(t *testing.T) {
	tests := []struct {
		name   string
		damage func(t *testing.T, dir, run string, evs []eventlog.Event)
		want   error // a sentinel the error must match, or nil for any error
	}{
		{"missing file", func(t *testing.T, dir, run string, evs []eventlog.Event) {
			remove(t, eventPath(dir, run, evs[1].ID))
		}, eventlog.ErrGap},
		{"file of another slot", func(t *testing.T, dir, run string, evs []eventlog.Event) {
			b, err := os.ReadFile(eventPath(dir, run, evs[2].ID))
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(eventPath(dir, run, evs[1].ID), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}, eventlog.ErrGap},
		{"torn table", func(t *testing.T, dir, run string, _ []eventlog.Event) {
			if err := os.WriteFile(filepath.Join(dir, "runs", run+".slot"), []byte(`{"states":"cc`), 0o644); err != nil {
				t.Fatal(err)
			}
		}, nil},
		{"unknown state", func(t *testing.T, dir, run string, _ []eventlog.Event) {
			if err := os.WriteFile(filepath.Join(dir, "runs", run+".slot"), []byte(`{"states":"cxc"}`), 0o644); err != nil {
				t.Fatal(err)
			}
		}, nil},
		{"reserved slot nobody holds", func(t *testing.T, dir, run string, _ []eventlog.Event) {
			if err := os.WriteFile(filepath.Join(dir, "runs", run+".slot"), []byte(`{"states":"crc"}`), 0o644); err != nil {
				t.Fatal(err)
			}
		}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			run := "wrun_damaged"
			fresh := damaged(t, eventlog.SchemeSlot, run, tt.damage)
			_, lerr := fresh.List(t.Context(), run, eventlog.Cursor{}, 0)
			_, derr := fresh.Dump(t.Context(), run)
			_, aerr := fresh.Append(t.Context(), run, []eventlog.Draft{worldtest.Draft(eventlog.StepCreated, "c")})
			for name, err := range map[string]error{"List": lerr, "Dump": derr} {
				if err == nil || tt.want != nil && !errors.Is(err, tt.want) {
					t.Errorf("%s = %v, want an error (matching %v)", name, err, tt.want)
				}
			}
			if tt.want == nil && aerr == nil {
				t.Errorf("Append over a damaged table succeeded")
			}
		})
	}
}

func dump(t *testing.T, w *local.World, runID string) []eventlog.Event {
	t.Helper()
	evs, err := w.Dump(t.Context(), runID)
	if err != nil {
		t.Fatalf("Dump(%s): %v", runID, err)
	}
	return evs
}

// TestSlotStorm: writers on two handles (two processes) append with a
// jittered window outside the serializer, so later writes overtake earlier
// ones; some give up inside it and leave holes;
// readers on both handles page through the log and seal a hole that stays
// put (met again on their next pass), racing the commits of slow writers. Every page a reader got is a
// prefix of the final log, event for event; every accepted append is in the
// final log at its slots; every voided or abandoned one is not, its slots
// hold noops and its keys are free again; no marker outlives its event.
func TestSlotStorm(t *testing.T) {
	dir := t.TempDir()
	lat := &jitter{max: 6 * time.Millisecond}
	handles := []*local.World{open(t, dir, 1, lat), open(t, dir, 2, lat)}
	run := "wrun_storm"
	worldtest.NewRun(t, handles[0], eventlog.Run{ID: run, Scheme: eventlog.SchemeSlot})

	const writers, perWriter, readers = 6, 20, 2
	var (
		mu       sync.Mutex
		accepted []eventlog.Event
		dropped  []eventlog.Draft // voided by a seal, or abandoned in the window
		seen     = map[string]eventlog.Event{}
		sealedN  int
		voided   int // writes whose slot a reader sealed first
	)
	ctx, stop := context.WithCancel(t.Context())
	defer stop()
	var wg errgroup.Group
	for wr := range writers {
		wg.Go(func() error {
			w := handles[wr%2]
			for i := range perWriter {
				d := worldtest.Draft(eventlog.StepCompleted, fmt.Sprintf("w%d_%02d", wr, i))
				wctx, cancel := t.Context(), context.CancelFunc(func() {})
				if i%5 == 4 {
					wctx, cancel = context.WithTimeout(t.Context(), time.Millisecond)
				}
				var (
					evs []eventlog.Event
					err error
				)
				if i%3 == 2 {
					evs, err = fencedOnce(wctx, w, run, d)
				} else {
					evs, err = w.Append(wctx, run, []eventlog.Draft{d})
				}
				cancel()
				mu.Lock()
				switch {
				case err == nil:
					accepted = append(accepted, evs...)
				case errors.Is(err, eventlog.ErrSealed):
					voided++
					dropped = append(dropped, d)
				case errors.Is(err, context.DeadlineExceeded), errors.Is(err, eventlog.ErrFenced):
					dropped = append(dropped, d)
				default:
					mu.Unlock()
					return fmt.Errorf("writer %d append %d: %w", wr, i, err)
				}
				mu.Unlock()
			}
			return nil
		})
	}
	var rg errgroup.Group
	for rd := range readers {
		rg.Go(func() error {
			w := handles[rd%2]
			sctx := worlds.WithActor(ctx, fmt.Sprintf("reader-%d", rd))
			var hole int64 // the hole this reader's previous pass met
			for ctx.Err() == nil {
				after := eventlog.Cursor{}
				for {
					p, err := w.List(ctx, run, after, 7)
					var he *eventlog.HoleError
					switch {
					case errors.As(err, &he):
						if he.Slot != hole {
							hole = he.Slot
						} else {
							_, sealed, err := w.Seal(sctx, run, he.Slot)
							if ctx.Err() != nil {
								return nil
							}
							if err != nil {
								return fmt.Errorf("reader %d: Seal(%d): %w", rd, he.Slot, err)
							}
							if sealed {
								mu.Lock()
								sealedN++
								mu.Unlock()
							}
						}
					case ctx.Err() != nil:
						return nil
					case err != nil:
						return fmt.Errorf("reader %d: %w", rd, err)
					}
					if err != nil {
						break
					}
					mu.Lock()
					for _, e := range p.Events {
						if prev, ok := seen[e.ID]; ok && !sameEvent(prev, e) {
							mu.Unlock()
							return fmt.Errorf("reader %d: slot %d read as %s %s, earlier as %s %s", rd, e.Seq, e.Type, e.CorrelationID, prev.Type, prev.CorrelationID)
						}
						seen[e.ID] = e
					}
					mu.Unlock()
					if !p.More {
						break
					}
					after = p.Next
				}
				_ = clock.Sleep(ctx, 500*time.Microsecond)
			}
			return nil
		})
	}
	werr := wg.Wait()
	stop()
	if err := errors.Join(werr, rg.Wait()); err != nil {
		t.Fatal(err)
	}

	// Seal what the storm left reserved, then read the final log.
	w := handles[0]
	for s := int64(1); ; s++ {
		_, _, err := w.Seal(t.Context(), run, s)
		if err != nil {
			break // past the last slot handed out
		}
	}
	log := worldtest.ListAll(t, handles[1], run)
	bySlot := map[int64]eventlog.Event{}
	byCorr := map[string]eventlog.Event{}
	noops := 0
	for _, e := range log {
		bySlot[e.Seq] = e
		if e.Type == eventlog.Noop {
			noops++
			continue
		}
		if prev, dup := byCorr[e.CorrelationID]; dup {
			t.Fatalf("%s is in the log twice: slots %d and %d", e.CorrelationID, prev.Seq, e.Seq)
		}
		byCorr[e.CorrelationID] = e
	}
	for _, a := range accepted {
		if got := bySlot[a.Seq]; !sameEvent(got, a) {
			t.Fatalf("accepted %s %s at slot %d; the log holds %s %s there", a.Type, a.CorrelationID, a.Seq, got.Type, got.CorrelationID)
		}
	}
	for _, d := range dropped {
		if e, ok := byCorr[d.CorrelationID]; ok {
			t.Fatalf("dropped write %s is in the log at slot %d", d.CorrelationID, e.Seq)
		}
	}
	for id, e := range seen {
		if got, ok := bySlot[e.Seq]; !ok || got.ID != id || !sameEvent(got, e) {
			t.Fatalf("a reader saw %s %s at slot %d; the final log holds %s %s there", e.Type, e.CorrelationID, e.Seq, got.Type, got.CorrelationID)
		}
	}
	if len(accepted)+noops != len(log) {
		t.Fatalf("log holds %d events: %d accepted and %d noops", len(log), len(accepted), noops)
	}
	// Only committed events hold keys: every marker is one of theirs.
	if got, want := len(names(t, filepath.Join(dir, "keys", run))), len(log)-noops; got != want {
		t.Fatalf("keys/ holds %d markers for %d committed events", got, want)
	}
	if tmp := names(t, filepath.Join(dir, "tmp")); len(tmp) != 0 {
		t.Fatalf("tmp/ holds %v", tmp)
	}
	var tbl struct {
		States  string            `json:"states"`
		Holds   []json.RawMessage `json:"holds"`
		Release []string          `json:"release"`
	}
	filetest.ReadJSON(t, filepath.Join(dir, "runs", run+".slot"), &tbl)
	if len(tbl.Holds) != 0 || int64(len(tbl.States)) != int64(len(log)) {
		t.Fatalf("slot table after the storm: %d slots, holds %v; want %d settled slots", len(tbl.States), tbl.Holds, len(log))
	}
	// The freed keys really are free.
	for _, d := range dropped {
		worldtest.Append(t, w, run, d)
	}
	t.Logf("%d accepted, %d dropped (%d voided by a seal), %d noops (%d sealed by readers), %d distinct events seen by readers",
		len(accepted), len(dropped), voided, noops, sealedN, len(seen))
}

// fencedOnce loads the log (waiting out holes) and appends d fenced at its
// length once; an accepted append must land right after what it loaded.
func fencedOnce(ctx context.Context, w worlds.World, runID string, d eventlog.Draft) ([]eventlog.Event, error) {
	p, err := w.List(ctx, runID, eventlog.Cursor{}, 0)
	for errors.Is(err, eventlog.ErrHole) {
		if err := clock.Sleep(ctx, time.Millisecond); err != nil {
			return nil, err
		}
		p, err = w.List(ctx, runID, eventlog.Cursor{}, 0)
	}
	if err != nil {
		return nil, err
	}
	n := int64(len(p.Events))
	evs, err := w.AppendFenced(ctx, runID, n, []eventlog.Draft{d})
	if err == nil && evs[0].Seq != n+1 {
		return nil, fmt.Errorf("fenced append expected %d slots and landed at %d", n, evs[0].Seq)
	}
	return evs, err
}

// sameEvent compares what a reader can see of two events.
func sameEvent(a, b eventlog.Event) bool {
	return a.ID == b.ID && a.Seq == b.Seq && a.Type == b.Type && a.CorrelationID == b.CorrelationID &&
		string(a.Payload) == string(b.Payload) && a.MintedAt.Equal(b.MintedAt)
}

// jitter is a latency profile drawing every window uniformly from [0, max).
type jitter struct {
	mu  sync.Mutex
	rng *rand.Rand
	max time.Duration
}

func (j *jitter) Delay(eventlog.Type) time.Duration {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.rng == nil {
		j.rng = rand.New(rand.NewPCG(1, 2))
	}
	return time.Duration(j.rng.Int64N(int64(j.max)))
}
func (j *jitter) MaxFactDelay() time.Duration { return j.max }
func (j *jitter) String() string              { return "jitter" }
func (j *jitter) Windows() []worlds.Window {
	return []worlds.Window{{Type: "all", Max: j.max, Source: "test"}}
}
