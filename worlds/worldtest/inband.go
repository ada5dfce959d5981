package worldtest

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stormctl/stormctl/internal/eventlog"
)

// The in-band fence (eventlog.FenceInBand, upstream's spec 9) on slot runs.
// The cases follow upstream's own shared suite,
// packages/world/src/test-support/in-band-fence-conformance.ts (read as
// docs/conditions.md records), on this module's World: a fenced append is
// an in-band write, an unfenced one out of band, and every page of a list
// carries the run's Snapshot. Upstream's "refuses an in-band write without
// an expected count" has no counterpart: AppendFenced always carries one.

// inBandFixture is a fixture on a new in-band slot run whose run_created
// took the count's first position.
func (s *suite) inBandFixture(t testing.TB) *fixture {
	t.Helper()
	s.skipFence(t, "in-band fence")
	f := s.fixture(t, eventlog.FenceInBand)
	f.appendFenced(0, Draft(eventlog.RunCreated, ""))
	return f
}

// snapshot returns the snapshot of the run's first page, failing when the
// page carries none.
func (f *fixture) snapshot() eventlog.Snapshot {
	f.t.Helper()
	p := f.list(eventlog.Cursor{}, 1000)
	if p.Snapshot == nil {
		f.t.Fatalf("List of an in-band run: the page carries no snapshot")
	}
	return *p.Snapshot
}

// wantSnapshot fails unless the run's snapshot is want.
func (f *fixture) wantSnapshot(what string, want eventlog.Snapshot) {
	f.t.Helper()
	if got := f.snapshot(); got != want {
		f.t.Fatalf("%s: snapshot %+v, want %+v", what, got, want)
	}
}

// wantSuperseded fails unless err is an in-band refusal at want's counts.
func wantSuperseded(t testing.TB, err error, expected, actual int64) {
	t.Helper()
	var fe *eventlog.FencedError
	if !errors.As(err, &fe) || !fe.InBand || fe.Expected != expected || fe.Actual != actual {
		t.Fatalf("in-band write at %d = %v; want an in-band *eventlog.FencedError{Expected %d, Actual %d}", expected, err, expected, actual)
	}
}

// testInBand checks the in-band fence, case by case.
func testInBand(t testing.TB, s *suite) {
	Run(t, "run_created_holds_one_position", func(t testing.TB) {
		f := s.inBandFixture(t)
		f.wantSnapshot("after run_created", eventlog.Snapshot{Seq: 1, SeqInBand: 1})
	})
	Run(t, "accepts_the_current_count_and_advances_it", func(t testing.TB) {
		f := s.inBandFixture(t)
		f.appendFenced(1, Draft(eventlog.StepCreated, "a"))
		f.appendFenced(2, Draft(eventlog.WaitCreated, "b"), Draft(eventlog.HookCreated, "c"))
		f.wantSnapshot("after three in-band writes", eventlog.Snapshot{Seq: 4, SeqInBand: 4})
	})
	Run(t, "refuses_a_stale_write_and_allocates_nothing", func(t testing.TB) {
		f := s.inBandFixture(t)
		f.appendFenced(1, Draft(eventlog.StepCreated, "a"))
		before := f.all()
		_, err := f.w.AppendFenced(f.ctx, f.run, 1, []eventlog.Draft{Draft(eventlog.StepCreated, "b")})
		wantSuperseded(t, err, 1, 2)
		f.checkSame("log after a superseded write", f.all(), before)
		f.wantSnapshot("after a superseded write", eventlog.Snapshot{Seq: 2, SeqInBand: 2})
		evs := f.appendFenced(2, Draft(eventlog.StepCreated, "b"))
		if evs[0].Seq != 3 {
			t.Fatalf("the retry at the current count took slot %d, want the very next, 3", evs[0].Seq)
		}
	})
	Run(t, "out_of_band_writes_move_seq_only", func(t testing.TB) {
		f := s.inBandFixture(t)
		f.append(Draft(eventlog.StepStarted, "a"), Draft(eventlog.HookReceived, "h"))
		f.wantSnapshot("after two out-of-band writes", eventlog.Snapshot{Seq: 3, SeqInBand: 1})
		f.appendFenced(1, Draft(eventlog.StepCreated, "b")) // the old count still holds
		f.wantSnapshot("after an in-band write", eventlog.Snapshot{Seq: 4, SeqInBand: 2})
	})
	Run(t, "step_and_wait_events_are_plain_appends", func(t testing.TB) {
		f := s.inBandFixture(t)
		f.appendFenced(1, Draft(eventlog.StepCreated, "a"))
		f.appendFenced(2, Draft(eventlog.StepCreated, "a")) // no key checked
		f.append(Draft(eventlog.StepCompleted, "a"), Draft(eventlog.StepCompleted, "a"))
		f.appendFenced(3, Draft(eventlog.WaitCreated, "w"), Draft(eventlog.WaitCreated, "w"))
		f.wantSnapshot("after duplicates", eventlog.Snapshot{Seq: 7, SeqInBand: 5})
		// A hook's keys are still the world's to check.
		hook := Draft(eventlog.HookCreated, "h")
		hook.Token = "tok"
		f.appendFenced(5, hook)
		again := Draft(eventlog.HookCreated, "h2")
		again.Token = "tok"
		if _, err := f.w.AppendFenced(f.ctx, f.run, 6, []eventlog.Draft{again}); !errors.Is(err, eventlog.ErrConflict) {
			t.Fatalf("a second hook_created of token tok = %v; want a conflict", err)
		}
	})
	Run(t, "one_of_concurrent_writers_at_one_count_wins", func(t testing.TB) {
		f := s.inBandFixture(t)
		const writers = 8
		errs := make([]error, writers)
		var wg sync.WaitGroup
		for i := range writers {
			wg.Go(func() {
				_, errs[i] = f.w.AppendFenced(f.ctx, f.run, 1, []eventlog.Draft{Draft(eventlog.StepCreated, "racer")})
			})
		}
		wg.Wait()
		won := 0
		for _, err := range errs {
			if err == nil {
				won++
				continue
			}
			wantSuperseded(t, err, 1, 2)
		}
		if won != 1 {
			t.Fatalf("%d of %d writers at one count won; want exactly 1", won, writers)
		}
		f.wantSnapshot("after the race", eventlog.Snapshot{Seq: 2, SeqInBand: 2})
	})
	Run(t, "a_write_in_its_window_is_not_in_the_snapshot", func(t testing.TB) {
		testInBandInFlight(t, s)
	})
	Run(t, "other_bases_carry_no_snapshot", func(t testing.TB) {
		s.skipFence(t, "in-band fence")
		f := s.fixture(t, eventlog.FenceOnLog)
		f.append(Draft(eventlog.RunCreated, ""))
		if p := f.list(eventlog.Cursor{}, 1000); p.Snapshot != nil {
			t.Fatalf("a run fenced on the log carries a snapshot %+v; want none", *p.Snapshot)
		}
	})
}

// testInBandInFlight: an in-band write still in its window holds its slot
// and the fence's count, but a list's snapshot leaves it out (upstream's
// worlds move the count when the event lands), so a writer that adopts the
// snapshot, having read a page without the write, is refused. Once the
// write's slot fills, here by a seal after its writer gave up, it counts.
func testInBandInFlight(t testing.TB, s *suite) {
	s.skipFence(t, "in-band fence")
	lat := &cancelProfile{}
	opts := s.options(t)
	opts.Latency = lat
	f := &fixture{t: t, s: s, w: s.openWith(t, opts), ctx: t.Context()}
	f.run = f.createRun(eventlog.FenceInBand)
	f.appendFenced(0, Draft(eventlog.RunCreated, ""))
	ctx, cancel := context.WithCancel(f.ctx)
	defer cancel()
	// The write's window is cancelled only when the test says so: arm
	// with a cancel that does nothing, then cancel ctx ourselves.
	lat.arm(func() {})
	done := make(chan error, 1)
	go func() {
		_, err := f.w.AppendFenced(ctx, f.run, 1, []eventlog.Draft{Draft(eventlog.StepCreated, "inflight")})
		done <- err
	}()
	deadline := time.Now().Add(20 * time.Second)
	for f.snapshot().Seq < 2 {
		if time.Now().After(deadline) {
			t.Fatalf("the in-band write never reserved its slot: snapshot %+v", f.snapshot())
		}
		time.Sleep(5 * time.Millisecond)
	}
	if !lat.drawn.Load() {
		t.Skipf("%T draws no mint-to-commit window from worlds.Options.Latency", f.w)
	}
	f.wantSnapshot("with an in-band write in its window", eventlog.Snapshot{Seq: 2, SeqInBand: 1})
	_, err := f.w.AppendFenced(f.ctx, f.run, 1, []eventlog.Draft{Draft(eventlog.StepCreated, "late")})
	wantSuperseded(t, err, 1, 2)
	cancel()
	if err := <-done; err == nil {
		t.Fatalf("the write whose window was cancelled succeeded")
	}
	// An out-of-band write above the abandoned slot makes it a hole; a
	// seal fills it, and the sealed in-band slot counts.
	f.append(Draft(eventlog.StepStarted, "above"))
	if _, sealed, err := f.slotter().Seal(f.ctx, f.run, 2); err != nil || !sealed {
		t.Fatalf("Seal(2) = sealed %v, %v; want sealed", sealed, err)
	}
	f.wantSnapshot("after the seal", eventlog.Snapshot{Seq: 3, SeqInBand: 2})
}
