package history

import (
	"encoding/json"
	"hash/fnv"
	"time"

	"github.com/stormctl/stormctl/internal/eventlog"
)

// Op kinds recorded in a storm's history.
const (
	OpCreateRun    = "create_run"
	OpAppend       = "append"
	OpAppendFenced = "append_fenced"
	OpList         = "list"
	OpSeal         = "seal"
	// OpDeliver is a queue delivery of a flow invocation (the devkit
	// engine's): no world operation, the message its ops were the
	// handling of, which a replay delivers again.
	OpDeliver = "deliver"
)

// Op is one recorded world operation: one line of history.jsonl.
type Op struct {
	Kind  string    `json:"op"`
	Actor string    `json:"actor,omitempty"`
	RunID string    `json:"run_id"`
	Start time.Time `json:"start"`
	End   time.Time `json:"end"`
	// Expected is the writer's expectedSeq of a fenced append.
	Expected int64 `json:"expected_seq,omitempty"`
	// Wrote lists the drafts of an append with what the world assigned
	// (ids and positions are empty when the append failed).
	Wrote []OpEvent `json:"wrote,omitempty"`
	// Err is the class of the error (eventlog.Classify) and ErrText its text.
	Err     string `json:"err,omitempty"`
	ErrText string `json:"err_text,omitempty"`
	// Actual is the log position a fenced append found instead of Expected.
	Actual int64 `json:"actual_seq,omitempty"`
	// After and Limit are a read's cursor and page size; Read is what it got.
	After eventlog.Cursor `json:"after,omitzero"`
	Limit int             `json:"limit,omitempty"`
	Read  *ReadSummary    `json:"read,omitempty"`
	// Snapshot says a read was no list page but the events a write's
	// answer carried (a create answered with the log from After: a
	// preload from the start, a delta since the writer's cursor, the
	// slots its write skipped): a load by itself, which no page continues
	// (its More is the answer's, not a page to ask for).
	Snapshot bool `json:"snapshot,omitempty"`
	// Implicit says an append was no write of its actor's own: the store
	// wrote its event inside another call the actor made (the 5.0
	// packages write a synthetic step_created inside a step_started, a
	// missing run_created inside a run_started). Start and End are that
	// call's; the event committed in between.
	Implicit bool `json:"implicit,omitempty"`
	// Slot is the empty slot a read met (Err "hole", with Above the
	// committed slot past it), the slot a seal was asked to fill, or the
	// sealed slot that voided a write (Err "sealed").
	Slot  int64 `json:"slot,omitempty"`
	Above int64 `json:"above,omitempty"`
	// Sealed says a seal wrote its noop (Wrote holds it); ReservedAt is
	// when the slot it filled was reserved.
	Sealed     bool      `json:"sealed,omitempty"`
	ReservedAt time.Time `json:"reserved_at,omitzero"`
	// RunStartedAt is the run's startedAt as a create's answer carried it
	// (the devkit engine's run_started: the run entity whose startedAt
	// seeds the runtime's correlation ids), which a replay through the
	// real runtime answers again.
	RunStartedAt time.Time `json:"run_started_at,omitzero"`
	// Batch numbers the call an append was one event of when the runtime
	// wrote several events in one call (5.0's events.createBatch): the
	// appends of one call share it, unique within the run, and stand in
	// the call's request order, each with its own answer (a batch's events
	// succeed or are refused one by one). 0: an append of its own.
	Batch int `json:"batch,omitempty"`
	// BatchFailed says the whole batch call failed (the package threw):
	// its Err is the call's, on each of its events. Status is, for an
	// event of a batch, the status its own answer carried when it was
	// refused (409 a conflict; the package's 4xx or 5xx).
	BatchFailed bool `json:"batch_failed,omitempty"`
	Status      int  `json:"status,omitempty"`
	// Delivery is a deliver op's message: its body as the queue sent it
	// (base64) and content type, its id and its attempt.
	Delivery *Delivery `json:"delivery,omitempty"`
}

// Delivery is a queue message as one delivery of it reached its handler.
type Delivery struct {
	Body        []byte `json:"body"`
	ContentType string `json:"content_type,omitempty"`
	MessageID   string `json:"message_id,omitempty"`
	Attempt     int    `json:"attempt,omitempty"`
}

// OpEvent is one draft of an append and what the world assigned to it.
type OpEvent struct {
	Type          eventlog.Type `json:"type"`
	CorrelationID string        `json:"corr,omitempty"`
	ID            string        `json:"id,omitempty"`
	Seq           int64         `json:"seq,omitempty"`
	MintedAt      time.Time     `json:"minted_at,omitzero"`
	CommittedAt   time.Time     `json:"committed_at,omitzero"`
	// Token, Dedup and Payload are kept for rejected fenced appends only, so
	// a verdict can replay what the writer wanted to write.
	Token   string          `json:"token,omitempty"`
	Dedup   string          `json:"dedup,omitempty"`
	Payload json.RawMessage `json:"payload,omitempty"`
}

// ReadSummary is a compact account of a page: how many events, the first and
// last, and an order-independent hash of the ids so forensics can tell whether
// a load was a prefix of the final log without storing every id.
type ReadSummary struct {
	N       int             `json:"n"`
	First   eventlog.Cursor `json:"first,omitzero"`
	Last    eventlog.Cursor `json:"last,omitzero"`
	SetHash uint64          `json:"set_hash,omitempty"`
	More    bool            `json:"more,omitempty"`
}

// IDHash is the per-event hash summed into ReadSummary.SetHash.
func IDHash(id string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(id))
	return h.Sum64()
}

// Summarize builds the ReadSummary of a page.
func Summarize(p eventlog.Page) *ReadSummary {
	s := &ReadSummary{N: len(p.Events), More: p.More}
	for _, e := range p.Events {
		s.SetHash += IDHash(e.ID)
	}
	if n := len(p.Events); n > 0 {
		s.First = eventlog.After(p.Events[0])
		s.Last = eventlog.After(p.Events[n-1])
	}
	return s
}
