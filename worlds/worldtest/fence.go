package worldtest

import (
	"errors"
	"slices"
	"testing"

	"github.com/stormctl/stormctl/internal/eventlog"
)

// testFencedBatch: on a log of 3 events, a fenced batch at the right position
// commits all its drafts at consecutive positions; a stale or impossible
// position is rejected with a FencedError; a batch with one taken key (or two
// drafts claiming one key) conflicts. A rejected batch writes nothing and
// claims no key.
func testFencedBatch(t testing.TB, s *suite) {
	taken := Draft(eventlog.StepCompleted, "base_1")
	tests := []struct {
		name     string
		expected int64
		drafts   []eventlog.Draft
		want     error // nil, eventlog.ErrFenced or eventlog.ErrConflict
	}{
		{"current", 3, decisions("ok", 3), nil},
		{"stale", 2, decisions("stale", 3), eventlog.ErrFenced},
		{"empty_view", 0, decisions("zero", 1), eventlog.ErrFenced},
		{"ahead", 4, decisions("ahead", 2), eventlog.ErrFenced},
		{"key_taken", 3, []eventlog.Draft{decisions("x", 1)[0], taken, decisions("y", 1)[0]}, eventlog.ErrConflict},
		{"key_twice_in_batch", 3, []eventlog.Draft{decisions("z", 1)[0], decisions("z", 1)[0]}, eventlog.ErrConflict},
	}
	for _, tt := range tests {
		Run(t, tt.name, func(t testing.TB) {
			s.skipFence(t, "fenced batch")
			f := s.fixture(t, eventlog.FenceOnLog)
			base := f.append(Draft(eventlog.StepCompleted, "base_0"), taken, Draft(eventlog.StepCompleted, "base_2"))
			evs, err := f.w.AppendFenced(f.ctx, f.run, tt.expected, tt.drafts)
			if tt.want == nil {
				if err != nil {
					t.Fatalf("AppendFenced(expected %d): %v", tt.expected, err)
				}
				f.checkWritten(tt.drafts, evs)
				f.checkSame("log", f.all(), slices.Concat(base, evs))
				return
			}
			if !errors.Is(err, tt.want) {
				t.Fatalf("AppendFenced(expected %d) = %v; want an error matching %v", tt.expected, err, tt.want)
			}
			if tt.want == eventlog.ErrFenced {
				var fe *eventlog.FencedError
				if !errors.As(err, &fe) {
					t.Fatalf("AppendFenced: %v is not an *eventlog.FencedError", err)
				}
				if fe.RunID != f.run || fe.Expected != tt.expected || fe.Actual != 3 {
					t.Fatalf("FencedError{RunID %q, Expected %d, Actual %d}, want {%q, %d, 3}", fe.RunID, fe.Expected, fe.Actual, f.run, tt.expected)
				}
			}
			f.checkSame("log after a rejected batch", f.all(), base)
			// Nothing of the rejected batch holds a key: its free drafts go in.
			var free []eventlog.Draft
			for _, d := range tt.drafts {
				if d.CorrelationID != taken.CorrelationID && !containsDraft(free, d) {
					free = append(free, d)
				}
			}
			f.appendFenced(3, free...)
		})
	}
}

func containsDraft(ds []eventlog.Draft, d eventlog.Draft) bool {
	for _, x := range ds {
		if sameDraft(x, d) {
			return true
		}
	}
	return false
}

// fenceStep is one write of a fence-basis scenario and its expected outcome.
type fenceStep struct {
	fenced   bool
	expected int64
	drafts   []eventlog.Draft
	// actual is the FencedError's Actual when the step must be rejected; 0
	// means the step must be accepted.
	actual int64
}

// testFenceBasis: one writer's script per basis. Under FenceOnLog a fact
// appended after the writer's read rejects its fenced batch; under
// FenceOnDecisions it does not, but another fenced batch does.
func testFenceBasis(t testing.TB, s *suite) {
	d := func(typ eventlog.Type, corr string) []eventlog.Draft { return []eventlog.Draft{Draft(typ, corr)} }
	start := []eventlog.Draft{Draft(eventlog.RunCreated, ""), Draft(eventlog.StepCreated, "a")}
	tests := []struct {
		name  string
		basis eventlog.FenceBasis
		steps []fenceStep
	}{
		{"log", eventlog.FenceOnLog, []fenceStep{
			{fenced: true, expected: 0, drafts: start},
			{drafts: d(eventlog.StepStarted, "a")},
			{fenced: true, expected: 2, drafts: d(eventlog.StepCreated, "b"), actual: 3},
			{fenced: true, expected: 3, drafts: d(eventlog.StepCreated, "b")},
		}},
		{"decisions", eventlog.FenceOnDecisions, []fenceStep{
			{fenced: true, expected: 0, drafts: start},
			{drafts: d(eventlog.StepStarted, "a")},
			{fenced: true, expected: 2, drafts: d(eventlog.StepCreated, "b")},
			{fenced: true, expected: 3, drafts: d(eventlog.StepCreated, "c"), actual: 4},
			{drafts: d(eventlog.StepCompleted, "a")},
			{fenced: true, expected: 4, drafts: d(eventlog.StepCreated, "c")},
		}},
	}
	for _, tt := range tests {
		Run(t, tt.name, func(t testing.TB) {
			if tt.basis == eventlog.FenceOnDecisions && !s.fenceBasis {
				t.Skipf("%s fences on the event count; the fence basis does not apply", s.scheme)
			}
			s.skipFence(t, "fence basis")
			f := s.fixture(t, tt.basis)
			var want []eventlog.Event
			for i, st := range tt.steps {
				if !st.fenced {
					want = append(want, f.append(st.drafts...)...)
					continue
				}
				evs, err := f.w.AppendFenced(f.ctx, f.run, st.expected, st.drafts)
				if st.actual == 0 {
					if err != nil {
						t.Fatalf("step %d: AppendFenced(expected %d): %v", i, st.expected, err)
					}
					f.checkWritten(st.drafts, evs)
					want = append(want, evs...)
					continue
				}
				var fe *eventlog.FencedError
				if !errors.As(err, &fe) || !errors.Is(err, eventlog.ErrFenced) {
					t.Fatalf("step %d: AppendFenced(expected %d) = %v; want a FencedError", i, st.expected, err)
				}
				if fe.Expected != st.expected || fe.Actual != st.actual {
					t.Fatalf("step %d: FencedError{Expected %d, Actual %d}, want {%d, %d}", i, fe.Expected, fe.Actual, st.expected, st.actual)
				}
			}
			f.checkSame("log", f.all(), want)
		})
	}
}
