package eventlog

import (
	"fmt"
	"slices"
	"strings"
)

// Type is an event type of the Workflow DevKit event log.
type Type string

// The event types stormctl writes and reads.
const (
	RunCreated    Type = "run_created"
	RunCompleted  Type = "run_completed"
	RunFailed     Type = "run_failed"
	StepCreated   Type = "step_created"
	StepStarted   Type = "step_started"
	StepCompleted Type = "step_completed"
	StepFailed    Type = "step_failed"
	HookCreated   Type = "hook_created"
	HookReceived  Type = "hook_received"
	HookDisposed  Type = "hook_disposed"
	WaitCreated   Type = "wait_created"
	WaitCompleted Type = "wait_completed"
	AttrSet       Type = "attr_set"
	// Noop is a seal (spec 7): written into an empty slot by a reader that
	// waited on it. It carries no workflow meaning; replay steps over it.
	Noop Type = "noop"
	// HookConflict is written by a store in place of a hook_created whose
	// token another hook already holds, as the Workflow DevKit's storage
	// packages do (the devkit worlds): the hook counts as created, and
	// whatever awaits its payloads fails. No writer drafts it.
	HookConflict Type = "hook_conflict"
)

// RunStarted is the runtime's lifecycle fact that a run began executing
// (@workflow/core writes it on a run's first invocation). stormctl never
// writes it, so it is not among Types: a replay meets it only in a log the
// real runtime wrote, and steps over it (no workflow meaning).
const RunStarted Type = "run_started"

var allTypes = []Type{
	RunCreated, RunCompleted, RunFailed,
	StepCreated, StepStarted, StepCompleted, StepFailed,
	HookCreated, HookReceived, HookDisposed,
	WaitCreated, WaitCompleted, AttrSet, Noop, HookConflict,
}

// Types returns every known event type, decisions and facts alike.
func Types() []Type { return slices.Clone(allTypes) }

// IsDecision reports whether events of this type encode a decision a replaying
// invocation derived from a log prefix (fenced under event_{seq}), as opposed to
// a fact about the world (accepted unfenced).
func (t Type) IsDecision() bool {
	switch t {
	case RunCreated, StepCreated, HookCreated, HookDisposed, WaitCreated, AttrSet, RunCompleted, RunFailed:
		return true
	}
	return false
}

// IsTerminal reports whether the event ends its run.
func (t Type) IsTerminal() bool { return t == RunCompleted || t == RunFailed }

// Valid reports whether t is a known event type.
func (t Type) Valid() bool { return slices.Contains(allTypes, t) }

// Class names the write class of the type: "decision" or "fact".
func (t Type) Class() string {
	if t.IsDecision() {
		return "decision"
	}
	return "fact"
}

// ParseType parses an event type name, naming the valid ones on failure.
func ParseType(s string) (Type, error) {
	t := Type(s)
	if !t.Valid() {
		names := make([]string, len(allTypes))
		for i, v := range allTypes {
			names[i] = string(v)
		}
		return "", fmt.Errorf("unknown event type %q (valid: %s)", s, strings.Join(names, ", "))
	}
	return t, nil
}

// Scheme is how a run's log is ordered and cursored.
type Scheme string

// The ordering schemes under test.
const (
	// SchemeULID is the legacy contract: an id minted before commit is the
	// sort key, the cursor and the identity.
	SchemeULID Scheme = "ulid"
	// SchemeSeq is event_{seq}: a dense per-run position assigned at commit.
	SchemeSeq Scheme = "seq"
	// SchemeSequence is a non-transactional database sequence (bigserial):
	// seed gotcha 1, which reproduces the bug with a number on it.
	SchemeSequence Scheme = "sequence"
	// SchemeSlot is slot identity (spec 6, with spec 7's seals): the world
	// reserves an event's dense per-run position when its write starts (the
	// id is SlotID(position)) and commits the event there after the write's
	// window, so reserved-but-uncommitted slots exist. A reader that finds
	// an empty slot below a committed one refuses the load (ErrHole) unless
	// a seal (a Noop) fills it.
	SchemeSlot Scheme = "slot"
)

// Schemes returns every scheme name.
func Schemes() []Scheme { return []Scheme{SchemeULID, SchemeSeq, SchemeSequence, SchemeSlot} }

// Positioned reports whether events of the scheme carry a seq that orders them.
func (s Scheme) Positioned() bool {
	return s == SchemeSeq || s == SchemeSequence || s == SchemeSlot
}

// ParseScheme parses a scheme name, naming the valid ones on failure.
func ParseScheme(s string) (Scheme, error) {
	for _, v := range Schemes() {
		if string(v) == s {
			return v, nil
		}
	}
	names := make([]string, 0, len(Schemes()))
	for _, v := range Schemes() {
		names = append(names, string(v))
	}
	return "", fmt.Errorf("unknown scheme %q (valid: %s)", s, strings.Join(names, ", "))
}
