package engine

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/stormctl/stormctl/eventlog"
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
			for _, wake := range []WakePolicy{WakeOrdered, WakeRacy} {
				got := Replay(shaped(baseShape), "run-sim", log[:len(log)-1], ids, wake, simNow)
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
		{"wait duration differs", variant(func(s *shape) { s.Sleep = 2 * time.Second }), log, "wait_duration"},
		{"attribute key differs", variant(func(s *shape) { s.Attr = "other" }), log, "attr_key"},
		{"event type unexpected for entity", shaped(baseShape), mutate(func(l []eventlog.Event) []eventlog.Event {
			return slices.Insert(l, stepA+1, eventlog.Event{Type: eventlog.WaitCompleted, CorrelationID: l[stepA].CorrelationID})
		}), "unexpected_type"},
		{"disposal the code did not make", shaped(baseShape), mutate(func(l []eventlog.Event) []eventlog.Event {
			h := find(l, eventlog.HookCreated)
			return slices.Insert(l, h+1, eventlog.Event{Type: eventlog.HookDisposed, CorrelationID: l[h].CorrelationID})
		}), "unconsumed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, wake := range []WakePolicy{WakeOrdered, WakeRacy} {
				out := Replay(tt.prog, "run-sim", tt.log, IDsPositional, wake, simNow)
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

// TestArgumentSwapIsInvisible documents the engine's blind spot: a step
// called with other arguments under the same name replays without a
// divergence, so only the ledger can catch the wrong result.
func TestArgumentSwapIsInvisible(t *testing.T) {
	log := simulate(t, shaped(baseShape), nil, IDsPositional)
	s := baseShape
	s.ArgA = 99
	out := Replay(shaped(s), "run-sim", log[:len(log)-1], IDsPositional, WakeOrdered, simNow)
	if out.Divergence != nil {
		t.Fatalf("unexpected divergence: %v", out.Divergence)
	}
	o, _ := Output(eventlog.Event{Payload: out.Decisions[len(out.Decisions)-1].Payload})
	if string(o) != `["a1","payload:tok"]` {
		t.Fatalf("output %s: the recorded result of a(1) should be fed to a(99)", o)
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
		for _, wake := range []WakePolicy{WakeOrdered, WakeRacy} {
			out := Replay(race, "run-sim", tt.log, IDsCallsite, wake, simNow)
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
