package ingest

import (
	"time"

	"github.com/stormctl/stormctl/internal/eventlog"
	"github.com/stormctl/stormctl/internal/history"
)

// DefaultMaxBody is the largest request body the server reads (1 MiB);
// larger ones are refused with 413.
const DefaultMaxBody = 1 << 20

// MaxPayload is the largest event payload the server stores (300 KiB):
// DynamoDB items hold at most 400 KB and world-vercel drains larger
// payloads to S3, which this server does not model. Larger ones are
// refused with 413.
const MaxPayload = 300 << 10

// Error codes of ErrorBody.Code.
const (
	CodeBadJSON          = "bad_json"           // 400: malformed JSON, unknown field, trailing data
	CodeUnknownType      = "unknown_event_type" // 400
	CodeInvalidPayload   = "invalid_payload"    // 400: a payload that is not JSON
	CodeInvalidRun       = "invalid_run"        // 400: run id, scheme, fence basis or guard
	CodeHookClaim        = "hook_claim"         // 400: a hook-claim mode the token index is not built for (its scheme)
	CodeInvalidRequest   = "invalid_request"    // 400: missing expectedSeq, bad cursor or limit
	CodeBatchTooLarge    = "batch_too_large"    // 400: more than one DynamoDB transaction holds
	CodeTooLarge         = "too_large"          // 413: body or event payload over the limit
	CodeNoRun            = "no_run"             // 404
	CodeNoSlot           = "no_slot"            // 404: a slot never reserved
	CodeNotFound         = "not_found"          // 404: no such route
	CodeMethodNotAllowed = "method_not_allowed" // 405
	CodeRunExists        = "run_exists"         // 409
	CodeConflict         = "conflict"           // 409: an idempotency key is taken
	CodeSealed           = "sealed"             // 409: a reserved slot was sealed before the commit (with "slot")
	CodeNotReserved      = "not_reserved"       // 409: a commit's slots are not that reservation's (committed, other keys)
	CodeHole             = "hole"               // 409: a read met an empty slot below a committed one (with "slot", "above")
	CodeGap              = "gap"                // 409: a read found the log not dense (with "want", "got")
	CodeDuplicate        = "duplicate"          // 409: a read found a position twice (with "seq")
	CodeFenced           = "fenced"             // 412: the fence (or the count guard) rejected the batch
	CodeUnavailable      = "unavailable"        // 503: DynamoDB or Redis cannot be reached
	CodeContention       = "contention"         // 503: the run's counter stayed contended
	CodeCancelled        = "cancelled"          // 503: the request ended before the write was sent
	CodeInternal         = "internal"           // 500
)

// ErrorBody is the JSON body of every error response.
type ErrorBody struct {
	Error string `json:"error"`
	Code  string `json:"code"`
	// Key is the idempotency key a 409 conflict is about.
	Key string `json:"key,omitempty"`
	// Expected and Actual are a 412's positions: what the writer expected
	// and what the log (or the count index) held.
	Expected *int64 `json:"expected,omitempty"`
	Actual   *int64 `json:"actual,omitempty"`
	// InBand marks a 412 of spec 9's in-band fence (the positions are
	// in-band counts: upstream's InBandSupersededError).
	InBand bool `json:"inBand,omitempty"`
	// Slot is the slot a 409 sealed or hole is about: the sealed slot, or
	// the empty one; Above is a hole's committed slot past it.
	Slot  *int64 `json:"slot,omitempty"`
	Above *int64 `json:"above,omitempty"`
	// Want and Got are a 409 gap's positions: the one that should have come
	// next and the one that did (0: an unpositioned event).
	Want *int64 `json:"want,omitempty"`
	Got  *int64 `json:"got,omitempty"`
	// Seq is the position a 409 duplicate found twice.
	Seq *int64 `json:"seq,omitempty"`
}

// AppendRequest is the body of POST /v1/runs/{runId}/events (facts,
// unfenced).
type AppendRequest struct {
	Events []eventlog.Draft `json:"events"`
	// Actor names the writer (worlds.ActorFrom), optional: on a slot run,
	// the noops its write seals itself record it as their sealer.
	Actor string `json:"actor,omitempty"`
}

// FencedRequest is the body of POST /v1/runs/{runId}/events/fenced: a batch
// of decisions appended all or nothing if the log is where the writer
// expects it.
type FencedRequest struct {
	// ExpectedSeq is the number of events the writer loaded (required).
	ExpectedSeq *int64 `json:"expectedSeq"`
	// Watermark is the last event id the writer saw (optional; only the
	// count-index guard reads it, to locate it in the run's id window).
	Watermark string           `json:"watermark,omitempty"`
	Events    []eventlog.Draft `json:"events"`
	// Actor is AppendRequest.Actor.
	Actor string `json:"actor,omitempty"`
}

// ReserveRequest is the body of POST /v1/runs/{runId}/slots/reserve: take
// the slot run's next len(Events) slots for Events and claim their
// idempotency keys, all or nothing, without committing anything.
type ReserveRequest struct {
	Events []eventlog.Draft `json:"events"`
	// ExpectedSeq, when set, fences the reservation on the run's slot
	// counter (slots reserved, committed or not): another count is a 412.
	ExpectedSeq *int64 `json:"expectedSeq,omitempty"`
}

// ReservationResponse answers a reservation: slots First … First+Count-1
// of the run, taken at ReservedAt (First 0 when Count is 0). A commit of
// the reservation sends First and ReservedAt back with the same drafts.
type ReservationResponse struct {
	RunID      string    `json:"runId"`
	First      int64     `json:"first"`
	Count      int       `json:"count"`
	ReservedAt time.Time `json:"reservedAt"`
}

// CommitRequest is the body of POST /v1/runs/{runId}/slots/commit: commit
// the drafts of a reservation at its slots, all or nothing.
type CommitRequest struct {
	// First and ReservedAt are the reservation's (ReservationResponse).
	First      int64     `json:"first"`
	ReservedAt time.Time `json:"reservedAt"`
	// Events are the drafts reserved, in order.
	Events []eventlog.Draft `json:"events"`
	// Actor is AppendRequest.Actor: the sealer of the noops a refused
	// commit writes over the rest of its reservation.
	Actor string `json:"actor,omitempty"`
}

// SealRequest is the body of POST /v1/runs/{runId}/slots/{slot}/seal.
type SealRequest struct {
	// Actor names the sealer (worlds.ActorFrom): the noop's
	// eventlog.NoopPayload.SealedBy.
	Actor string `json:"actor,omitempty"`
}

// SealResponse answers a seal: Sealed and the noop written, or Sealed
// false (and no event) when the slot was filled already.
type SealResponse struct {
	Sealed bool            `json:"sealed"`
	Event  *eventlog.Event `json:"event,omitempty"`
}

// EventsResponse answers an append: the events as committed, with ids,
// positions (seq runs) and CommittedAt, the server-observed time DynamoDB
// acknowledged the write.
type EventsResponse struct {
	Events []eventlog.Event `json:"events"`
}

// CommitTime is one event's server-observed commit time.
type CommitTime struct {
	EventID string `json:"eventId"`
	Seq     int64  `json:"seq,omitempty"`
	// At is when the server saw DynamoDB acknowledge the write that
	// committed the event: server-observed, never a store commit timestamp.
	// Zero when this server did not write the event.
	At     time.Time `json:"at,omitzero"`
	Source string    `json:"source"`
}

// CommitTimesResponse answers GET /v1/runs/{runId}/commit-times, in scheme
// order.
type CommitTimesResponse struct {
	CommitTimes []CommitTime `json:"commitTimes"`
}

// SourceServer is CommitTime.Source: the ingest server's clock.
const SourceServer = "server"

// GuardResponse answers GET /v1/runs/{runId}/guard.
type GuardResponse struct {
	// Guard is the run's guard ("" or eventlog.GuardCountIndex).
	Guard string `json:"guard"`
	// Counts say how the guard fared on the run (all zero without one).
	Counts history.GuardCounts `json:"counts"`
	// Count is the run's count in the index, when it has one.
	Count *int64 `json:"count,omitempty"`
	// Window is the run's id window in the index, newest first.
	Window []string `json:"window,omitempty"`
}
