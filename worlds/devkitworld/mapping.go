package devkitworld

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/stormctl/stormctl/internal/eventlog"
)

// PackageEvent is an event as the World packages take and give it
// (@workflow/world's CreateEventSchema and EventSchema): the one wire shape
// of a package's event, which this package maps stormctl's events onto
// (toPackage, fromPackage: the model's payloads in an envelope) and the
// devkit engine maps the published runtime's own events from.
type PackageEvent struct {
	EventType     string          `json:"eventType"`
	CorrelationID string          `json:"correlationId,omitempty"`
	EventData     json.RawMessage `json:"eventData,omitempty"`
	RunID         string          `json:"runId,omitempty"`
	EventID       string          `json:"eventId,omitempty"`
	CreatedAt     time.Time       `json:"createdAt,omitzero"`
}

// envelope carries a draft's payload and dedup value in the field the
// package keeps as opaque user data (a step's input and result, a hook's
// metadata and payloads, a run's input, output and error): the package
// stores it as it is, and only there can a payload round-trip.
type envelope struct {
	Payload json.RawMessage `json:"payload,omitempty"`
	Dedup   string          `json:"dedup,omitempty"`
}

// opaqueField names, per event type, the package's field of opaque user data.
var opaqueField = map[eventlog.Type]string{
	eventlog.RunCreated:    "input",
	eventlog.RunCompleted:  "output",
	eventlog.RunFailed:     "error",
	eventlog.StepCreated:   "input",
	eventlog.StepCompleted: "result",
	eventlog.StepFailed:    "error",
	eventlog.HookCreated:   "metadata",
	eventlog.HookReceived:  "payload",
}

// The package's event types that carry no opaque data: only what the
// package itself keeps round-trips.
var (
	bare      = map[eventlog.Type]bool{eventlog.StepStarted: true, eventlog.HookDisposed: true}
	waitTypes = map[eventlog.Type]bool{eventlog.WaitCreated: true, eventlog.WaitCompleted: true}
)

// workflowName names stormctl's runs to the package (run_created requires
// one, and a deployment id); a run whose workflow is named
// (eventlog.Run.Workflow, the scenario) is WorkflowName of it.
const workflowName = "stormctl"

// WorkflowName is the package's workflowName of a stormctl run of
// workflow (the scenario): "stormctl/<workflow>", or "stormctl" when the
// writer named none. ScenarioOf reads it back.
func WorkflowName(workflow string) string {
	if workflow == "" {
		return workflowName
	}
	return workflowName + "/" + workflow
}

// ScenarioOf reads the scenario off a run's workflowName as WorkflowName
// writes it; ok is false for another name (the published runtime's, an
// application's) and for a bare "stormctl", which names none.
func ScenarioOf(name string) (string, bool) {
	s, ok := strings.CutPrefix(name, workflowName+"/")
	if !ok || s == "" {
		return "", false
	}
	return s, true
}

// Tokens are per run in stormctl and global in the packages (a hook is
// resumed by its token alone), so a token is scoped by its run on the way in
// and unscoped on the way out.
func scopeToken(runID, token string) string { return runID + ":" + token }

func unscopeToken(runID, token string) string {
	t, _ := strings.CutPrefix(token, runID+":")
	return t
}

// toPackage maps a draft of a run of workflow onto the package's event, or refuses a draft the
// package cannot hold with an *eventlog.RefusedError.
func toPackage(runID, workflow string, d eventlog.Draft) (PackageEvent, error) {
	pe := PackageEvent{EventType: string(d.Type), CorrelationID: d.CorrelationID}
	refuse := func(why string) error {
		return &eventlog.RefusedError{RunID: runID, Type: d.Type, Reason: "unrepresentable", Message: why}
	}
	data := map[string]any{}
	if f, ok := opaqueField[d.Type]; ok {
		data[f] = envelope{Payload: d.Payload, Dedup: d.Dedup}
	}
	switch {
	case d.Type == eventlog.RunCreated:
		data["deploymentId"], data["workflowName"] = workflowName, WorkflowName(workflow)
		pe.CorrelationID = ""
	case d.Type == eventlog.StepCreated:
		data["stepName"] = stepName(d)
	case d.Type == eventlog.HookCreated:
		data["token"] = scopeToken(runID, d.Token)
	case bare[d.Type]:
		if len(d.Payload) > 0 || d.Dedup != "" {
			return pe, refuse(fmt.Sprintf("the package's %s carries no payload or dedup value", d.Type))
		}
	case waitTypes[d.Type]:
		if d.Dedup != "" {
			return pe, refuse(fmt.Sprintf("the package's %s carries no dedup value", d.Type))
		}
		at, ok, err := resumeAt(d.Payload)
		switch {
		case err != nil:
			return pe, refuse(err.Error())
		case ok:
			data["resumeAt"] = at
		case d.Type == eventlog.WaitCreated:
			return pe, refuse("the package's wait_created needs a resumeAt")
		}
	case opaqueField[d.Type] == "":
		return pe, refuse(fmt.Sprintf("the package has no %s event", d.Type))
	}
	if len(data) > 0 {
		b, err := json.Marshal(data)
		if err != nil {
			return pe, fmt.Errorf("devkit: encode %s: %w", d.Type, err)
		}
		pe.EventData = b
	}
	return pe, nil
}

// stepName is the package's stepName of a step_created draft: the "name" of
// its payload (the engine's), else its correlation id.
func stepName(d eventlog.Draft) string {
	var p struct {
		Name string `json:"name"`
	}
	if json.Unmarshal(d.Payload, &p) == nil && p.Name != "" {
		return p.Name
	}
	return d.CorrelationID
}

// resumeAt reads a wait payload's resumeAt (the only field of it the package
// keeps).
func resumeAt(payload json.RawMessage) (string, bool, error) {
	if len(bytes.TrimSpace(payload)) == 0 {
		return "", false, nil
	}
	var p struct {
		ResumeAt *time.Time `json:"resumeAt"`
	}
	if err := json.Unmarshal(payload, &p); err != nil {
		return "", false, fmt.Errorf("wait payload: %v", err)
	}
	if p.ResumeAt == nil {
		return "", false, nil
	}
	return p.ResumeAt.UTC().Format(time.RFC3339Nano), true, nil
}

// EventOf maps an event as world-postgres stores it (its row's id, type,
// correlation id and eventData as JSON) back onto stormctl's, under run
// runID, as the devkit worlds read what the package's events.list gives
// them: a payload stormctl wrote comes back as it was written.
func EventOf(runID, id, typ, corr string, data json.RawMessage) (eventlog.Event, error) {
	return fromPackage(runID, PackageEvent{EventID: id, EventType: typ, CorrelationID: corr, EventData: data, RunID: runID})
}

// fromPackage maps a package event back onto stormctl's, under its run id.
func fromPackage(runID string, pe PackageEvent) (eventlog.Event, error) {
	e := eventlog.Event{RunID: runID, ID: pe.EventID, Type: eventlog.Type(pe.EventType), CorrelationID: pe.CorrelationID}
	if at, err := eventlog.MintTime(pe.EventID); err == nil {
		e.MintedAt = at
	} else {
		return e, fmt.Errorf("devkit: event id %q is not a prefixed ULID: %w", pe.EventID, err)
	}
	var data map[string]json.RawMessage
	if len(pe.EventData) > 0 && string(pe.EventData) != "null" {
		if err := json.Unmarshal(pe.EventData, &data); err != nil {
			return e, fmt.Errorf("devkit: event %s: eventData: %w", pe.EventID, err)
		}
	}
	if f, ok := opaqueField[e.Type]; ok {
		var env envelope
		if raw := data[f]; len(raw) > 0 {
			if err := json.Unmarshal(raw, &env); err != nil {
				return e, fmt.Errorf("devkit: event %s: %s: %w", pe.EventID, f, err)
			}
		}
		e.Payload, e.Dedup = env.Payload, env.Dedup
	}
	switch e.Type {
	case eventlog.HookCreated:
		var tok string
		_ = json.Unmarshal(data["token"], &tok)
		e.Token = unscopeToken(runID, tok)
	case eventlog.HookConflict:
		var c struct {
			Token            string `json:"token"`
			ConflictingRunID string `json:"conflictingRunId,omitempty"`
		}
		_ = json.Unmarshal(pe.EventData, &c)
		e.Token = unscopeToken(runID, c.Token)
		c.Token = e.Token
		e.Payload, _ = json.Marshal(c)
	case eventlog.WaitCreated, eventlog.WaitCompleted:
		if raw, ok := data["resumeAt"]; ok {
			e.Payload, _ = json.Marshal(map[string]json.RawMessage{"resumeAt": raw})
		}
	}
	return e, nil
}
