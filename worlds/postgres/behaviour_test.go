package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/stormctl/stormctl/internal/eventlog"
	"github.com/stormctl/stormctl/worlds"
	"github.com/stormctl/stormctl/worlds/postgres"
	"github.com/stormctl/stormctl/worlds/worldtest"
)

// TestGapsInFlight: 8 writers append to one run with the seed's
// mint-to-commit windows while a reader re-reads the log. Under sequence the
// reader must, within a bounded number of rounds, meet a hole (a number drawn
// and not yet committed) and fail loudly with ErrGap; the hole fills later
// and the final log is dense. Under seq no read ever meets a hole. Nothing
// here makes a gap happen: it comes from the writers overlapping or not.
func TestGapsInFlight(t *testing.T) {
	cluster.URL(t)
	tests := []struct {
		scheme  eventlog.Scheme
		wantGap bool
		rounds  int
	}{
		{eventlog.SchemeSeq, false, 2},
		{eventlog.SchemeSequence, true, 6},
	}
	for _, tt := range tests {
		t.Run(string(tt.scheme), func(t *testing.T) {
			lat, err := worlds.ParseProfile("seed", 11)
			if err != nil {
				t.Fatal(err)
			}
			w := openWorld(t, postgres.Config{Latency: lat, PoolSize: 12})
			for round := 1; round <= tt.rounds; round++ {
				reads, gaps, first := gapRound(t, w, tt.scheme)
				switch {
				case !tt.wantGap && gaps > 0:
					t.Fatalf("round %d: %d of %d reads met a gap under %s, first %v", round, gaps, reads, tt.scheme, first)
				case tt.wantGap && gaps > 0:
					t.Logf("round %d: %d of %d reads met a gap, first: %v", round, gaps, reads, first)
					return
				}
				t.Logf("round %d: %d reads, no gap", round, reads)
			}
			if tt.wantGap {
				t.Fatalf("no read met a gap under %s in %d rounds of 8 overlapping writers: the non-transactional sequence should have shown one", tt.scheme, tt.rounds)
			}
		})
	}
}

// gapRound runs one round of TestGapsInFlight on a new run: it returns how
// many reads were made, how many failed with ErrGap and the first such error.
func gapRound(t *testing.T, w *postgres.World, s eventlog.Scheme) (reads, gaps int, first *eventlog.GapError) {
	t.Helper()
	const writers, perWriter = 8, 6
	run := worldtest.NewRun(t, w, eventlog.Run{Scheme: s})
	ctx := t.Context()
	var g errgroup.Group
	for i := range writers {
		g.Go(func() error {
			for j := range perWriter {
				if _, err := w.Append(ctx, run, []eventlog.Draft{worldtest.Draft(eventlog.StepCreated, fmt.Sprintf("w%d_%d", i, j))}); err != nil {
					return err
				}
			}
			return nil
		})
	}
	done := make(chan error, 1)
	go func() { done <- g.Wait() }()
	for finished := false; !finished; {
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
			finished = true
		default:
		}
		_, err := w.List(ctx, run, eventlog.Cursor{}, 0)
		reads++
		var ge *eventlog.GapError
		switch {
		case errors.As(err, &ge):
			gaps++
			if first == nil {
				first = ge
			}
		case err != nil:
			t.Fatalf("read %d: %v", reads, err)
		}
		time.Sleep(200 * time.Microsecond)
	}
	p, err := w.List(ctx, run, eventlog.Cursor{}, 0)
	if err != nil {
		t.Fatalf("the final log: %v", err)
	}
	if len(p.Events) != writers*perWriter {
		t.Fatalf("the final log holds %d events, want %d", len(p.Events), writers*perWriter)
	}
	if first != nil && first.Want > int64(len(p.Events)) {
		t.Fatalf("the gap's missing seq %d never committed", first.Want)
	}
	return reads, gaps, first
}

// TestFenceUnderContention: 8 writers that all loaded the same 1-event log
// append fenced at once, each write with a 100 ms window. Under seq the fence
// is a condition on the counter row's update, so exactly one wins and the
// others are rejected with the log's new length; under slot it is a
// condition on the reservation counter, taken before the window, so the same
// holds. Under ulid (count, then
// write) and sequence (a count no lock protects) the check cannot see writes
// in flight, so several are admitted: the legacy guard's TOCTOU.
func TestFenceUnderContention(t *testing.T) {
	cluster.URL(t)
	tests := []struct {
		scheme     eventlog.Scheme
		exactlyOne bool
	}{
		{eventlog.SchemeSeq, true},
		{eventlog.SchemeSlot, true},
		{eventlog.SchemeULID, false},
		{eventlog.SchemeSequence, false},
	}
	const writers = 8
	for _, tt := range tests {
		t.Run(string(tt.scheme), func(t *testing.T) {
			w := openWorld(t, postgres.Config{Latency: worldtest.Latency(t, "fixed:100ms"), PoolSize: writers + 2})
			for round := 1; round <= 3; round++ {
				run := worldtest.NewRun(t, w, eventlog.Run{Scheme: tt.scheme})
				if _, err := w.Append(t.Context(), run, []eventlog.Draft{worldtest.Draft(eventlog.RunCreated, "")}); err != nil {
					t.Fatal(err)
				}
				var wg sync.WaitGroup
				start := make(chan struct{})
				errs := make([]error, writers)
				for i := range writers {
					wg.Go(func() {
						<-start
						_, errs[i] = w.AppendFenced(t.Context(), run, 1, []eventlog.Draft{worldtest.Draft(eventlog.StepCreated, fmt.Sprint("s", i))})
					})
				}
				close(start)
				wg.Wait()
				wins := 0
				for _, err := range errs {
					var fe *eventlog.FencedError
					switch {
					case err == nil:
						wins++
					case !errors.As(err, &fe):
						t.Fatalf("AppendFenced = %v, want success or a FencedError", err)
					case fe.Expected != 1 || fe.Actual < 2:
						t.Fatalf("FencedError{Expected %d, Actual %d}, want {1, >= 2}", fe.Expected, fe.Actual)
					}
				}
				p, err := w.List(t.Context(), run, eventlog.Cursor{}, 0)
				if err != nil || len(p.Events) != 1+wins {
					t.Fatalf("log holds %d events (%v) after %d wins", len(p.Events), err, wins)
				}
				switch {
				case tt.exactlyOne && wins != 1:
					t.Fatalf("round %d: %d of %d fenced writers won, want exactly 1", round, wins, writers)
				case tt.exactlyOne:
					continue
				case wins >= 2:
					t.Logf("round %d: the guard admitted %d of %d writers that loaded the same log", round, wins, writers)
					return
				}
			}
			if !tt.exactlyOne {
				t.Fatalf("the %s guard never admitted two writers in 3 rounds", tt.scheme)
			}
		})
	}
}

// TestWindowHoldsNoLock: under seq the window is spent before the counter
// update, under slot between the reservation's transaction and the commit's,
// so writers of one run are in their windows at once. Every writer is held
// in its window until all of them have entered theirs: holding the run's row
// lock across a window would keep the second writer out while the first is
// held, and the test would fail as hung instead of releasing them.
func TestWindowHoldsNoLock(t *testing.T) {
	cluster.URL(t)
	const writers = 8
	for _, s := range []eventlog.Scheme{eventlog.SchemeSeq, eventlog.SchemeSlot} {
		t.Run(string(s), func(t *testing.T) {
			hold := worldtest.NewHolder()
			w := openWorld(t, postgres.Config{Latency: hold, PoolSize: writers})
			run := worldtest.NewRun(t, w, eventlog.Run{Scheme: s})
			ctx, cancel := context.WithCancel(t.Context())
			var g errgroup.Group
			defer func() { cancel(); _ = g.Wait() }() // a failed test leaves writers held
			hold.Hold(writers)
			for i := range writers {
				g.Go(func() error {
					_, err := w.Append(ctx, run, []eventlog.Draft{worldtest.Draft(eventlog.StepCompleted, fmt.Sprint("c", i))})
					return err
				})
			}
			held := make([]*worldtest.Held, writers)
			for i := range held {
				held[i] = hold.Next(t, fmt.Sprintf("writer %d of %d in its window while %d are held in theirs: the windows did not overlap", i+1, writers, i))
			}
			for _, h := range held {
				h.Release()
			}
			if err := g.Wait(); err != nil {
				t.Fatal(err)
			}
			if evs := worldtest.ListAll(t, w, run); len(evs) != writers {
				t.Fatalf("log holds %d events after %d writers, want %d", len(evs), writers, writers)
			}
		})
	}
}

// TestCancelledWindow: a write whose context ends during its window returns
// the context's error and commits nothing. Under seq and ulid the next write
// goes on as if it never happened. Under sequence the number it drew is gone
// for good: the next write lands past a hole every read refuses (the
// rollback side of gotcha 1). Under slot the write leaves its slot reserved
// and its key claimed: the same draft conflicts, another lands past a hole
// every read refuses, and a seal fills the hole and frees the key. The write
// is held in its window and cancelled there, so the cancel cannot land
// before the window (nothing drawn or reserved yet) or after it.
func TestCancelledWindow(t *testing.T) {
	cluster.URL(t)
	for _, s := range eventlog.Schemes() {
		t.Run(string(s), func(t *testing.T) {
			hold := worldtest.NewHolder()
			w := openWorld(t, postgres.Config{Latency: hold})
			run := worldtest.NewRun(t, w, eventlog.Run{Scheme: s})
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			hold.Hold(1)
			done := make(chan error, 1)
			go func() {
				_, err := w.Append(ctx, run, []eventlog.Draft{worldtest.Draft(eventlog.StepCreated, "a")})
				done <- err
			}()
			held := hold.Next(t, "the write in its window")
			cancel()
			if err := held.Ended(t); !errors.Is(err, context.Canceled) {
				t.Fatalf("the held window ended with %v, want context.Canceled", err)
			}
			if err := <-done; !errors.Is(err, context.Canceled) {
				t.Fatalf("Append = %v, want context.Canceled", err)
			}
			if dump, err := w.Dump(t.Context(), run); err != nil || len(dump) != 0 {
				t.Fatalf("after a cancelled write the run holds %d events (%v)", len(dump), err)
			}
			if s == eventlog.SchemeSlot {
				cancelledSlot(t, w, run)
				return
			}
			evs, err := w.Append(t.Context(), run, []eventlog.Draft{worldtest.Draft(eventlog.StepCreated, "a")})
			if err != nil {
				t.Fatalf("the same draft after the cancelled write: %v", err)
			}
			_, err = w.List(t.Context(), run, eventlog.Cursor{}, 0)
			if s != eventlog.SchemeSequence {
				if err != nil || evs[0].Seq != int64(btoi(s.Positioned())) {
					t.Fatalf("after the cancelled write: seq %d, List: %v", evs[0].Seq, err)
				}
				return
			}
			var ge *eventlog.GapError
			if !errors.As(err, &ge) || ge.Want != 1 || ge.Got != 2 || evs[0].Seq != 2 {
				t.Fatalf("sequence after a cancelled write: seq %d, List = %v; want seq 2 and a gap at 1", evs[0].Seq, err)
			}
		})
	}
}

// cancelledSlot is TestCancelledWindow's slot half: slot 1 is reserved by a
// writer that gave up in its window.
func cancelledSlot(t *testing.T, w *postgres.World, run string) {
	ctx := t.Context()
	if _, err := w.Append(ctx, run, []eventlog.Draft{worldtest.Draft(eventlog.StepCreated, "a")}); !errors.Is(err, eventlog.ErrConflict) {
		t.Fatalf("the same draft while its cancelled write holds slot 1 = %v, want ErrConflict", err)
	}
	evs, err := w.Append(ctx, run, []eventlog.Draft{worldtest.Draft(eventlog.StepCreated, "b")})
	if err != nil || evs[0].Seq != 2 {
		t.Fatalf("another draft = %+v, %v; want slot 2", evs, err)
	}
	var he *eventlog.HoleError
	if _, err := w.List(ctx, run, eventlog.Cursor{}, 0); !errors.As(err, &he) || he.Slot != 1 || he.Above != 2 {
		t.Fatalf("List = %v, want a hole at slot 1 below 2", err)
	}
	if noop, sealed, err := w.Seal(ctx, run, 1); err != nil || !sealed || noop.Type != eventlog.Noop {
		t.Fatalf("Seal(1) = %+v, %v, %v", noop, sealed, err)
	}
	evs, err = w.Append(ctx, run, []eventlog.Draft{worldtest.Draft(eventlog.StepCreated, "a")})
	if err != nil || evs[0].Seq != 3 {
		t.Fatalf("the draft after the seal freed its key = %+v, %v; want slot 3", evs, err)
	}
	p, err := w.List(ctx, run, eventlog.Cursor{}, 0)
	if err != nil || len(p.Events) != 3 || p.Events[0].Type != eventlog.Noop {
		t.Fatalf("List after the seal = %d events, %v; want noop, b, a", len(p.Events), err)
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
