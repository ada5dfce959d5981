package pipeline

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/stormctl/stormctl/forensics"
	"github.com/stormctl/stormctl/internal/engine"
	"github.com/stormctl/stormctl/internal/eventlog"
	"github.com/stormctl/stormctl/internal/history"
	"github.com/stormctl/stormctl/scenarios"
)

// InfraWindow is how close to its end a run without a terminal event must
// have met its last unavailable store to be infra. The engine retries an
// unreachable store after at most 6.4 s (its longest backoff), and an
// operation comes back unavailable within 60 s (the vercel world's request
// timeout; postgres's connect timeout is 10 s), so a run still held up by
// the store at its end met it within the window. A run whose last such
// error is older, or whose store answered any operation after it, was not
// stopped by the store: it is stuck.
const InfraWindow = 90 * time.Second

// decide reads a run's outcome off its final log, the way the engine team's
// driver does: the first terminal event in log order decides, a completed
// run's output is checked against its ledger. A run without one is judged
// on the evidence at its end (ended): see stoppedOnUnavailable.
func decide(sc scenarios.Scenario, final []eventlog.Event, readErr error, stats history.RunStats, ended time.Time) (history.Outcome, string) {
	switch {
	case errors.Is(readErr, eventlog.ErrGap), errors.Is(readErr, eventlog.ErrDuplicate):
		return history.Gap, readErr.Error()
	case errors.Is(readErr, eventlog.ErrUnavailable), errors.Is(readErr, context.DeadlineExceeded):
		// readFinal waits out an outage for 30 s: the store did not answer.
		return history.Infra, readErr.Error()
	case readErr != nil:
		return history.Failed, "read the final log: " + readErr.Error()
	}
	slots := forensics.ScanPositions(forensics.PositionsOf(final))
	if slots.SealRaces > 0 {
		return history.Corrupted, fmt.Sprintf("slot %d holds a noop seal and a committed event at once: a seal raced a late commit and both are visible", slots.FirstSealRace)
	}
	var input []byte
	for _, e := range final {
		switch e.Type {
		case eventlog.RunCreated:
			input = e.Payload
		case eventlog.RunCompleted:
			out, err := engine.Output(e)
			if err != nil {
				return history.Silent, fmt.Sprintf("unreadable output: %v", err)
			}
			if err := sc.Check(input, out); err != nil {
				return history.Silent, err.Error()
			}
			return history.Completed, ""
		case eventlog.RunFailed:
			f := engine.Failure(e)
			switch {
			case f.Code == engine.CodeCorrupted && f.Reason == engine.ReasonHole:
				return history.Hole, f.Message
			case f.Code == engine.CodeCorrupted:
				return history.Corrupted, f.Message
			case f.Code == engine.CodeGap:
				return history.Gap, f.Message
			}
			return history.Failed, f.Code + ": " + f.Message
		}
	}
	if slots.FirstGap > 0 && stats.HoleRefusals > 0 {
		return history.Hole, fmt.Sprintf("no terminal event: loads stopped at empty slot %d below committed slot %d (%d refusals)", slots.FirstGap, slots.FirstGapAbove, stats.HoleRefusals)
	}
	if stats.Unrecognised > 0 {
		return history.Failed, fmt.Sprintf("no terminal event; unrecognised errors: %d, the first: %s", stats.Unrecognised, stats.UnrecognisedErr)
	}
	if stoppedOnUnavailable(stats, ended) {
		return history.Infra, fmt.Sprintf("no terminal event; the store was unavailable at the end: the last error, %s before it, was %s, and no operation succeeded after it",
			ended.Sub(stats.LastUnavailable).Round(time.Millisecond), stats.LastUnavailableErr)
	}
	if !stats.LastUnavailable.IsZero() {
		return history.Stuck, fmt.Sprintf("no terminal event before the timeout, not for the store: its last unavailable error was %s before the end%s (infrastructure errors: %d)",
			ended.Sub(stats.LastUnavailable).Round(time.Millisecond), answeredAfter(stats), stats.InfraErrors)
	}
	return history.Stuck, "no terminal event before the timeout"
}

// stoppedOnUnavailable says a run stopped making progress on an unavailable
// store: its last store error before ended was eventlog.ErrUnavailable, no
// later than InfraWindow before ended, and the store answered none of its
// operations after it.
func stoppedOnUnavailable(stats history.RunStats, ended time.Time) bool {
	last := stats.LastUnavailable
	return !last.IsZero() && ended.Sub(last) <= InfraWindow && !stats.LastStoreOK.After(last)
}

// answeredAfter says, for a stuck run's detail, that the store answered
// after its last unavailable error, when it did.
func answeredAfter(stats history.RunStats) string {
	if stats.LastStoreOK.After(stats.LastUnavailable) {
		return ", the store answering after it"
	}
	return ""
}
