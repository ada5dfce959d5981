package engine_test

import (
	"context"
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/stormctl/stormctl/internal/engine"
	"github.com/stormctl/stormctl/internal/eventlog"
	"github.com/stormctl/stormctl/worlds"
)

// stepThenSleep calls step "a", then sleeps a second.
func stepThenSleep(c *engine.Ctx) (any, error) {
	if _, err := c.Await(c.Step("a", 1)); err != nil {
		return nil, err
	}
	_, err := c.Await(c.Sleep(time.Second))
	return nil, err
}

const invokeRun = "wrun_invoke"

var invokeT0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// invokeOnce creates run invokeRun on a fresh local world holding
// run_created and log, lets a Detached runtime whose clock stands at now
// run one invocation delivered as d, waits for what a worker or a
// recovery would write, and returns the invocation's outcomes and what
// it added to the log.
func invokeOnce(t *testing.T, log []eventlog.Draft, now time.Time, d engine.Delivery) ([]engine.Outcome, []eventlog.Event) {
	t.Helper()
	ctx := t.Context()
	w := openLocal(ctx, t)
	if err := w.CreateRun(ctx, eventlog.Run{ID: invokeRun, Scheme: eventlog.SchemeULID}); err != nil {
		t.Fatal(err)
	}
	before := append([]eventlog.Draft{{Type: eventlog.RunCreated, Payload: json.RawMessage(`null`)}}, log...)
	for _, x := range before {
		if _, err := w.Append(ctx, invokeRun, []eventlog.Draft{x}); err != nil {
			t.Fatal(err)
		}
	}
	rt := engine.New(ctx, engine.Config{World: w, Program: stepThenSleep, Detached: true, Backoff: time.Millisecond,
		Now:   func() time.Time { return now },
		Knobs: engine.Knobs{Scheme: eventlog.SchemeULID, Policy: engine.Policy{IDs: engine.IDsPositional, Wake: engine.WakeOrdered}}})
	outs := rt.Invoke(ctx, invokeRun, d)
	time.Sleep(50 * time.Millisecond) // a worker, a recovery or a wake-up would have written by now
	rt.Close()
	all := readAll(ctx, t, w)
	return outs, all[len(before):]
}

// readAll reads run invokeRun's whole log.
func readAll(ctx context.Context, t *testing.T, w worlds.World) []eventlog.Event {
	t.Helper()
	log, err := engine.New(ctx, engine.Config{World: w}).Log(ctx, invokeRun)
	if err != nil {
		t.Fatal(err)
	}
	return log
}

// TestInvokeDetached: a Detached runtime runs exactly the invocation
// Invoke asks for, on the caller's goroutine, by its clock: it writes what
// the replay derived (a wait stamped by Config.Now), completes the waits
// due by that clock, fails the run on a divergence only at the recovery
// budget, and starts nothing else: no step worker, recovery or wake-up
// writes after it.
func TestInvokeDetached(t *testing.T) {
	// The run's first invocation draws step a's id; with a's result in
	// the log the next draws the wait's.
	_, added := invokeOnce(t, nil, invokeT0, engine.Delivery{})
	if len(added) != 1 || added[0].Type != eventlog.StepCreated {
		t.Fatalf("the first invocation added %v, want one step_created", types(added))
	}
	step := added[0]
	ran := []eventlog.Draft{step.Draft(), {Type: eventlog.StepStarted, CorrelationID: step.CorrelationID},
		{Type: eventlog.StepCompleted, CorrelationID: step.CorrelationID, Payload: json.RawMessage(`{"result":1}`)}}
	_, added = invokeOnce(t, ran, invokeT0, engine.Delivery{})
	if len(added) != 1 || added[0].Type != eventlog.WaitCreated {
		t.Fatalf("the second invocation added %v, want one wait_created", types(added))
	}
	wait := added[0]
	var p struct {
		ResumeAt time.Time `json:"resumeAt"`
	}
	if err := json.Unmarshal(wait.Payload, &p); err != nil || !p.ResumeAt.Equal(invokeT0.Add(time.Second)) {
		t.Errorf("wait_created resumes at %v (%v), want the runtime's clock plus a second, %v", p.ResumeAt, err, invokeT0.Add(time.Second))
	}
	waiting := append(slices.Clone(ran), wait.Draft())
	other := []eventlog.Draft{{Type: eventlog.StepCreated, CorrelationID: step.CorrelationID, Payload: json.RawMessage(`{"name":"b","args":1}`)}}

	for _, tc := range []struct {
		name     string
		log      []eventlog.Draft
		now      time.Time
		d        engine.Delivery
		want     []eventlog.Type
		diverges bool
	}{
		{"a wait not due by its clock: nothing new", waiting, invokeT0.Add(500 * time.Millisecond), engine.Delivery{}, nil, false},
		{"a wait due by its clock: completed, then the run", waiting, invokeT0.Add(2 * time.Second), engine.Delivery{},
			[]eventlog.Type{eventlog.WaitCompleted, eventlog.RunCompleted}, false},
		{"a divergence below the budget: nothing written, no recovery", other, invokeT0, engine.Delivery{}, nil, true},
		{"a divergence at the budget: the run fails", other, invokeT0, engine.Delivery{Recovery: 3, Diverged: true},
			[]eventlog.Type{eventlog.RunFailed}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			outs, added := invokeOnce(t, tc.log, tc.now, tc.d)
			if got := types(added); !slices.Equal(got, tc.want) {
				t.Errorf("the invocation added %v, want %v", got, tc.want)
			}
			if len(outs) != 1 || (outs[0].Divergence != nil) != tc.diverges {
				t.Errorf("outcomes %+v, want one, diverging: %v", outs, tc.diverges)
			}
		})
	}
}

// types lists the events' types.
func types(evs []eventlog.Event) []eventlog.Type {
	var out []eventlog.Type
	for _, e := range evs {
		out = append(out, e.Type)
	}
	return out
}
