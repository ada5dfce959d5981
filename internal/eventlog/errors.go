package eventlog

import (
	"errors"
	"fmt"
)

// Sentinel errors; the typed errors below match them with errors.Is.
var (
	// ErrFenced: a fenced append was rejected because the log moved past the
	// writer's expected position.
	ErrFenced = errors.New("fenced append rejected")
	// ErrGap: a read found a hole in a positioned log (density assertion).
	ErrGap = errors.New("event log gap")
	// ErrDuplicate: a read found two events at one position.
	ErrDuplicate = errors.New("duplicate event position")
	// ErrConflict: an idempotency key of the draft is already taken.
	ErrConflict = errors.New("conflicting event")
	// ErrUnavailable: the store could not be reached. Infrastructure, never
	// counted as corruption.
	ErrUnavailable = errors.New("store unavailable")
	// ErrNoRun: the run does not exist in the world.
	ErrNoRun = errors.New("no such run")
	// ErrHole: a read under the slot scheme found an empty slot below a
	// committed one and refused to replay across it.
	ErrHole = errors.New("event log hole")
	// ErrSealed: a write's reserved slot was sealed (filled with a noop)
	// before the write committed; nothing of the write is visible.
	ErrSealed = errors.New("slot sealed")
	// ErrRefused: the store refused the event as invalid where it stands:
	// the state of its run, step, hook or wait does not allow it, or the
	// store has no such event (the devkit worlds, whose packages validate
	// every event). Not a conflict on a key, and not infrastructure.
	ErrRefused = errors.New("event refused by the store")
)

// FencedError is a rejected fenced append: the writer expected the log to hold
// Expected events (or, for a decisions-only fence, no decision past it), and it
// held Actual.
//
// InBand marks spec 9's refusal (FenceInBand): the counts are the run's
// in-band counts, and the writer was superseded (upstream's
// InBandSupersededError, HTTP 412).
type FencedError struct {
	RunID    string
	Expected int64
	Actual   int64
	InBand   bool
}

func (e *FencedError) Error() string {
	if e.InBand {
		return fmt.Sprintf("run %s: in-band write superseded: expected in-band count %d, run at %d", e.RunID, e.Expected, e.Actual)
	}
	return fmt.Sprintf("run %s: fenced append rejected: expected seq %d, log at %d", e.RunID, e.Expected, e.Actual)
}

// Is makes errors.Is(err, ErrFenced) true.
func (e *FencedError) Is(target error) bool { return target == ErrFenced }

// GapError names the first hole a density check found.
type GapError struct {
	RunID string
	// Want is the seq that should have come next; Got is the one that did.
	Want, Got int64
}

func (e *GapError) Error() string {
	if e.Got == 0 {
		return fmt.Sprintf("run %s: event log gap: want seq %d, got an unpositioned event", e.RunID, e.Want)
	}
	return fmt.Sprintf("run %s: event log gap: want seq %d, got %d", e.RunID, e.Want, e.Got)
}

// Is makes errors.Is(err, ErrGap) true.
func (e *GapError) Is(target error) bool { return target == ErrGap }

// DuplicateError names the first position a density check found twice.
type DuplicateError struct {
	RunID string
	Seq   int64
}

func (e *DuplicateError) Error() string {
	return fmt.Sprintf("run %s: duplicate event position: seq %d appears twice", e.RunID, e.Seq)
}

// Is makes errors.Is(err, ErrDuplicate) true.
func (e *DuplicateError) Is(target error) bool { return target == ErrDuplicate }

// ConflictError names the idempotency key a draft collided on.
type ConflictError struct {
	RunID string
	Key   string
}

func (e *ConflictError) Error() string {
	return fmt.Sprintf("run %s: conflicting event: key %s already taken", e.RunID, e.Key)
}

// Is makes errors.Is(err, ErrConflict) true.
func (e *ConflictError) Is(target error) bool { return target == ErrConflict }

// HoleError names the first empty slot a read found below a committed one.
type HoleError struct {
	RunID string
	// Slot is the empty position; Above is the committed one the read saw
	// past it.
	Slot, Above int64
}

func (e *HoleError) Error() string {
	return fmt.Sprintf("run %s: event log hole: slot %d is empty below committed slot %d; replay refuses to cross it", e.RunID, e.Slot, e.Above)
}

// Is makes errors.Is(err, ErrHole) true.
func (e *HoleError) Is(target error) bool { return target == ErrHole }

// SealedError is a write whose reserved slot was sealed before it committed.
type SealedError struct {
	RunID string
	Slot  int64
}

func (e *SealedError) Error() string {
	return fmt.Sprintf("run %s: slot %d was sealed with a noop before this write committed; the write is void", e.RunID, e.Slot)
}

// Is makes errors.Is(err, ErrSealed) true.
func (e *SealedError) Is(target error) bool { return target == ErrSealed }

// RefusedError is an event the store refused (ErrRefused): Reason is the
// store's own word for why (an error name such as HookNotFoundError), and
// Message its explanation.
type RefusedError struct {
	RunID   string
	Type    Type
	Reason  string
	Message string
}

func (e *RefusedError) Error() string {
	return fmt.Sprintf("run %s: %s refused by the store: %s: %s", e.RunID, e.Type, e.Reason, e.Message)
}

// Is makes errors.Is(err, ErrRefused) true.
func (e *RefusedError) Is(target error) bool { return target == ErrRefused }

// Unavailable wraps an infrastructure error so that errors.Is(err,
// ErrUnavailable) holds and the cause stays reachable.
func Unavailable(op string, cause error) error {
	return &unavailableError{op: op, cause: cause}
}

type unavailableError struct {
	op    string
	cause error
}

func (e *unavailableError) Error() string {
	return fmt.Sprintf("%s: store unavailable: %v", e.op, e.cause)
}
func (e *unavailableError) Unwrap() error        { return e.cause }
func (e *unavailableError) Is(target error) bool { return target == ErrUnavailable }

// Classify names the class of an error the way history and reports record it:
// "fenced", "conflict", "gap", "duplicate", "hole", "sealed", "refused",
// "unavailable", "no_run", "other", or "" for nil.
func Classify(err error) string {
	switch {
	case err == nil:
		return ""
	case errors.Is(err, ErrFenced):
		return "fenced"
	case errors.Is(err, ErrConflict):
		return "conflict"
	case errors.Is(err, ErrGap):
		return "gap"
	case errors.Is(err, ErrDuplicate):
		return "duplicate"
	case errors.Is(err, ErrHole):
		return "hole"
	case errors.Is(err, ErrSealed):
		return "sealed"
	case errors.Is(err, ErrRefused):
		return "refused"
	case errors.Is(err, ErrUnavailable):
		return "unavailable"
	case errors.Is(err, ErrNoRun):
		return "no_run"
	}
	return "other"
}

// Recorded is a store's error as a history records it: its class
// (Classify), its text, and the positions a fenced rejection, a hole or a
// sealed slot named.
type Recorded struct {
	Class, Text      string
	Expected, Actual int64
	Slot, Above      int64
}

// Err rebuilds the error, for a replay to answer it again: its text is
// the recorded one, Classify puts it in its class, and errors.As finds the
// typed error of a fenced rejection, a hole or a sealed slot with its
// positions. The empty class is no error.
func (r Recorded) Err() error {
	var typed error
	switch r.Class {
	case "":
		return nil
	case "fenced":
		typed = &FencedError{Expected: r.Expected, Actual: r.Actual}
	case "hole":
		typed = &HoleError{Slot: r.Slot, Above: r.Above}
	case "sealed":
		typed = &SealedError{Slot: r.Slot}
	default:
		typed = map[string]error{"conflict": ErrConflict, "gap": ErrGap, "duplicate": ErrDuplicate,
			"refused": ErrRefused, "unavailable": ErrUnavailable, "no_run": ErrNoRun}[r.Class]
	}
	return &recordedError{text: r.Text, typed: typed}
}

// recordedError is a rebuilt error: the recorded text over the typed
// error of its class (nil for "other").
type recordedError struct {
	text  string
	typed error
}

func (e *recordedError) Error() string { return e.text }
func (e *recordedError) Unwrap() error { return e.typed }
