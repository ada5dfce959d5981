package storm

import (
	"github.com/stormctl/stormctl/eventlog"
	"github.com/stormctl/stormctl/explain"
	"github.com/stormctl/stormctl/reports"
	"github.com/stormctl/stormctl/scenarios"
	"github.com/stormctl/stormctl/worlds"
)

// ExplainInput is what explaining a run of condition cond and scenario sc
// needs: the run's record, final log and history, and the condition's
// knobs for the reference replay.
func ExplainInput(cond Condition, sc scenarios.Scenario, rec reports.RunRecord, final []eventlog.Event, ops []worlds.Op) explain.Input {
	return explain.Input{
		RunID: rec.RunID, Cell: reports.CellKey{World: rec.World, Scenario: rec.Scenario, Condition: rec.Condition}.String(),
		Outcome: string(rec.Outcome), Detail: rec.Detail,
		Scheme: cond.Knobs.Scheme, Program: sc.Program, IDs: cond.Knobs.IDs, Wake: cond.Knobs.Wake,
		Final: final, Ops: ops, StoreCommitTimes: rec.CommitSource == "store", Ended: rec.Ended,
	}
}
