package worlds

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"time"

	"github.com/stormctl/stormctl/eventlog"
)

// Op kinds recorded in a storm's history.
const (
	OpCreateRun    = "create_run"
	OpAppend       = "append"
	OpAppendFenced = "append_fenced"
	OpList         = "list"
	OpSeal         = "seal"
)

// Op is one recorded world operation: one line of history.jsonl.
type Op struct {
	Kind  string    `json:"op"`
	Actor string    `json:"actor,omitempty"`
	RunID string    `json:"runId"`
	Start time.Time `json:"start"`
	End   time.Time `json:"end"`
	// Expected is the writer's expectedSeq of a fenced append.
	Expected int64 `json:"expectedSeq,omitempty"`
	// Wrote lists the drafts of an append with what the world assigned
	// (ids and positions are empty when the append failed).
	Wrote []OpEvent `json:"wrote,omitempty"`
	// Err is the class of the error (eventlog.Classify) and ErrText its text.
	Err     string `json:"err,omitempty"`
	ErrText string `json:"errText,omitempty"`
	// Actual is the log position a fenced append found instead of Expected.
	Actual int64 `json:"actualSeq,omitempty"`
	// After and Limit are a read's cursor and page size; Read is what it got.
	After eventlog.Cursor `json:"after,omitzero"`
	Limit int             `json:"limit,omitempty"`
	Read  *ReadSummary    `json:"read,omitempty"`
	// Slot is the empty slot a read met (Err "hole", with Above the
	// committed slot past it), the slot a seal was asked to fill, or the
	// sealed slot that voided a write (Err "sealed").
	Slot  int64 `json:"slot,omitempty"`
	Above int64 `json:"above,omitempty"`
	// Sealed says a seal wrote its noop (Wrote holds it); ReservedAt is
	// when the slot it filled was reserved.
	Sealed     bool      `json:"sealed,omitempty"`
	ReservedAt time.Time `json:"reservedAt,omitzero"`
}

// OpEvent is one draft of an append and what the world assigned to it.
type OpEvent struct {
	Type          eventlog.Type `json:"type"`
	CorrelationID string        `json:"corr,omitempty"`
	ID            string        `json:"id,omitempty"`
	Seq           int64         `json:"seq,omitempty"`
	MintedAt      time.Time     `json:"mintedAt,omitzero"`
	CommittedAt   time.Time     `json:"committedAt,omitzero"`
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
	SetHash uint64          `json:"setHash,omitempty"`
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

// Sink receives recorded operations. Implementations must be safe for
// concurrent use.
type Sink interface {
	Record(op Op)
}

type actorKey struct{}

// WithActor names who performs the operations made with ctx ("inv-12",
// "step-worker", "timer", "hook-sender", …) for the history.
func WithActor(ctx context.Context, actor string) context.Context {
	return context.WithValue(ctx, actorKey{}, actor)
}

// ActorFrom returns the actor WithActor stored in ctx, or "".
func ActorFrom(ctx context.Context) string {
	s, _ := ctx.Value(actorKey{}).(string)
	return s
}

// Recorder is a World that records every operation of the World it wraps.
type Recorder struct {
	inner World
	sink  Sink
	now   func() time.Time
}

var _ World = (*Recorder)(nil)

// Record wraps w so that every operation is written to sink.
func Record(w World, sink Sink) *Recorder {
	return &Recorder{inner: w, sink: sink, now: time.Now}
}

// Unwrap returns the recorded world.
func (r *Recorder) Unwrap() World { return r.inner }

// Inner returns the world a Recorder records, or w itself: where to ask for
// the optional interfaces (Dumper, GuardCounter, CommitTimes), which reads
// through a Recorder would record as if a reader of the run had made them.
func Inner(w World) World {
	if r, ok := w.(*Recorder); ok {
		return r.inner
	}
	return w
}

func (r *Recorder) finish(ctx context.Context, op *Op, err error) {
	op.End = r.now()
	op.Actor = ActorFrom(ctx)
	op.Err = eventlog.Classify(err)
	if err != nil {
		op.ErrText = err.Error()
	}
	var he *eventlog.HoleError
	var se *eventlog.SealedError
	switch {
	case errors.As(err, &he):
		op.Slot, op.Above = he.Slot, he.Above
	case errors.As(err, &se):
		op.Slot = se.Slot
	}
	r.sink.Record(*op)
}

// Seal records a seal of the recorded world, which must be a Slotter.
func (r *Recorder) Seal(ctx context.Context, runID string, slot int64) (eventlog.Event, bool, error) {
	op := Op{Kind: OpSeal, RunID: runID, Start: r.now(), Slot: slot}
	sl, ok := r.inner.(Slotter)
	if !ok {
		err := fmt.Errorf("seal slot %d of run %s: %T cannot seal (no slot scheme)", slot, runID, r.inner)
		r.finish(ctx, &op, err)
		return eventlog.Event{}, false, err
	}
	noop, sealed, err := sl.Seal(ctx, runID, slot)
	if sealed {
		op.Sealed = true
		op.Wrote = wrote([]eventlog.Draft{noop.Draft()}, []eventlog.Event{noop})
		var p eventlog.NoopPayload
		if json.Unmarshal(noop.Payload, &p) == nil {
			op.ReservedAt = p.ReservedAt
		}
	}
	r.finish(ctx, &op, err)
	return noop, sealed, err
}

// CreateRun implements World.
func (r *Recorder) CreateRun(ctx context.Context, run eventlog.Run) error {
	op := Op{Kind: OpCreateRun, RunID: run.ID, Start: r.now()}
	err := r.inner.CreateRun(ctx, run)
	r.finish(ctx, &op, err)
	return err
}

func wrote(d []eventlog.Draft, evs []eventlog.Event) []OpEvent {
	out := make([]OpEvent, len(d))
	for i, x := range d {
		out[i] = OpEvent{Type: x.Type, CorrelationID: x.CorrelationID}
		if i < len(evs) {
			e := evs[i]
			out[i].ID, out[i].Seq, out[i].MintedAt, out[i].CommittedAt = e.ID, e.Seq, e.MintedAt, e.CommittedAt
		}
	}
	return out
}

// Append implements World.
func (r *Recorder) Append(ctx context.Context, runID string, d []eventlog.Draft) ([]eventlog.Event, error) {
	op := Op{Kind: OpAppend, RunID: runID, Start: r.now()}
	evs, err := r.inner.Append(ctx, runID, d)
	op.Wrote = wrote(d, evs)
	r.finish(ctx, &op, err)
	return evs, err
}

// AppendFenced implements World.
func (r *Recorder) AppendFenced(ctx context.Context, runID string, expectedSeq int64, d []eventlog.Draft) ([]eventlog.Event, error) {
	op := Op{Kind: OpAppendFenced, RunID: runID, Start: r.now(), Expected: expectedSeq}
	evs, err := r.inner.AppendFenced(ctx, runID, expectedSeq, d)
	op.Wrote = wrote(d, evs)
	if fe, ok := asFenced(err); ok {
		op.Actual = fe.Actual
		for i, x := range d {
			op.Wrote[i].Token, op.Wrote[i].Dedup, op.Wrote[i].Payload = x.Token, x.Dedup, x.Payload
		}
	}
	r.finish(ctx, &op, err)
	return evs, err
}

// List implements World.
func (r *Recorder) List(ctx context.Context, runID string, after eventlog.Cursor, limit int) (eventlog.Page, error) {
	op := Op{Kind: OpList, RunID: runID, Start: r.now(), After: after, Limit: limit}
	p, err := r.inner.List(ctx, runID, after, limit)
	if err == nil {
		op.Read = Summarize(p)
	}
	r.finish(ctx, &op, err)
	return p, err
}

// Close implements World.
func (r *Recorder) Close() error { return r.inner.Close() }

func asFenced(err error) (*eventlog.FencedError, bool) {
	var fe *eventlog.FencedError
	ok := errors.As(err, &fe)
	return fe, ok
}
