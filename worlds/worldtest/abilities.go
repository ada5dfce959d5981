package worldtest

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stormctl/stormctl/internal/eventlog"
	"github.com/stormctl/stormctl/worlds"
)

// This file holds the checks of the optional abilities, each skipped,
// saying why, on a world without the ability.

// cancelProfile is a latency profile that cancels the write drawing its
// next window: arm hands it the write's cancel function, and the write's
// Delay calls it and draws an hour. The write is thus cancelled in its own
// mint-to-commit window (or, in a world that draws the window before it
// starts writing, just before), with no timing involved.
type cancelProfile struct {
	cancel atomic.Pointer[context.CancelFunc]
	drawn  atomic.Bool
}

func (p *cancelProfile) arm(cancel context.CancelFunc) { p.cancel.Store(&cancel) }

// Delay implements worlds.Profile.
func (p *cancelProfile) Delay(eventlog.Type) time.Duration {
	p.drawn.Store(true)
	if c := p.cancel.Swap(nil); c != nil {
		(*c)()
		return time.Hour
	}
	return 0
}

// MaxFactDelay implements worlds.Profile.
func (p *cancelProfile) MaxFactDelay() time.Duration { return time.Hour }

// String implements worlds.Profile.
func (p *cancelProfile) String() string { return "worldtest-cancel" }

// Windows implements worlds.Profile.
func (p *cancelProfile) Windows() []worlds.Window {
	return []worlds.Window{{Type: "all", Max: time.Hour, Source: "assumption: worldtest cancels the write in its window"}}
}

// testCancelledWindow: a write whose context ends in its mint-to-commit
// window returns the context's error and leaves nothing a reader (or Dump)
// sees; its key is free again, except under slot, where the write leaves
// its slot reserved and its key claimed until a seal (slot_hole and
// slot_seal check that through the Slotter). Skipped for a world that
// draws no window from Options.Latency.
func testCancelledWindow(t testing.TB, s *suite) {
	lat := &cancelProfile{}
	opts := s.options(t)
	opts.Latency = lat
	f := &fixture{t: t, s: s, w: s.openWith(t, opts), ctx: t.Context()}
	f.run = f.createRun(eventlog.FenceOnLog)
	d := []eventlog.Draft{Draft(eventlog.StepCreated, "cancelled")}
	type write struct {
		name  string
		write func(ctx context.Context) error
	}
	writes := []write{{"Append", func(ctx context.Context) error { _, err := f.w.Append(ctx, f.run, d); return err }}}
	if !s.slots && s.limits.Fence == "" { // a slot write's reservation moves the fence past 0
		writes = append(writes, write{"AppendFenced", func(ctx context.Context) error { _, err := f.w.AppendFenced(ctx, f.run, 0, d); return err }})
	}
	for _, w := range writes {
		ctx, cancel := context.WithCancel(f.ctx)
		lat.arm(cancel)
		err := w.write(ctx)
		cancel()
		if !lat.drawn.Load() {
			if err != nil {
				t.Fatalf("%s: %v", w.name, err)
			}
			t.Skipf("%T draws no mint-to-commit window from worlds.Options.Latency", f.w)
		}
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("%s cancelled in its window = %v, want an error matching context.Canceled", w.name, err)
		}
	}
	f.checkSame("log after the cancelled writes", f.all(), nil)
	if _, ok := worlds.Inner(f.w).(worlds.Dumper); ok {
		f.checkSame("Dump after the cancelled writes", f.dump(), nil)
	}
	if s.slots {
		return
	}
	evs := f.appendMaybeFenced(0, d...)
	if !s.gapsInFlight {
		f.checkSame("log after the draft went in", f.all(), evs)
	}
}

// testDump: a worlds.Dumper returns the same log as List (on a log
// without holes).
func testDump(t testing.TB, s *suite) {
	f := s.fixture(t, eventlog.FenceOnLog)
	ability[worlds.Dumper](t, f.w)
	f.append(mix("a", 5)...)
	f.appendFenced(5, mix("b", 3)...)
	f.append(mix("c", 2)...)
	f.checkSame("Dump", f.dump(), f.all())
}

// testCommitTimes: a worlds.CommitTimes has one commit time per event, in
// scheme order, naming its event, with a source, between the event's mint
// and the return of its append (unless the world's commit clock is coarser
// than those, Limits.CommitClock), and never before the commit time of an
// append that returned earlier.
func testCommitTimes(t testing.TB, s *suite) {
	f := s.fixture(t, eventlog.FenceOnLog)
	ct := ability[worlds.CommitTimes](t, f.w)
	bounded := s.limits.CommitClock == ""
	if !bounded {
		t.Logf("commit times not checked against mint and append times: %s", s.limits.CommitClock)
	}
	var written []eventlog.Event
	var ds []eventlog.Draft
	for i := range 4 {
		ds = append(ds, Draft(eventlog.StepCompleted, fmt.Sprint("c", i)))
	}
	for _, d := range f.withCreators(nil, ds...) {
		written = append(written, f.append(d)...)
	}
	written = append(written, f.appendMaybeFenced(int64(len(written)), Draft(eventlog.StepCreated, "d"), Draft(eventlog.StepCreated, "e"))...)
	cts, err := ct.CommitTimes(f.ctx, f.run)
	if err != nil {
		t.Fatalf("CommitTimes: %v", err)
	}
	if len(cts) != len(written) {
		t.Fatalf("%d commit times for %d events", len(cts), len(written))
	}
	for i, c := range cts {
		e := written[i]
		switch {
		case c.EventID != e.ID || c.Seq != e.Seq:
			t.Fatalf("commit time %d names %s@%d, want event %s@%d", i, c.EventID, c.Seq, e.ID, e.Seq)
		case c.Source == "":
			t.Fatalf("commit time %d (%s) has no source", i, e.ID)
		case bounded && (c.At.Before(e.MintedAt) || c.At.After(e.CommittedAt)):
			t.Fatalf("event %s committed at %v, outside [minted %v, append returned %v]", e.ID, c.At, e.MintedAt, e.CommittedAt)
		case i > 0 && c.At.Before(cts[i-1].At):
			t.Fatalf("event %s committed at %v, before %s at %v whose append returned first", e.ID, c.At, cts[i-1].EventID, cts[i-1].At)
		}
	}
}

// testReset: a worlds.Resetter's Reset drops every run, and the world
// stays usable: a run of a dropped id starts afresh, its keys free.
func testReset(t testing.TB, s *suite) {
	f := s.fixture(t, eventlog.FenceOnLog)
	r := ability[worlds.Resetter](t, f.w)
	other := f.createRun(eventlog.FenceOnLog)
	d := Draft(eventlog.StepCompleted, "a")
	f.append(d, Draft(eventlog.StepCreated, "b"))
	f.all() // a world that caches what it read must forget it too
	if err := r.Reset(f.ctx); err != nil {
		t.Fatalf("Reset: %v", err)
	}
	for _, run := range []string{f.run, other} {
		if _, err := f.w.List(f.ctx, run, eventlog.Cursor{}, 10); !errors.Is(err, eventlog.ErrNoRun) {
			t.Fatalf("List of run %s after Reset = %v; want an error matching %v", run, err, eventlog.ErrNoRun)
		}
	}
	NewRun(t, f.w, eventlog.Run{ID: f.run, Scheme: s.scheme})
	evs := f.append(d)
	f.checkSame("log of a run created again after Reset", f.all(), evs)
}
