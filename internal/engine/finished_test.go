package engine

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/stormctl/stormctl/internal/eventlog"
)

// TestFinishedConsumer holds the replay to core 4.8.9's consumer lifetime
// over logs in which a world created an entity twice (world-local 4.4.1's
// check-then-write creations): an operation's consumer takes a repeated
// creation until its terminal event (step.ts, sleep.ts and hook.ts return
// Consumed for it) and is gone after it (they return Finished and the
// events consumer drops them), so an event of the id after the terminal
// one is consumed by nobody ("Replay could not consume event"). A second
// wait_created replaces the resumeAt the completion must carry (sleep.ts).
// Each case edits the finished log of the shaped workflow and says what
// every wake policy's replay then concludes.
func TestFinishedConsumer(t *testing.T) {
	base := simulate(t, shaped(baseShape), nil, IDsPositional)
	base = base[:len(base)-1] // without run_completed: the replay derives it
	at := func(t *testing.T, l []eventlog.Event, typ eventlog.Type) int {
		t.Helper()
		i := find(l, typ)
		if i < 0 {
			t.Fatalf("the log has no %s", typ)
		}
		return i
	}
	// copyAfter inserts a copy of the first event of type typ right after
	// the first event of type after that has the same correlation id; its
	// failures are the subtest's (t is the subtest's own).
	copyAfter := func(typ, after eventlog.Type) func(*testing.T, []eventlog.Event) ([]eventlog.Event, int) {
		return func(t *testing.T, l []eventlog.Event) ([]eventlog.Event, int) {
			t.Helper()
			e := l[at(t, l, typ)]
			j := slices.IndexFunc(l, func(x eventlog.Event) bool { return x.Type == after && x.CorrelationID == e.CorrelationID })
			if j < 0 {
				t.Fatalf("no %s for %s", after, e.CorrelationID)
			}
			return slices.Insert(slices.Clone(l), j+1, e), j + 1
		}
	}
	resumeAt := func(l []eventlog.Event, i int, d time.Duration) {
		l[i].Payload = mustJSON(waitCreated{DurationMs: baseShape.Sleep.Milliseconds(), ResumeAt: simNow.Add(d)})
	}
	for _, tc := range []struct {
		name string
		// edit returns (failing the subtest t when it cannot) the edited log and the index of the event the
		// replay must diverge at (ignored when kind is "").
		edit func(*testing.T, []eventlog.Event) ([]eventlog.Event, int)
		kind string
	}{
		{"no duplicate", func(_ *testing.T, l []eventlog.Event) ([]eventlog.Event, int) { return l, -1 }, ""},
		{"step_created twice before the step completed", copyAfter(eventlog.StepCreated, eventlog.StepCreated), ""},
		{"step_created twice, the second after step_started", copyAfter(eventlog.StepCreated, eventlog.StepStarted), ""},
		{"step_created again after step_completed", copyAfter(eventlog.StepCreated, eventlog.StepCompleted), "unconsumed"},
		{"step_completed twice", copyAfter(eventlog.StepCompleted, eventlog.StepCompleted), "unconsumed"},
		{"step_created twice under another step's name", func(t *testing.T, l []eventlog.Event) ([]eventlog.Event, int) {
			l, i := copyAfter(eventlog.StepCreated, eventlog.StepCreated)(t, l)
			l[i].Payload = mustJSON(stepCreated{Name: "b", Args: mustJSON(1)})
			return l, i
		}, "step_name"},
		{"wait_created twice with one resumeAt", copyAfter(eventlog.WaitCreated, eventlog.WaitCreated), ""},
		{"wait_created twice, completed for the last resumeAt", func(t *testing.T, l []eventlog.Event) ([]eventlog.Event, int) {
			l, i := copyAfter(eventlog.WaitCreated, eventlog.WaitCreated)(t, l)
			resumeAt(l, i, 2*time.Second)
			l[at(t, l, eventlog.WaitCompleted)].Payload = mustJSON(waitCompleted{ResumeAt: simNow.Add(2 * time.Second)})
			return l, -1
		}, ""},
		{"wait_created twice, completed for the first resumeAt", func(t *testing.T, l []eventlog.Event) ([]eventlog.Event, int) {
			l, i := copyAfter(eventlog.WaitCreated, eventlog.WaitCreated)(t, l)
			resumeAt(l, i, 2*time.Second)
			return l, at(t, l, eventlog.WaitCompleted)
		}, "wait_resume_at"},
		{"wait_created again after wait_completed", copyAfter(eventlog.WaitCreated, eventlog.WaitCompleted), "unconsumed"},
		{"hook_created twice before the hook was disposed", copyAfter(eventlog.HookCreated, eventlog.HookCreated), ""},
		{"hook_created again after hook_disposed", copyAfter(eventlog.HookCreated, eventlog.HookDisposed), "unconsumed"},
		{"hook_disposed twice", copyAfter(eventlog.HookDisposed, eventlog.HookDisposed), "unconsumed"},
		// Kept as the model's stand-in for the real worlds, which refuse a
		// payload for a disposed hook (engine-model.md).
		{"hook_received after hook_disposed: ignored", copyAfter(eventlog.HookReceived, eventlog.HookDisposed), ""},
		// A step worker's own attribute carries the step's id and is not
		// replayed, wherever it lands.
		{"a step's attribute after step_completed: not replayed", func(t *testing.T, l []eventlog.Event) ([]eventlog.Event, int) {
			c := at(t, l, eventlog.StepCompleted)
			attr := eventlog.Event{Type: eventlog.AttrSet, CorrelationID: l[c].CorrelationID, Dedup: StepAttrDedup + "k",
				Payload: mustJSON(attrSet{Key: "k", Value: mustJSON("v")})}
			return slices.Insert(slices.Clone(l), c+1, attr), -1
		}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			log, idx := tc.edit(t, slices.Clone(base))
			for _, m := range []ReplayMode{{Repeats: RepeatsStrict}, {Repeats: RepeatsInert}} {
				kind := tc.kind
				if m.Repeats == RepeatsInert && kind == "unconsumed" {
					kind = "" // spec 9: an event after its entity's end is inert
				}
				for _, wake := range allWakes {
					m.IDs, m.Wake = IDsPositional, wake
					checkFinished(t, log, m, kind, idx)
				}
			}
		})
	}
}

// checkFinished replays log in mode m and fails t unless it concludes as
// kind says: no divergence and run_completed alone (kind ""), or a
// divergence of kind at index idx.
func checkFinished(t *testing.T, log []eventlog.Event, m ReplayMode, kind string, idx int) {
	t.Helper()
	mode := fmt.Sprintf("%s/repeats=%s", m.Wake, m.Repeats)
	out := Replay(shaped(baseShape), "run-sim", log, m, simNow)
	if kind == "" {
		if out.Divergence != nil {
			t.Fatalf("%s: divergence %v, want none", mode, out.Divergence)
		}
		if n := len(out.Decisions); n != 1 || out.Decisions[0].Type != eventlog.RunCompleted {
			t.Fatalf("%s: decisions %v, want run_completed alone", mode, out.Decisions)
		}
		return
	}
	if d := out.Divergence; d == nil || d.Kind != kind || d.Index != idx {
		t.Fatalf("%s: divergence %+v, want kind %s at index %d", mode, d, kind, idx)
	}
}
