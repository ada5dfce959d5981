package ingest

import (
	"time"

	"github.com/stormctl/stormctl/eventlog"
	"github.com/stormctl/stormctl/worlds"
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
	CodeInvalidRequest   = "invalid_request"    // 400: missing expectedSeq, bad cursor or limit
	CodeBatchTooLarge    = "batch_too_large"    // 400: more than one DynamoDB transaction holds
	CodeTooLarge         = "too_large"          // 413: body or event payload over the limit
	CodeNoRun            = "no_run"             // 404
	CodeNotFound         = "not_found"          // 404: no such route
	CodeMethodNotAllowed = "method_not_allowed" // 405
	CodeRunExists        = "run_exists"         // 409
	CodeConflict         = "conflict"           // 409: an idempotency key is taken
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
}

// AppendRequest is the body of POST /v1/runs/{runId}/events (facts,
// unfenced).
type AppendRequest struct {
	Events []eventlog.Draft `json:"events"`
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
	Counts worlds.GuardCounts `json:"counts"`
	// Count is the run's count in the index, when it has one.
	Count *int64 `json:"count,omitempty"`
	// Window is the run's id window in the index, newest first.
	Window []string `json:"window,omitempty"`
}
