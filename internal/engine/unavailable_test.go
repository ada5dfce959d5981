package engine_test

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/stormctl/stormctl/internal/engine"
	"github.com/stormctl/stormctl/internal/eventlog"
	"github.com/stormctl/stormctl/worlds"
)

// blinking fails the first unfenced append of each listed type with
// eventlog.ErrUnavailable: refused (nothing written) or, with lost, after
// writing it (the answer lost on the way back: a commit the writer cannot
// know about).
type blinking struct {
	worlds.World
	lost  bool
	mu    sync.Mutex
	armed map[eventlog.Type]bool
}

func (b *blinking) Append(ctx context.Context, runID string, d []eventlog.Draft) ([]eventlog.Event, error) {
	b.mu.Lock()
	fire := len(d) == 1 && b.armed[d[0].Type]
	delete(b.armed, d[0].Type)
	b.mu.Unlock()
	if !fire {
		return b.World.Append(ctx, runID, d)
	}
	if b.lost {
		if _, err := b.World.Append(ctx, runID, d); err != nil {
			return nil, err
		}
	}
	return nil, eventlog.Unavailable("blinking", context.DeadlineExceeded)
}

// TestFactsSurviveAnUnavailableStore: a step's facts (step_started,
// step_completed) whose append hits an unreachable store are retried, not
// dropped, whether the failed attempt wrote nothing or wrote and lost its
// answer; the run completes with each fact logged once. Before the retry, a
// refused step_started left the step unstarted for good and the run
// ended stuck.
func TestFactsSurviveAnUnavailableStore(t *testing.T) {
	for _, tt := range []struct {
		name   string
		lost   bool
		fenced bool
	}{
		{"refused/unfenced", false, false},
		{"answer lost/unfenced", true, false},
		{"refused/fenced", false, true},
		{"answer lost/fenced", true, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
			defer cancel()
			w := &blinking{World: openLocal(ctx, t), lost: tt.lost, armed: map[eventlog.Type]bool{eventlog.StepStarted: true, eventlog.StepCompleted: true}}
			policy, scheme := singleRunner(tt.fenced)
			prog := func(c *engine.Ctx) (any, error) {
				var v string
				err := c.AwaitInto(c.Step("a", 1), &v)
				return v, err
			}
			steps := map[string]engine.StepFunc{"a": func(json.RawMessage) (engine.StepOutcome, error) {
				return engine.StepOutcome{Result: "A"}, nil
			}}
			rt := engine.New(ctx, engine.Config{World: w, Program: prog, Steps: steps, Knobs: engine.Knobs{Scheme: scheme, Policy: policy}, Backoff: time.Millisecond})
			startAndWait(ctx, t, rt, "run-1", "the run did not end: a fact was dropped")
			stats := rt.Finish("run-1")
			count := typeCounts(ctx, t, rt, "run-1")
			if count[eventlog.RunCompleted] != 1 || count[eventlog.StepStarted] != 1 || count[eventlog.StepCompleted] != 1 {
				t.Fatalf("log has %v, want one run_completed, step_started and step_completed", count)
			}
			if stats.InfraErrors < 2 {
				t.Errorf("infra errors %d, want the 2 counted", stats.InfraErrors)
			}
		})
	}
}
