package engine_test

import (
	"context"
	"testing"
	"time"

	"github.com/stormctl/stormctl/internal/base/clock"
	"github.com/stormctl/stormctl/internal/engine"
	"github.com/stormctl/stormctl/internal/eventlog"
	"github.com/stormctl/stormctl/worlds"
)

// TestSlotHoles parks a run on a hook, leaves a reserved slot empty (a writer
// that died), then resumes the hook so a payload commits above the hole:
// without seals every load is refused and the run fails with
// CORRUPTED_EVENT_LOG for the hole once the recovery budget is spent; with
// noop seals a reader waits seal-after, seals the slot and the run completes
// over a log that holds the noop.
func TestSlotHoles(t *testing.T) {
	tests := []struct {
		name       string
		seal       engine.SealPolicy
		wantType   eventlog.Type
		wantReason string
		wantSeals  bool
	}{
		{"without seals the hole fails the run", engine.SealNone, eventlog.RunFailed, engine.ReasonHole, false},
		{"a noop seal fills the hole", engine.SealNoop, eventlog.RunCompleted, "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
			defer cancel()
			w := openLocal(ctx, t)
			prog := func(c *engine.Ctx) (any, error) {
				var v string
				err := c.AwaitInto(c.Hook("go").Next(), &v)
				return v, err
			}
			policy := engine.Policy{IDs: engine.IDsCallsite, Wake: engine.WakeOrdered, Fence: engine.FenceNone,
				OnReject: engine.RejectRederive, Admission: engine.AdmitAll, Seal: tt.seal}
			rt := engine.New(ctx, engine.Config{World: w, Program: prog, Knobs: engine.Knobs{Scheme: eventlog.SchemeSlot, Policy: policy},
				Backoff: time.Millisecond, SealAfter: 50 * time.Millisecond})
			if _, err := rt.Start(ctx, "run-1", nil); err != nil {
				t.Fatal(err)
			}
			for {
				evs, lerr := rt.Log(ctx, "run-1")
				if lerr == nil && len(evs) >= 2 { // run_created, hook_created
					break
				}
				if clock.Sleep(ctx, 5*time.Millisecond) != nil {
					t.Fatal("the hook was never created")
				}
			}
			sl := worlds.Inner(w).(worlds.Slotter)
			if _, err := sl.Reserve(ctx, "run-1", []eventlog.Draft{{Type: eventlog.StepCompleted, CorrelationID: "dead-writer"}}); err != nil {
				t.Fatal(err)
			}
			if err := rt.ResumeHook(ctx, "run-1", "go", "payload", "p1"); err != nil {
				t.Fatal(err)
			}
			awaitEnd(ctx, t, rt, "run-1", "run did not end")
			stats := rt.Finish("run-1")
			evs, err := worlds.Inner(w).(worlds.Dumper).Dump(ctx, "run-1")
			if err != nil {
				t.Fatal(err)
			}
			var last eventlog.Event
			noops := 0
			for _, e := range evs {
				if e.Type == eventlog.Noop {
					noops++
				}
				if e.Type.IsTerminal() {
					last = e
				}
			}
			if last.Type != tt.wantType || engine.Failure(last).Reason != tt.wantReason {
				t.Fatalf("terminal %s %s, want %s with reason %q", last.Type, last.Payload, tt.wantType, tt.wantReason)
			}
			if stats.HoleRefusals == 0 {
				t.Fatalf("no hole refusal counted: %+v", stats)
			}
			if got := noops == 1 && stats.Seals >= 1; got != tt.wantSeals {
				t.Fatalf("%d noops in the log, %d seals counted; want seals %v", noops, stats.Seals, tt.wantSeals)
			}
			if !tt.wantSeals && stats.Recoveries != 3 {
				t.Fatalf("recoveries %d, want the budget of 3 spent on the hole", stats.Recoveries)
			}
			if stats.Recovered != 0 {
				t.Fatalf("%d recovered divergences counted, but nothing diverged: a hole's recoveries are not divergences", stats.Recovered)
			}
		})
	}
}
