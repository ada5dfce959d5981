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

// refusing refuses every attr_set (a store without attributes, as the
// devkit packages) and the first append of each listed type, writing
// nothing (a store whose entity check said no).
type refusing struct {
	worlds.World
	mu   sync.Mutex
	once map[eventlog.Type]bool
}

func (r *refusing) Append(ctx context.Context, runID string, d []eventlog.Draft) ([]eventlog.Event, error) {
	r.mu.Lock()
	fire := d[0].Type == eventlog.AttrSet || r.once[d[0].Type]
	delete(r.once, d[0].Type)
	r.mu.Unlock()
	if fire {
		return nil, &eventlog.RefusedError{RunID: runID, Type: d[0].Type, Reason: "TestRefusal", Message: "refused"}
	}
	return r.World.Append(ctx, runID, d)
}

// TestRefusedWrites: a store's refusals are neither conflicts nor
// infrastructure. A step whose attribute is refused runs on; a refused
// decision fails its invocation and the run is delivered again, as a
// queue redelivers a failed invocation; the run completes, and the
// refusals are counted.
func TestRefusedWrites(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	w := &refusing{World: openLocal(ctx, t), once: map[eventlog.Type]bool{eventlog.StepCreated: true}}
	policy, scheme := singleRunner(false)
	prog := func(c *engine.Ctx) (any, error) {
		var v string
		err := c.AwaitInto(c.Step("a", 1), &v)
		return v, err
	}
	steps := map[string]engine.StepFunc{"a": func(json.RawMessage) (engine.StepOutcome, error) {
		return engine.StepOutcome{Result: "A", Attrs: map[string]string{"k": "v"}}, nil
	}}
	rt := engine.New(ctx, engine.Config{World: w, Program: prog, Steps: steps, Knobs: engine.Knobs{Scheme: scheme, Policy: policy}, Backoff: time.Millisecond})
	startAndWait(ctx, t, rt, "run-1", "the run did not end")
	stats := rt.Finish("run-1")
	count := typeCounts(ctx, t, rt, "run-1")
	if count[eventlog.RunCompleted] != 1 || count[eventlog.StepCompleted] != 1 || count[eventlog.AttrSet] != 0 {
		t.Fatalf("log has %v, want one run_completed and step_completed and no attr_set", count)
	}
	if stats.Refusals != 2 || stats.InfraErrors != 0 || stats.Conflicts != 0 {
		t.Errorf("stats %+v: want 2 refusals (the attribute, the first step_created), no infra errors, no conflicts", stats)
	}
}
