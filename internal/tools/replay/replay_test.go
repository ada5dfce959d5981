package replay

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stormctl/stormctl/internal/engine"
	"github.com/stormctl/stormctl/internal/engines/builtinengines"
	"github.com/stormctl/stormctl/internal/eventlog"
	"github.com/stormctl/stormctl/internal/history"
)

const synthRun = "wrun_synth"

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// oneStep calls step "a" and returns its result.
func oneStep(c *engine.Ctx) (any, error) { return c.Await(c.Step("a", 1)) }

// policy is the synthetic runs' condition: main's ids, ordered wake.
var policy = engine.Knobs{Scheme: eventlog.SchemeULID, Policy: func() engine.Policy { p := engine.DefaultPolicy(); p.Wake = engine.WakeOrdered; return p }()}

// synth builds a recorded run: a starter writes log's events, then each
// invocation reads them all in one page and writes what it wrote (drafts
// for the final log, in order, each one append).
type synth struct {
	in   Input
	page map[int][]eventlog.Event
	at   time.Time
}

func newSynth(prog engine.Program, log ...eventlog.Draft) *synth {
	s := &synth{in: Input{RunID: synthRun, Program: prog, Knobs: policy}, page: map[int][]eventlog.Event{}, at: t0}
	s.in.Reads = func(i int) ([]eventlog.Event, bool) { evs, ok := s.page[i]; return evs, ok }
	for _, d := range append([]eventlog.Draft{{Type: eventlog.RunCreated, Payload: json.RawMessage(`null`)}}, log...) {
		s.commit("starter", d)
	}
	return s
}

// commit appends d as actor's, committed at once.
func (s *synth) commit(actor string, d eventlog.Draft) {
	s.at = s.at.Add(time.Millisecond)
	e := d.Event(synthRun, fmt.Sprintf("evnt_%03d", len(s.in.Final)+1), s.at)
	e.CommittedAt = s.at
	s.in.Final = append(s.in.Final, e)
	s.in.Ops = append(s.in.Ops, history.Op{Kind: history.OpAppend, Actor: actor, RunID: synthRun, Start: s.at, End: s.at,
		Wrote: []history.OpEvent{{Type: d.Type, CorrelationID: d.CorrelationID, ID: e.ID, MintedAt: s.at, CommittedAt: s.at}}})
}

// invoke records actor reading the whole log in one page, then writing
// wrote.
func (s *synth) invoke(actor string, wrote ...eventlog.Draft) *synth {
	s.at = s.at.Add(time.Millisecond)
	page := append([]eventlog.Event(nil), s.in.Final...)
	s.page[len(s.in.Ops)] = page
	s.in.Ops = append(s.in.Ops, history.Op{Kind: history.OpList, Actor: actor, RunID: synthRun, Start: s.at, End: s.at,
		Limit: 100, Read: history.Summarize(eventlog.Page{Events: page})})
	for _, d := range wrote {
		s.commit(actor, d)
	}
	return s
}

// derive is what a replay of log derives first: the invocation's writes.
func derive(t *testing.T, prog engine.Program, log []eventlog.Event) engine.Outcome {
	t.Helper()
	return engine.Replay(prog, synthRun, log, engine.ReplayMode{IDs: policy.IDs, Wake: policy.Wake}, t0)
}

// TestRun: synthetic runs whose invocations do, or do not, do again what
// they recorded, replayed a few times each: the verdicts per invocation
// and for the recorded divergence, the engine's own nondeterminism named.
func TestRun(t *testing.T) {
	t.Parallel()
	start := newSynth(oneStep)
	first := derive(t, oneStep, start.in.Final).Decisions[0] // step a's step_created
	wrongName := eventlog.Draft{Type: eventlog.StepCreated, CorrelationID: first.CorrelationID, Payload: json.RawMessage(`{"name":"b","args":1}`)}
	logged := newSynth(oneStep, wrongName)
	div := derive(t, oneStep, logged.in.Final).Divergence
	if div == nil {
		t.Fatal("a step_created of another name does not diverge")
	}
	// flip derives step "a" and step "b" on alternate replays: an engine
	// that is nondeterministic over the same log.
	var n atomic.Int64
	flip := func(c *engine.Ctx) (any, error) {
		name := "a"
		if n.Add(1)%2 == 0 {
			name = "b"
		}
		return c.Await(c.Step(name, 1))
	}
	for _, tc := range []struct {
		name    string
		run     *synth
		repeat  int
		verdict string   // for the recorded divergence; "" none
		each    []string // each invocation's verdict
		varied  bool
		summary string
	}{
		{"writes what it derives", newSynth(oneStep).invoke("inv-1", first), 3, "", []string{Every}, false, "1 of 1 invocations"},
		{"the recorded divergence reproduces", newSynth(oneStep, wrongName).
			invoke("inv-1").invoke("inv-2", engine.FailureDraft(engine.CodeCorrupted, div.Error())), 4,
			Every, []string{Every, Every}, false, "reproduced 4 of 4 times"},
		{"another divergence than the recorded one", newSynth(oneStep, wrongName).
			invoke("inv-1", engine.FailureDraft(engine.CodeCorrupted, "replay divergence: something else")), 2,
			Never, []string{Never}, false, "never reproduced in 2 replays: inv-1's replay diverged at event 1"},
		{"a write the replay does not derive", newSynth(oneStep).invoke("inv-1", wrongName), 2, "", []string{Never}, false, "0 of 1 invocations"},
		{"a read the replay does not make", newSynth(oneStep).invoke("inv-1").invoke("inv-1", first), 2, "", []string{Never}, false, "0 of 1 invocations"},
		{"the record ends before the replay writes", newSynth(oneStep).invoke("inv-1"), 2, "", []string{Cut}, false, "0 of 1 invocations"},
		{"the engine varies over the same reads", newSynth(flip).invoke("inv-1", first), 4, "", []string{Sometimes}, true,
			"the nondeterminism is inside the engine, not in the log: inv-1 2x derived"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rep, err := Run(t.Context(), tc.run.in, Options{Repeat: tc.repeat})
			if err != nil {
				t.Fatal(err)
			}
			if rep.Verdict != tc.verdict {
				t.Errorf("verdict %q, want %q", rep.Verdict, tc.verdict)
			}
			var each []string
			for _, inv := range rep.Invocations {
				each = append(each, inv.Verdict)
				if !inv.Exact {
					t.Errorf("%s's pages are not exact", inv.Actor)
				}
			}
			if strings.Join(each, ",") != strings.Join(tc.each, ",") {
				t.Errorf("invocation verdicts %v, want %v", each, tc.each)
			}
			if (len(rep.Varied) > 0) != tc.varied {
				t.Errorf("varied %v, want %v", rep.Varied, tc.varied)
			}
			if !strings.Contains(rep.Summary, tc.summary) {
				t.Errorf("summary %q lacks %q", rep.Summary, tc.summary)
			}
		})
	}
}

// TestUnreplayable: a run a replay cannot serve is refused with its
// reason, before anything runs.
func TestUnreplayable(t *testing.T) {
	t.Parallel()
	ok := func() Input { return newSynth(oneStep).invoke("inv-1").in }
	for _, tc := range []struct {
		name   string
		edit   func(*Input)
		reason string
	}{
		{"devkit engine", func(in *Input) { in.Engine = builtinengines.Engines().Published() }, "ran on the devkit engine"},
		{"no program", func(in *Input) { in.Program = nil }, "no program"},
		{"no history", func(in *Input) { in.Ops = nil }, "records no operation"},
		{"no invocation read", func(in *Input) { in.Ops = in.Ops[:1] }, "no invocation of it read the log"},
		{"sealed holes", func(in *Input) {
			in.Knobs = engine.Knobs{Scheme: eventlog.SchemeSlot, Policy: engine.Policy{Seal: engine.SealNoop}}
			in.Ops[1].Err = "hole"
		}, "waited on holes"},
		{"parallel writes", func(in *Input) {
			in.Knobs = engine.Knobs{Scheme: eventlog.SchemeULID, Policy: engine.Policy{Fence: engine.FenceNone, Writes: engine.WritesParallel}}
		}, "issued their appends concurrently"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			in := ok()
			tc.edit(&in)
			_, err := Run(t.Context(), in, Options{})
			var ue *UnreplayableError
			if err == nil || !errorsAs(err, &ue) || !strings.Contains(ue.Reason, tc.reason) {
				t.Errorf("Run = %v, want it unreplayable because %q", err, tc.reason)
			}
		})
	}
}

func errorsAs(err error, target **UnreplayableError) bool { return errors.As(err, target) }

// TestUnordered: an invocation's record is out of order only where an
// operation ended before the one recorded ahead of it started (a late
// writer's lines ahead of its run's, in a storm recorded before
// 2026-12-06); overlapping operations (the runtime's concurrent creates,
// recorded as they returned) are in order either way.
func TestUnordered(t *testing.T) {
	t.Parallel()
	at := func(s, e int) history.Op {
		base := time.Date(2026, 12, 6, 2, 2, 0, 0, time.UTC)
		return history.Op{Kind: history.OpList, Start: base.Add(time.Duration(s) * time.Second), End: base.Add(time.Duration(e) * time.Second)}
	}
	for _, tc := range []struct {
		name string
		ops  []history.Op
		want string // a part of the answer ("": in order)
	}{
		{"none", nil, ""},
		{"one after another", []history.Op{at(0, 1), at(1, 2), at(3, 4)}, ""},
		{"overlapping, recorded as they returned", []history.Op{at(0, 1), at(2, 5), at(1, 3)}, ""},
		{"a later operation recorded first", []history.Op{at(30, 35), at(0, 1), at(1, 2)}, "operation 1 (list after start limit 0) ended 29s before operation 0"},
		{"later in the record", []history.Op{at(0, 1), at(40, 41), at(2, 3)}, "operation 2"},
	} {
		got := unordered(tc.ops)
		if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
			t.Errorf("%s: unordered = %q, want one holding %q", tc.name, got, tc.want)
		}
	}
}
