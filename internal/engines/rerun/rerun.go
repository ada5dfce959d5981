// Package rerun is what a runtime takes to re-execute one recorded
// invocation against a read-only world that serves the invocation's
// operations, and what comes back: the seam between replay (which builds
// the script from a stored run and reads the result) and an engine that
// replays through a real runtime (the devkit engine's published
// @workflow/core).
package rerun

import (
	"context"
	"encoding/json"
	"regexp"
	"time"

	"github.com/stormctl/stormctl/internal/eventlog"
	"github.com/stormctl/stormctl/internal/history"
)

// Runtime re-executes one recorded invocation through a real runtime
// (the devkit engine's published @workflow/core) against a read-only world
// that serves the invocation's operations: the replay of a run the model
// did not run.
type Runtime interface {
	Replay(ctx context.Context, inv RuntimeInvocation) (RuntimeResult, error)
}

// RuntimeInvocation is one recorded invocation as a runtime's replay
// world serves it.
type RuntimeInvocation struct {
	RunID string `json:"runId"`
	// Ops are its recorded operations, in order: a create's answer that
	// carried the log (a snapshot) is part of its create.
	Ops []RuntimeOp `json:"ops"`
	// Created is the run's run_created as the package listed it: the run
	// entity a run_started answers is built from it.
	Created json.RawMessage `json:"-"`
	// Clock is the runtime's clock at the start: its first operation's.
	Clock time.Time `json:"-"`
	// Recovery is the count of the replay divergences the delivery
	// carries (0: a plain delivery).
	Recovery int `json:"-"`
	// Scratch takes the calls past Ops into a scratch log (creates
	// answered with no event, lists with an empty page) instead of
	// leaving the record there: a prefix replay, which has no record of
	// what its invocation wrote.
	Scratch bool `json:"-"`
	// Started is when the run started (its first run_started's createdAt;
	// zero: unknown): the run entity a runs.get is answered with.
	Started time.Time `json:"-"`
	// Delivery is the invocation's recorded queue message, delivered
	// again as it was (nil: a plain one, {runId} and the recovery).
	Delivery *history.Delivery `json:"-"`
}

// RuntimeOp is one recorded operation of an invocation, with what the
// store answered: a list's page, or a create's event (the id the store
// minted), run entity and snapshot, or the store's error.
type RuntimeOp struct {
	Kind string `json:"kind"` // "list", "create" or "batch"
	// After is a list's cursor: the id of the event it reads after.
	After   string            `json:"after,omitempty"`
	Events  []json.RawMessage `json:"events,omitempty"`
	HasMore bool              `json:"hasMore,omitempty"`
	// EventType and CorrelationID name a create; Event is the event the
	// store answered (nil when it wrote none), StartedAt the run's
	// startedAt a run_started answered and Snapshot the log it carried.
	EventType     string           `json:"eventType,omitempty"`
	CorrelationID string           `json:"correlationId,omitempty"`
	Event         json.RawMessage  `json:"event,omitempty"`
	StartedAt     *float64         `json:"startedAt,omitempty"`
	Snapshot      *RuntimeSnapshot `json:"snapshot,omitempty"`
	// Start is when the runtime made the call (ms since the epoch), End
	// when it returned. Once an operation is served the replay's clock is
	// its End, where the runtime's next decisions were made at the
	// earliest, or the Start of the wait_completed the record shows it
	// writing before its next read: the wait was due by then (a decision
	// made late in the gap, on a busy host, replayed at its beginning
	// would find the wait not yet due; one replayed at the next call's
	// start whatever it is, a wait due that the runtime found not due).
	Start float64       `json:"start,omitempty"`
	End   float64       `json:"end"`
	Error *RuntimeError `json:"error,omitempty"`
	// StepCreated is, for a step event's create, the run's step_created
	// of that step as the package listed it: the step entity the store
	// answers carries its name and input, which a delivery that runs the
	// step (5.0) has read nowhere else.
	StepCreated json.RawMessage `json:"stepCreated,omitempty"`
	// Items are a batch's events (Kind "batch": one events.createBatch
	// call), in request order, each a create with its own answer (Event
	// or Error); a batch's own Error is the call's.
	Items []RuntimeOp `json:"items,omitempty"`
}

// RuntimeSnapshot is the log a create's answer carried.
type RuntimeSnapshot struct {
	Events  []json.RawMessage `json:"events"`
	HasMore bool              `json:"hasMore,omitempty"`
}

// RuntimeError is a store's error as the package threw it: the runtime
// tells them apart by name.
type RuntimeError struct {
	Name    string `json:"name"`
	Message string `json:"message"`
	// Status is the HTTP status a batch event's refusal carried (0: none
	// recorded).
	Status int `json:"status,omitempty"`
}

// RuntimeResult is what one replay through a runtime did.
type RuntimeResult struct {
	// Status is the flow handler's HTTP status, Body its error text.
	Status int    `json:"status"`
	Body   string `json:"body,omitempty"`
	// Done are the calls served, in order; Deviation the first that was
	// not the record's next (Op indexes RuntimeInvocation.Ops).
	Done      []RuntimeCall     `json:"done"`
	Deviation *RuntimeDeviation `json:"deviation"`
	// Divergence is the replay divergence the runtime reported: by queueing
	// a recovery replay, or (Terminal) by failing the run with
	// CORRUPTED_EVENT_LOG; Failed the run_failed it wrote, if any.
	Divergence *RuntimeDivergence `json:"divergence"`
	Failed     *RuntimeFailure    `json:"failed"`
	// Queued are the messages the replay queued (a step's, a recovery
	// replay's), in order; they go nowhere.
	Queued []RuntimeMessage `json:"queued"`
}

// RuntimeMessage is a message a replay queued.
type RuntimeMessage struct {
	Queue  string `json:"queue"`
	StepID string `json:"stepId,omitempty"`
}

// RuntimeCall is one call the replay world served.
type RuntimeCall struct {
	Op string `json:"op"` // "list" or "create"
	// At is the create's index in RuntimeInvocation.Ops; Item, for an
	// event of a batch (an op of Kind "batch"), its index in the batch's
	// Items.
	At            int             `json:"at"`
	Item          int             `json:"item,omitempty"`
	EventType     string          `json:"eventType,omitempty"`
	CorrelationID string          `json:"correlationId,omitempty"`
	EventData     json.RawMessage `json:"eventData,omitempty"`
}

// RuntimeDeviation is where a runtime's replay left its record.
type RuntimeDeviation struct {
	Op       int    `json:"op"`
	Recorded string `json:"recorded"`
	Replayed string `json:"replayed"`
}

// RuntimeDivergence is a replay divergence the runtime reported.
type RuntimeDivergence struct {
	Message  string `json:"message"`
	EventID  string `json:"eventId"`
	Terminal bool   `json:"terminal"`
}

// RuntimeFailure is a run_failed the replay wrote.
type RuntimeFailure struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// RuntimeRecoveries is the published runtime's recovery budget (core's
// REPLAY_DIVERGENCE_MAX_RETRIES, 3 in 4.8.9 and the 5.0 betas): an
// invocation that wrote the run's CORRUPTED_EVENT_LOG was the delivery
// carrying that many divergences.
const RuntimeRecoveries = 3

// LogInvocation is the invocation that replays a log as a store holds it
// (no record of what any invocation read): one delivery at the recovery
// budget (a divergence fails the run with the runtime's
// CORRUPTED_EVENT_LOG), whose run_started is answered with the run
// started at started and whose load reads events (the package's own copy
// of each); what it writes goes to a scratch log, and its clock is clock.
// created is the run's run_created as the package listed it.
func LogInvocation(runID string, created json.RawMessage, started, clock time.Time, events []json.RawMessage) RuntimeInvocation {
	at, end := millis(started), millis(clock)
	return RuntimeInvocation{RunID: runID, Created: created, Clock: clock, Recovery: RuntimeRecoveries, Scratch: true,
		Ops: []RuntimeOp{
			{Kind: "create", EventType: string(eventlog.RunStarted), StartedAt: &at, End: end},
			{Kind: "list", Events: events, End: end},
		}}
}

// millis is t in ms since the epoch, as the runtime's clock reads.
func millis(t time.Time) float64 { return float64(t.UnixMicro()) / 1000 }

// DivergentEvent is the event id a runtime's divergence message names
// ("... latest divergent event was evnt_…"), "" when it names none.
func DivergentEvent(msg string) string {
	if m := divergentEvent.FindStringSubmatch(msg); m != nil {
		return m[1]
	}
	return ""
}

var divergentEvent = regexp.MustCompile(`latest divergent event was (\S+?)\.?(\s|$)`)

// WorkflowSource is implemented by an opened runtime that can hand out
// the workflow code it executes (the scenario compiled for core's VM, the
// string its workflows bundle passes workflowEntrypoint): what a
// reproduction outside stormctl runs through the @workflow/core it
// installs.
type WorkflowSource interface {
	WorkflowCode(ctx context.Context) (string, error)
}
