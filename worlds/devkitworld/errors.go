package devkitworld

import (
	"errors"
	"fmt"
	"strings"

	"github.com/stormctl/stormctl/internal/eventlog"
	"github.com/stormctl/stormctl/worlds/devkitworld/sidecar"
)

// ErrNoFence is returned by AppendFenced: the published packages implement
// the legacy contract, which has no fence. A storm refuses the conditions
// that need one before anything runs (Entry.Limits.Fence).
var ErrNoFence = errors.New("the Workflow DevKit package has no fenced append (legacy contract: scheme ulid, fence none)")

// ErrNoNode is returned when node or npm is missing.
var ErrNoNode = sidecar.ErrNoNode

// ErrInstall is returned when npm could not install the published packages.
var ErrInstall = sidecar.ErrInstall

// refusals are the package's error classes for an event its entity's state
// does not allow (@workflow/errors), and the validation errors of its
// schemas and ids.
var refusals = map[string]bool{
	"HookNotFoundError": true, "RunExpiredError": true, "TooEarlyError": true,
	"RunNotSupportedError": true, "WorkflowRunNotFoundError": true, "WorkflowWorldError": true,
	"ZodError": true, "UnsafeEntityIdError": true,
}

// Classify maps what the sidecar (or a runtime host) said about draft d to stormctl's errors:
// the package's EntityConflictError is a conflict on the draft's key, its
// other refusals are an *eventlog.RefusedError, a dropped connection, a
// server's 5xx or a gone sidecar is infrastructure
// (eventlog.ErrUnavailable), anything else stays the error it is.
func Classify(op, runID string, d *eventlog.Draft, err error) error {
	var se *sidecar.Error
	switch {
	case err == nil:
		return nil
	case errors.Is(err, sidecar.ErrExited):
		return eventlog.Unavailable("devkit "+op, err)
	case !errors.As(err, &se):
		return err
	case se.Status >= 500:
		// A server's answer (devkit-vercel's backend): unreachable store,
		// a write cancelled in its window, or (501) a request the
		// emulation does not implement, which the message names.
		return eventlog.Unavailable("devkit "+op, se)
	case se.Name == "EntityConflictError":
		key := ""
		if d != nil {
			key = d.Keys()[0]
		}
		return fmt.Errorf("%w (the package: %s)", &eventlog.ConflictError{RunID: runID, Key: key}, se.Message)
	case refusals[se.Name] || (se.Status >= 400 && se.Status < 500):
		typ := eventlog.Type("")
		if d != nil {
			typ = d.Type
		}
		return &eventlog.RefusedError{RunID: runID, Type: typ, Reason: se.Name, Message: se.Message}
	case unavailableCode(se.Code):
		return eventlog.Unavailable("devkit "+op, se)
	}
	return se
}

// unavailableCode reports whether a system or PostgreSQL error code means
// the store could not be reached: a refused or reset connection, or a
// server shutting down (PostgreSQL classes 08 and 57P).
func unavailableCode(code string) bool {
	switch code {
	case "ECONNREFUSED", "ECONNRESET", "EPIPE", "ETIMEDOUT", "EHOSTUNREACH", "ENOTFOUND",
		"TRANSPORT", "TIMEOUT", // world-vercel's transport failures and timeouts
		"STREAM_ERROR": // world-vercel 5.0's transport failures of its v4 events requests (a StreamError)
		return true
	}
	return strings.HasPrefix(code, "08") || strings.HasPrefix(code, "57P")
}
