package engine_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stormctl/stormctl/internal/engine"
	"github.com/stormctl/stormctl/internal/eventlog"
	"github.com/stormctl/stormctl/worlds"
)

// overtaking is a world on which another orchestrator overtakes the first
// invocation that loads the run's log after its step completed: right after
// that load it lands the run's end itself, in band, at the count the
// load's snapshot gave, so the invocation's count is stale.
type overtaking struct {
	worlds.World
	mu   sync.Mutex
	done bool
	err  error
}

func (w *overtaking) List(ctx context.Context, runID string, after eventlog.Cursor, limit int) (eventlog.Page, error) {
	p, err := w.World.List(ctx, runID, after, limit)
	if err != nil || p.Snapshot == nil || !hasType(p.Events, eventlog.StepCompleted) {
		return p, err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.done {
		w.done = true
		_, w.err = w.World.AppendFenced(ctx, runID, p.Snapshot.SeqInBand,
			[]eventlog.Draft{{Type: eventlog.RunCompleted, Payload: json.RawMessage(`{"output":"A"}`)}})
	}
	return p, nil
}

func hasType(evs []eventlog.Event, t eventlog.Type) bool {
	for _, e := range evs {
		if e.Type == t {
			return true
		}
	}
	return false
}

// TestInBandSuperseded: under single-orchestrator's policy an invocation
// whose in-band count another orchestrator moved after its load is refused
// (an in-band fenced rejection), writes nothing more, and the queue
// delivers its message again after the fence's redelivery delay: the
// redelivery loads afresh, adopts the current count, and the run completes.
func TestInBandSuperseded(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	w := &overtaking{World: openLocal(ctx, t)}
	policy := engine.DefaultPolicy()
	policy.Fence, policy.OnReject, policy.Repeats, policy.Seal = engine.FenceInBand, engine.RejectRedeliver, engine.RepeatsInert, engine.SealNoop
	prog := func(c *engine.Ctx) (any, error) {
		var v string
		err := c.AwaitInto(c.Step("a", 1), &v)
		return v, err
	}
	steps := map[string]engine.StepFunc{"a": func(json.RawMessage) (engine.StepOutcome, error) {
		return engine.StepOutcome{Result: "A"}, nil
	}}
	const redelivery = 300 * time.Millisecond
	rt := engine.New(ctx, engine.Config{World: w, Program: prog, Steps: steps,
		Knobs: engine.Knobs{Scheme: eventlog.SchemeSlot, Policy: policy}, Backoff: time.Millisecond, FenceRedelivery: redelivery})
	start := time.Now()
	startAndWait(ctx, t, rt, "run-1", "the run did not end")
	stats := rt.Finish("run-1")
	if w.err != nil || !w.done {
		t.Fatalf("the other orchestrator's write: done %v, %v", w.done, w.err)
	}
	count := typeCounts(ctx, t, rt, "run-1")
	if count[eventlog.RunCompleted] != 1 || count[eventlog.RunFailed] != 0 {
		t.Fatalf("log has %v, want one run_completed (the other orchestrator's)", count)
	}
	if stats.Rejections != 1 {
		t.Errorf("stats %+v: want 1 rejection (the superseded run_completed)", stats)
	}
	if took := time.Since(start); took < redelivery {
		t.Errorf("the run ended %v after it started, before the redelivery delay %v: the superseded message was not held", took, redelivery)
	}
}

// TestInBandNeedsASnapshot: a world that gives no snapshot on a run fenced
// in band fails the invocation loudly (an unrecognised failure naming the
// missing snapshot), never writing on a guessed count.
func TestInBandNeedsASnapshot(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	w := &snapshotless{World: openLocal(ctx, t)}
	policy := engine.DefaultPolicy()
	policy.Fence, policy.OnReject, policy.Seal = engine.FenceInBand, engine.RejectRedeliver, engine.SealNoop
	prog := func(c *engine.Ctx) (any, error) { return "done", nil }
	rt := engine.New(ctx, engine.Config{World: w, Program: prog, Knobs: engine.Knobs{Scheme: eventlog.SchemeSlot, Policy: policy}, Backoff: time.Millisecond})
	if _, err := rt.Start(ctx, "run-1", nil); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for rt.Stats("run-1").Unrecognised == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("stats %+v: want the invocation failed as unrecognised", rt.Stats("run-1"))
		}
		time.Sleep(10 * time.Millisecond)
	}
	count := typeCounts(ctx, t, rt, "run-1")
	if count[eventlog.RunCompleted] != 0 {
		t.Fatalf("log has %v: the run completed on a count it never read", count)
	}
	if st := rt.Finish("run-1"); !strings.Contains(st.UnrecognisedErr, "no in-band snapshot") {
		t.Errorf("stats %+v: want the failure's text to name the missing snapshot", st)
	}
}

// snapshotless drops the snapshot from every page.
type snapshotless struct{ worlds.World }

func (w *snapshotless) List(ctx context.Context, runID string, after eventlog.Cursor, limit int) (eventlog.Page, error) {
	p, err := w.World.List(ctx, runID, after, limit)
	p.Snapshot = nil
	return p, err
}
