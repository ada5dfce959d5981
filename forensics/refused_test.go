package forensics_test

import (
	"testing"

	"github.com/stormctl/stormctl/forensics"
	"github.com/stormctl/stormctl/internal/eventlog"
	"github.com/stormctl/stormctl/internal/history"
)

// TestRefusedCountsEveryRefusedAppend: every append of a run's history its
// world refused is counted, whenever it came; a read's error, an
// unreachable store and an accepted append are not.
func TestRefusedCountsEveryRefusedAppend(t *testing.T) {
	step := []history.OpEvent{{Type: eventlog.StepCreated, CorrelationID: "step_1"}}
	ops := []history.Op{
		{Kind: history.OpAppend, Wrote: step},
		{Kind: history.OpAppend, Err: "conflict", Wrote: step},
		{Kind: history.OpAppend, Err: "refused", Wrote: []history.OpEvent{{Type: eventlog.RunStarted}}},
		{Kind: history.OpAppendFenced, Err: "fenced", Wrote: step},
		{Kind: history.OpAppend, Err: "duplicate"},
		{Kind: history.OpAppend, Err: "unavailable", Wrote: step},
		{Kind: history.OpList, Err: "conflict"},
	}
	for i, op := range ops {
		want := i >= 1 && i <= 4
		if got := forensics.IsRefusal(op); got != want {
			t.Errorf("op %d (%s %s): IsRefusal %v, want %v", i, op.Kind, op.Err, got, want)
		}
	}
	an := forensics.AnalyzeRun(forensics.RunInput{Scheme: eventlog.SchemeULID, Ops: ops})
	if an.Findings.Refused != 4 {
		t.Errorf("Refused = %d, want 4", an.Findings.Refused)
	}
}
