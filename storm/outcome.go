package storm

import (
	"errors"
	"fmt"

	"github.com/stormctl/stormctl/engine"
	"github.com/stormctl/stormctl/eventlog"
	"github.com/stormctl/stormctl/forensics"
	"github.com/stormctl/stormctl/reports"
	"github.com/stormctl/stormctl/scenarios"
)

// decide reads a run's outcome off its final log, the way the engine team's
// driver does: the first terminal event in log order decides, a completed
// run's output is checked against its ledger.
func decide(sc scenarios.Scenario, final []eventlog.Event, readErr error, stats engine.RunStats) (reports.Outcome, string) {
	switch {
	case errors.Is(readErr, eventlog.ErrGap), errors.Is(readErr, eventlog.ErrDuplicate):
		return reports.Gap, readErr.Error()
	case readErr != nil:
		return reports.Infra, readErr.Error()
	}
	slots := forensics.ScanPositions(forensics.PositionsOf(final))
	if slots.SealRaces > 0 {
		return reports.Corrupted, fmt.Sprintf("slot %d holds a noop seal and a committed event at once: a seal raced a late commit and both are visible", slots.FirstSealRace)
	}
	var input []byte
	for _, e := range final {
		switch e.Type {
		case eventlog.RunCreated:
			input = e.Payload
		case eventlog.RunCompleted:
			out, err := engine.Output(e)
			if err != nil {
				return reports.Silent, fmt.Sprintf("unreadable output: %v", err)
			}
			if err := sc.Check(input, out); err != nil {
				return reports.Silent, err.Error()
			}
			return reports.Completed, ""
		case eventlog.RunFailed:
			f := engine.Failure(e)
			switch {
			case f.Code == engine.CodeCorrupted && f.Reason == engine.ReasonHole:
				return reports.Hole, f.Message
			case f.Code == engine.CodeCorrupted:
				return reports.Corrupted, f.Message
			case f.Code == engine.CodeGap:
				return reports.Gap, f.Message
			}
			return reports.Failed, f.Code + ": " + f.Message
		}
	}
	if slots.FirstGap > 0 && stats.HoleRefusals > 0 {
		return reports.Hole, fmt.Sprintf("no terminal event: loads stopped at empty slot %d below committed slot %d (%d refusals)", slots.FirstGap, slots.FirstGapAbove, stats.HoleRefusals)
	}
	if stats.InfraErrors > 0 {
		return reports.Infra, fmt.Sprintf("no terminal event; %d infrastructure errors", stats.InfraErrors)
	}
	return reports.Stuck, "no terminal event before the timeout"
}
