package engine_test

import (
	"context"
	"testing"

	"github.com/stormctl/stormctl/internal/engine"
	"github.com/stormctl/stormctl/internal/eventlog"
	"github.com/stormctl/stormctl/worlds"
	"github.com/stormctl/stormctl/worlds/local"
)

// openLocal opens a local world in the test's temp dir, closed by t.Cleanup.
func openLocal(ctx context.Context, t *testing.T) *local.World {
	t.Helper()
	w, err := local.Open(ctx, worlds.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	return w
}

// startAndWait starts runID on rt and waits until it ends; ctx ending first
// fails the test with why.
func startAndWait(ctx context.Context, t *testing.T, rt *engine.Runtime, runID, why string) {
	t.Helper()
	if _, err := rt.Start(ctx, runID, nil); err != nil {
		t.Fatal(err)
	}
	awaitEnd(ctx, t, rt, runID, why)
}

// awaitEnd waits until runID ends on rt; ctx ending first fails the test
// with why.
func awaitEnd(ctx context.Context, t *testing.T, rt *engine.Runtime, runID, why string) {
	t.Helper()
	select {
	case <-rt.Done(runID):
	case <-ctx.Done():
		t.Fatal(why)
	}
}

// singleRunner is the policy the recovery tests start from: callsite ids,
// ordered wake-ups, re-derive on rejection, one runner a run; fenced, it
// fences decisions over a seq run, unfenced, nothing over a ulid run.
func singleRunner(fenced bool) (engine.Policy, eventlog.Scheme) {
	policy := engine.Policy{IDs: engine.IDsCallsite, Wake: engine.WakeOrdered, Fence: engine.FenceNone,
		OnReject: engine.RejectRederive, Admission: engine.AdmitSingleRunner}
	if fenced {
		policy.Fence = engine.FenceDecisions
		return policy, eventlog.SchemeSeq
	}
	return policy, eventlog.SchemeULID
}

// typeCounts counts the events of runID's log by type.
func typeCounts(ctx context.Context, t *testing.T, rt *engine.Runtime, runID string) map[eventlog.Type]int {
	t.Helper()
	evs, err := rt.Log(ctx, runID)
	if err != nil {
		t.Fatal(err)
	}
	count := map[eventlog.Type]int{}
	for _, e := range evs {
		count[e.Type]++
	}
	return count
}
