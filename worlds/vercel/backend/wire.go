package backend

import (
	"fmt"
	"slices"
	"sort"
	"time"
)

// Meta is the CBOR meta of a v4 POST frame, as world-vercel 4.7.4 builds it
// (buildPostFrameMeta): the event's type and correlation id, the request's
// context, and the fields of its eventData that are not its payload.
type Meta struct {
	EventType         string         `cbor:"eventType" json:"eventType"`
	SpecVersion       int            `cbor:"specVersion" json:"specVersion"`
	CorrelationID     string         `cbor:"correlationId,omitempty" json:"correlationId,omitempty"`
	VercelID          string         `cbor:"vercelId,omitempty" json:"vercelId,omitempty"`
	OccurredAt        *time.Time     `cbor:"occurredAt,omitempty" json:"occurredAt,omitempty"`
	RemoteRefBehavior string         `cbor:"remoteRefBehavior,omitempty" json:"remoteRefBehavior,omitempty"`
	DeploymentID      string         `cbor:"deploymentId,omitempty" json:"deploymentId,omitempty"`
	WorkflowName      string         `cbor:"workflowName,omitempty" json:"workflowName,omitempty"`
	StepName          string         `cbor:"stepName,omitempty" json:"stepName,omitempty"`
	Attempt           *int           `cbor:"attempt,omitempty" json:"attempt,omitempty"`
	ResumeAt          *time.Time     `cbor:"resumeAt,omitempty" json:"resumeAt,omitempty"`
	RetryAfter        *time.Time     `cbor:"retryAfter,omitempty" json:"retryAfter,omitempty"`
	HookToken         string         `cbor:"hookToken,omitempty" json:"hookToken,omitempty"`
	HookIsWebhook     *bool          `cbor:"hookIsWebhook,omitempty" json:"hookIsWebhook,omitempty"`
	ErrorCode         string         `cbor:"errorCode,omitempty" json:"errorCode,omitempty"`
	Error             any            `cbor:"error,omitempty" json:"error,omitempty"`
	Stack             string         `cbor:"stack,omitempty" json:"stack,omitempty"`
	ExecutionContext  map[string]any `cbor:"executionContext,omitempty" json:"executionContext,omitempty"`
	StateUpdatedAt    any            `cbor:"stateUpdatedAt,omitempty" json:"stateUpdatedAt,omitempty"`

	// The event fields world-vercel 5.0 betas add (slot contract only:
	// slotMetaFields): kept with the event and answered in its eventData
	// or its entity, as world-local 5.0 keeps them.

	// HookIsSystem and HookTokenRetentionUntil are a hook_created's
	// eventData isSystem and tokenRetentionUntil.
	HookIsSystem            *bool      `cbor:"hookIsSystem,omitempty" json:"hookIsSystem,omitempty"`
	HookTokenRetentionUntil *time.Time `cbor:"hookTokenRetentionUntil,omitempty" json:"hookTokenRetentionUntil,omitempty"`
	// OwnerMessageID is a step_started's inline-ownership stamp (the queue
	// message running the step's body), re-emitted on every read of it.
	OwnerMessageID string `cbor:"ownerMessageId,omitempty" json:"ownerMessageId,omitempty"`
	// CancelReason is a run_cancelled's eventData cancelReason.
	CancelReason string `cbor:"cancelReason,omitempty" json:"cancelReason,omitempty"`
	// EncryptionPublicKey is a run_created's (or a resilient run_started's)
	// eventData encryptionPublicKey, kept on the run entity.
	EncryptionPublicKey string `cbor:"encryptionPublicKey,omitempty" json:"encryptionPublicKey,omitempty"`
	// ResumeID and ResumePayloadDigest are a lazy hook resume's
	// (hook_received): the (runId, resumeId) constraint makes the
	// deliveries of one resume converge on one event, which carries
	// resumeId on every read of it.
	ResumeID            string `cbor:"resumeId,omitempty" json:"resumeId,omitempty"`
	ResumePayloadDigest string `cbor:"resumePayloadDigest,omitempty" json:"resumePayloadDigest,omitempty"`
}

// Request is what a world-vercel 5.0 beta frame's meta says about the
// request rather than the event (slot contract only; never stored).
type Request struct {
	// SinceCursor asks for the log after the writer's cursor on the answer
	// (events, cursor, hasMore), as events.list from it would return.
	SinceCursor *string `cbor:"sinceCursor,omitempty"`
	// SkipPreload: a run_started answered without the run's log (a
	// materialized CBOR answer instead of a frame stream).
	SkipPreload bool `cbor:"skipPreload,omitempty"`
	// MaxSlot is the highest slot the writer had loaded: an answer whose
	// event landed higher reports the events on the slots between.
	MaxSlot *int64 `cbor:"maxSlot,omitempty"`
	// ViaStepDispatch marks a step_created as a queue consumer's re-ensure
	// (advisory: a backend MAY refuse it 410 after a 412 it recorded; this
	// one records no 412, so it is read and has no effect).
	ViaStepDispatch bool `cbor:"viaStepDispatch,omitempty"`
	// ComputeInstanceID attributes the write to a compute instance
	// (telemetry, like vercelId).
	ComputeInstanceID string `cbor:"computeInstanceId,omitempty"`
}

// slotMetaFields are the keys a world-vercel 5.0 beta frame may carry
// beyond metaFields that the slot contract reads: the event fields Meta
// keeps, Request's, and client telemetry, which @workflow/world says a
// World must not persist and which this server reads and drops
// (telemetryFields). The rest (attributes, changes, writer,
// allowReservedAttributes: run attributes and attr_set) are answered 501.
var slotMetaFields = []string{"hookIsSystem", "hookTokenRetentionUntil", "ownerMessageId", "cancelReason", "encryptionPublicKey",
	"resumeId", "resumePayloadDigest",
	"sinceCursor", "skipPreload", "maxSlot", "viaStepDispatch", "computeInstanceId"}

// telemetryFields are the client's measurements a 5.0 beta frame carries
// (latency and progress counters, replay divergences): read and dropped.
var telemetryFields = []string{"ttfs", "stso", "stepCount", "eventCount", "rsfs", "finalSchedulingReplay", "optimizations", "replayDivergenceCount"}

// metaFields are the keys Meta reads: a frame with another is answered 501
// (a field this emulation would otherwise drop unread).
var metaFields = []string{"eventType", "specVersion", "correlationId", "vercelId", "occurredAt", "remoteRefBehavior",
	"deploymentId", "workflowName", "stepName", "attempt", "resumeAt", "retryAfter", "hookToken", "hookIsWebhook",
	"errorCode", "error", "stack", "executionContext", "stateUpdatedAt"}

// DecodeMeta decodes a POST frame's meta under the legacy contract
// (world-vercel 4.7.4's fields). unknown lists the keys it does not read,
// sorted (the frame is otherwise decoded).
func DecodeMeta(b []byte) (m Meta, unknown []string, err error) {
	if unknown, err = unknownKeys(b, metaFields); err != nil {
		return m, nil, err
	}
	if err := Unmarshal(b, &m); err != nil {
		return m, unknown, fmt.Errorf("frame meta: %w", err)
	}
	return legacyMeta(m), unknown, nil
}

// legacyMeta is m with the 5.0 fields cleared: the legacy contract keeps
// only what 4.7.4 sends (a frame carrying more is answered 501 anyway).
func legacyMeta(m Meta) Meta {
	m.HookIsSystem, m.HookTokenRetentionUntil, m.OwnerMessageID, m.CancelReason, m.EncryptionPublicKey = nil, nil, "", "", ""
	m.ResumeID, m.ResumePayloadDigest = "", ""
	return m
}

// DecodeSlotMeta decodes a POST frame's meta under the slot contract
// (world-vercel 5.0 betas): the event's fields, the request's, and the
// keys read by neither, sorted.
func DecodeSlotMeta(b []byte) (m Meta, r Request, unknown []string, err error) {
	known := slices.Concat(metaFields, slotMetaFields, telemetryFields)
	if unknown, err = unknownKeys(b, known); err != nil {
		return m, r, nil, err
	}
	if err := Unmarshal(b, &m); err != nil {
		return m, r, unknown, fmt.Errorf("frame meta: %w", err)
	}
	if err := Unmarshal(b, &r); err != nil {
		return m, r, unknown, fmt.Errorf("frame meta: %w", err)
	}
	return m, r, unknown, nil
}

// unknownKeys lists the keys of CBOR map b not in known, sorted.
func unknownKeys(b []byte, known []string) ([]string, error) {
	var raw map[string]any
	if err := Unmarshal(b, &raw); err != nil {
		return nil, fmt.Errorf("frame meta: %w", err)
	}
	var unknown []string
	for k := range raw {
		if !slices.Contains(known, k) {
			unknown = append(unknown, k)
		}
	}
	sort.Strings(unknown)
	return unknown, nil
}

// eventTypes are the event types a client may POST (@workflow/world's
// EventTypeSchema but hook_conflict, which only the server writes).
var eventTypes = []string{"run_created", "run_started", "run_completed", "run_failed", "run_cancelled",
	"step_created", "step_started", "step_completed", "step_failed", "step_retrying",
	"hook_created", "hook_received", "hook_disposed", "wait_created", "wait_completed"}

// payloadField names, per event type, the eventData field whose value rides
// in the frame body (world-vercel's PAYLOAD_FIELD_BY_EVENT_TYPE).
var payloadField = map[string]string{
	"run_created": "input", "run_started": "input", "run_completed": "output", "run_failed": "error",
	"step_created": "input", "step_completed": "result", "step_failed": "error", "step_retrying": "error",
	"hook_created": "metadata", "hook_received": "payload",
}

// structuredError: the types whose error the server keeps as a
// StructuredError ({message, stack}), CBOR-encoded in the frame body when
// read.
var structuredError = map[string]bool{"run_failed": true, "step_failed": true, "step_retrying": true}

// Stored is an event as the emulation keeps it in a store item's payload:
// its frame meta (JSON) and its body.
type Stored struct {
	Meta Meta   `json:"meta"`
	Body []byte `json:"body,omitempty"`
	// Conflict is a hook_conflict's: the token another hook holds and that
	// hook's run.
	Conflict *Conflict `json:"conflict,omitempty"`
}

// Conflict is what a hook_conflict event says.
type Conflict struct {
	Token            string `json:"token"`
	ConflictingRunID string `json:"conflictingRunId,omitempty"`
}

// Event is a stored event with its identity: what the server answers with.
type Event struct {
	ID, RunID string
	CreatedAt time.Time
	Stored
}

// eventData is the event's eventData as @workflow/world's EventSchema has
// it, without its payload field (withPayload adds it).
func (e Event) eventData() map[string]any {
	m := e.Meta
	d := map[string]any{}
	set := func(k string, v any, ok bool) {
		if ok {
			d[k] = v
		}
	}
	switch m.EventType {
	case "run_created":
		d["deploymentId"], d["workflowName"] = m.DeploymentID, m.WorkflowName
		set("executionContext", m.ExecutionContext, m.ExecutionContext != nil)
		set("encryptionPublicKey", m.EncryptionPublicKey, m.EncryptionPublicKey != "")
	case "run_failed":
		set("errorCode", m.ErrorCode, m.ErrorCode != "")
	case "step_created":
		d["stepName"] = m.StepName
	case "step_started":
		set("attempt", m.Attempt, m.Attempt != nil)
		set("stepName", m.StepName, m.StepName != "")
		set("ownerMessageId", m.OwnerMessageID, m.OwnerMessageID != "")
	case "step_failed":
		set("stack", m.Stack, m.Stack != "")
	case "step_retrying":
		set("stack", m.Stack, m.Stack != "")
		set("retryAfter", timeOf(m.RetryAfter), m.RetryAfter != nil)
	case "hook_created":
		d["token"] = m.HookToken
		set("isWebhook", m.HookIsWebhook, m.HookIsWebhook != nil)
		set("isSystem", m.HookIsSystem, m.HookIsSystem != nil)
		set("tokenRetentionUntil", timeOf(m.HookTokenRetentionUntil), m.HookTokenRetentionUntil != nil)
	case "hook_received", "hook_disposed":
		set("token", m.HookToken, m.HookToken != "")
	case "hook_conflict":
		if e.Conflict != nil {
			d["token"] = e.Conflict.Token
			set("conflictingRunId", e.Conflict.ConflictingRunID, e.Conflict.ConflictingRunID != "")
		}
	case "wait_created", "wait_completed":
		set("resumeAt", timeOf(m.ResumeAt), m.ResumeAt != nil)
	case "run_cancelled":
		set("cancelReason", m.CancelReason, m.CancelReason != "")
	}
	return d
}

// entity is the event as a frame's meta (or a POST answer's event) carries
// it; with payload, its payload is in its eventData (resolved), else it
// rides in the frame body.
func (e Event) entity(payload bool) map[string]any {
	out := map[string]any{
		"eventId": e.ID, "runId": e.RunID, "eventType": e.Meta.EventType,
		"createdAt": e.CreatedAt, "specVersion": e.Meta.SpecVersion,
	}
	if e.Meta.CorrelationID != "" {
		out["correlationId"] = e.Meta.CorrelationID
	}
	if e.Meta.OccurredAt != nil {
		out["occurredAt"] = *e.Meta.OccurredAt
	}
	if e.Meta.ResumeID != "" {
		out["resumeId"] = e.Meta.ResumeID
	}
	d := e.eventData()
	if f := payloadField[e.Meta.EventType]; payload && f != "" && len(e.Body) > 0 {
		d[f] = e.Body
		if structuredError[e.Meta.EventType] {
			var v any
			if Unmarshal(e.Body, &v) == nil {
				d[f] = v
			}
		}
	}
	if e.Meta.EventType != "run_started" && (e.Meta.EventType != "run_cancelled" || len(d) > 0) {
		out["eventData"] = d
	}
	return out
}

// structured is the StructuredError the server keeps of a client's error
// (a string, or an object with a message and a stack) and stack.
func structured(err any, stack string) map[string]any {
	out := map[string]any{}
	switch v := err.(type) {
	case string:
		out["message"] = v
	case map[string]any:
		out["message"] = v["message"]
		if s, ok := v["stack"].(string); ok && stack == "" {
			stack = s
		}
	default:
		out["message"] = fmt.Sprint(v)
	}
	if stack != "" {
		out["stack"] = stack
	}
	return out
}
