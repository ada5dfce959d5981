package storm

import (
	"errors"
	"fmt"

	"github.com/stormctl/stormctl/engine"
	"github.com/stormctl/stormctl/eventlog"
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
			switch f.Code {
			case engine.CodeCorrupted:
				return reports.Corrupted, f.Message
			case engine.CodeGap:
				return reports.Gap, f.Message
			}
			return reports.Failed, f.Code + ": " + f.Message
		}
	}
	if stats.InfraErrors > 0 {
		return reports.Infra, fmt.Sprintf("no terminal event; %d infrastructure errors", stats.InfraErrors)
	}
	return reports.Stuck, "no terminal event before the timeout"
}
