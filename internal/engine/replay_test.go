package engine

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stormctl/stormctl/internal/eventlog"
)

func TestSimulatedRunCompletes(t *testing.T) {
	for _, ids := range []IDPolicy{IDsPositional, IDsCallsite} {
		t.Run(string(ids), func(t *testing.T) {
			log := simulate(t, shaped(baseShape), nil, ids)
			last := log[len(log)-1]
			if last.Type != eventlog.RunCompleted {
				t.Fatalf("last event %s, want run_completed", last.Type)
			}
			out, err := Output(last)
			if err != nil || string(out) != `["a1","payload:tok"]` {
				t.Fatalf("output %s (%v)", out, err)
			}
			for _, wake := range allWakes {
				got := Replay(shaped(baseShape), "run-sim", log[:len(log)-1], ReplayMode{IDs: ids, Wake: wake}, simNow)
				if got.Divergence != nil || len(got.Decisions) != 1 || got.Decisions[0].Type != eventlog.RunCompleted {
					t.Fatalf("%s replay of the full log: %+v", wake, got)
				}
			}
		})
	}
}

// find returns the index of the first event of type typ.
func find(log []eventlog.Event, typ eventlog.Type) int {
	return slices.IndexFunc(log, func(e eventlog.Event) bool { return e.Type == typ })
}

func TestDivergences(t *testing.T) {
	log := simulate(t, shaped(baseShape), nil, IDsPositional)
	log = log[:len(log)-1] // replay a live run, not a finished one
	variant := func(f func(s *shape)) Program {
		s := baseShape
		f(&s)
		return shaped(s)
	}
	mutate := func(f func(log []eventlog.Event) []eventlog.Event) []eventlog.Event {
		return f(slices.Clone(log))
	}
	stepA := find(log, eventlog.StepCreated)
	tests := []struct {
		name string
		prog Program
		log  []eventlog.Event
		kind string
	}{
		{"step name differs", variant(func(s *shape) { s.StepA = "other" }), log, "step_name"},
		{"step created but not called", shaped(baseShape), mutate(func(l []eventlog.Event) []eventlog.Event {
			l[stepA].CorrelationID = "step_nobody"
			return l
		}), "not_in_queue"},
		{"event nobody consumes", shaped(baseShape), mutate(func(l []eventlog.Event) []eventlog.Event {
			return slices.Insert(l, 2, eventlog.Event{Type: eventlog.StepCompleted, CorrelationID: "step_nobody"})
		}), "unconsumed"},
		{"hook token differs", variant(func(s *shape) { s.Token = "other" }), log, "hook_token"},
		{"wait completed for another resumeAt", shaped(baseShape), mutate(func(l []eventlog.Event) []eventlog.Event {
			w := find(l, eventlog.WaitCompleted)
			l[w].Payload = mustJSON(waitCompleted{ResumeAt: simNow.Add(time.Hour)})
			return l
		}), "wait_resume_at"},
		{"attribute key differs", variant(func(s *shape) { s.Attr = "other" }), log, "attr_key"},
		{"event type unexpected for entity", shaped(baseShape), mutate(func(l []eventlog.Event) []eventlog.Event {
			return slices.Insert(l, stepA+1, eventlog.Event{Type: eventlog.WaitCompleted, CorrelationID: l[stepA].CorrelationID})
		}), "unexpected_type"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, wake := range allWakes {
				out := Replay(tt.prog, "run-sim", tt.log, ReplayMode{IDs: IDsPositional, Wake: wake}, simNow)
				var de *DivergenceError
				if out.Divergence == nil || !errors.As(error(out.Divergence), &de) || de.Kind != tt.kind {
					t.Fatalf("%s: divergence %v, want kind %s", wake, out.Divergence, tt.kind)
				}
				if !errors.Is(out.Divergence, ErrDivergence) {
					t.Fatalf("%s: not ErrDivergence", wake)
				}
			}
		})
	}
}

// TestArgumentSwap: a step called with other arguments under the same name
// replays without a divergence under positional ids (only the ledger can
// catch the wrong result), but not under call-site ids, whose scope holds
// the arguments' fingerprint.
func TestArgumentSwap(t *testing.T) {
	tests := []struct {
		ids  IDPolicy
		kind string // "" when the swap goes unnoticed
	}{
		{IDsPositional, ""},
		{IDsCallsite, "not_in_queue"},
	}
	for _, tt := range tests {
		t.Run(string(tt.ids), func(t *testing.T) {
			log := simulate(t, shaped(baseShape), nil, tt.ids)
			s := baseShape
			s.ArgA = 99
			out := Replay(shaped(s), "run-sim", log[:len(log)-1], ReplayMode{IDs: tt.ids, Wake: WakeOrdered}, simNow)
			if tt.kind != "" {
				if out.Divergence == nil || out.Divergence.Kind != tt.kind {
					t.Fatalf("divergence %v, want kind %s", out.Divergence, tt.kind)
				}
				return
			}
			if out.Divergence != nil {
				t.Fatalf("unexpected divergence: %v", out.Divergence)
			}
			// The engine does not check arguments; the replay still says
			// which event it took although they differ.
			stepA := find(log, eventlog.StepCreated)
			if u := out.Unchecked; u == nil || u.Kind != "step_args" || u.Index != stepA {
				t.Fatalf("unchecked %+v, want step_args at index %d", u, stepA)
			}
			o, _ := Output(eventlog.Event{Payload: out.Decisions[len(out.Decisions)-1].Payload})
			if string(o) != `["a1","payload:tok"]` {
				t.Fatalf("output %s: the recorded result of a(1) should be fed to a(99)", o)
			}
		})
	}
}

func TestDisposalIsConsumedWithoutIntent(t *testing.T) {
	log := simulate(t, shaped(baseShape), nil, IDsCallsite)
	log = log[:len(log)-1]
	h := find(log, eventlog.HookCreated)
	// A disposal the code has not decided yet (another writer's) is taken
	// as it is, and the code's own Dispose later writes nothing. The
	// disposal moves: a world holds one per hook, and a second would find
	// the hook's consumer gone (TestFinishedConsumer).
	disposed := eventlog.Event{Type: eventlog.HookDisposed, CorrelationID: log[h].CorrelationID}
	log = slices.DeleteFunc(slices.Clone(log), func(e eventlog.Event) bool { return e.Type == eventlog.HookDisposed })
	log = slices.Insert(log, h+1, disposed)
	for _, wake := range allWakes {
		out := Replay(shaped(baseShape), "run-sim", log, ReplayMode{IDs: IDsCallsite, Wake: wake}, simNow)
		if out.Divergence != nil {
			t.Fatalf("%s: divergence %v", wake, out.Divergence)
		}
		for _, d := range out.Decisions {
			if d.Type == eventlog.HookDisposed {
				t.Fatalf("%s: wrote a second hook_disposed", wake)
			}
		}
	}
}

func TestRaceIsDecidedByLogOrder(t *testing.T) {
	race := func(c *Ctx) (any, error) {
		r := c.Race(c.Step("x", 0), c.Sleep(time.Second))
		_, err := c.Await(r)
		return r.Winner(), err
	}
	log := simulate(t, race, nil, IDsCallsite) // created x, started, completed, created wait, completed
	log = log[:len(log)-1]
	timerFirst := []eventlog.Event{log[0], log[1], log[4], log[5], log[2], log[3]}
	for _, tt := range []struct {
		name string
		log  []eventlog.Event
		want string
	}{{"step first", log, "0"}, {"timer first", timerFirst, "1"}} {
		for _, wake := range allWakes {
			out := Replay(race, "run-sim", tt.log, ReplayMode{IDs: IDsCallsite, Wake: wake}, simNow)
			if out.Divergence != nil || len(out.Decisions) != 1 {
				t.Fatalf("%s/%s: %+v", tt.name, wake, out)
			}
			got, _ := Output(eventlog.Event{Payload: out.Decisions[0].Payload})
			if string(got) != tt.want {
				t.Errorf("%s/%s: winner %s, want %s", tt.name, wake, got, tt.want)
			}
		}
	}
}

func TestSameJSON(t *testing.T) {
	tests := []struct {
		a, b string
		want bool
	}{
		{`{"r":0,"b":1}`, `{"b":1,"r":0}`, true}, // jsonb reorders keys
		{`{"r":0,"b":1}`, `{ "r": 0, "b": 1 }`, true},
		{`{"r":0,"b":1}`, `{"r":0,"b":2}`, false},
		{`[1,2]`, `[2,1]`, false},
		{`not json`, `not json`, true},
		{`not json`, `{}`, false},
	}
	for _, tt := range tests {
		if got := sameJSON([]byte(tt.a), []byte(tt.b)); got != tt.want {
			t.Errorf("sameJSON(%s, %s) = %v, want %v", tt.a, tt.b, got, tt.want)
		}
	}
}

// TestHookConflict: a store that answered a hook's creation with a
// hook_conflict (another hook holds its token) leaves the hook created, and
// the code awaiting its payload fails, as in core: the run fails with the
// workflow's error, no hook_created is derived again, and nothing diverges.
func TestHookConflict(t *testing.T) {
	log := simulate(t, shaped(baseShape), nil, IDsCallsite)
	log = log[:len(log)-1]
	h := find(log, eventlog.HookCreated)
	hook := log[h].CorrelationID
	log = slices.Clone(log)
	log[h].Type = eventlog.HookConflict
	// The store refuses payloads for a hook it never created.
	log = slices.DeleteFunc(log, func(e eventlog.Event) bool {
		return e.CorrelationID == hook && (e.Type == eventlog.HookReceived || e.Type == eventlog.HookDisposed)
	})
	for _, wake := range allWakes {
		out := Replay(shaped(baseShape), "run-sim", log, ReplayMode{IDs: IDsCallsite, Wake: wake}, simNow)
		if out.Divergence != nil {
			t.Fatalf("%s: divergence %v", wake, out.Divergence)
		}
		if len(out.Decisions) == 0 {
			t.Fatalf("%s: no decisions, want the run to fail", wake)
		}
		last := out.Decisions[len(out.Decisions)-1]
		f := Failure(eventlog.Event{Payload: last.Payload})
		if last.Type != eventlog.RunFailed || f.Code != CodeWorkflow || !strings.Contains(f.Message, ErrHookConflict.Error()) {
			t.Fatalf("%s: last decision %s %+v, want run_failed %s with %q", wake, last.Type, f, CodeWorkflow, ErrHookConflict)
		}
		for _, d := range out.Decisions {
			if d.Type == eventlog.HookCreated {
				t.Fatalf("%s: derived hook_created %s again after its hook_conflict", wake, d.CorrelationID)
			}
		}
	}
}
