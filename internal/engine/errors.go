package engine

import (
	"errors"
	"fmt"
)

// Error codes a run can fail with (the run_failed payload's code).
const (
	// CodeCorrupted is the engine's verdict after the recovery budget.
	CodeCorrupted = "CORRUPTED_EVENT_LOG"
	// CodeGap is a density assertion that failed on load.
	CodeGap = "EVENT_LOG_GAP"
	// CodeWorkflow is an error returned by the workflow program itself.
	CodeWorkflow = "WORKFLOW_ERROR"
)

// ReasonHole is the reason of a CORRUPTED_EVENT_LOG failure that a hole
// caused (slot scheme, no seals): a load kept meeting an empty slot below a
// committed one for the whole recovery budget, and the engine refused to
// replay across it.
const ReasonHole = "hole"

// ErrDivergence matches every *DivergenceError.
var ErrDivergence = errors.New("replay divergence")

// DivergenceError is a replay that disagreed with the log, in the message
// shapes of the engine (see DOMAIN.md).
type DivergenceError struct {
	// Kind is a short stable name: "step_name", "not_in_queue",
	// "unconsumed", "hook_token", "wait_duration", "unexpected_type",
	// "attr_key".
	Kind          string
	EventType     string
	CorrelationID string
	Msg           string
	// Index is the position in the replayed log of the event that diverged.
	Index int
}

func (e *DivergenceError) Error() string { return "replay divergence: " + e.Msg }

// Is makes errors.Is(err, ErrDivergence) true.
func (e *DivergenceError) Is(target error) bool { return target == ErrDivergence }

func diverge(kind, typ, corr, format string, a ...any) *DivergenceError {
	return &DivergenceError{Kind: kind, EventType: typ, CorrelationID: corr, Msg: fmt.Sprintf(format, a...)}
}
