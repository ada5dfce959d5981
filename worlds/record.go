package worlds

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/stormctl/stormctl/internal/eventlog"
	"github.com/stormctl/stormctl/internal/history"
)

// Sink receives recorded operations. Implementations must be safe for
// concurrent use.
type Sink interface {
	Record(op history.Op)
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

func (r *Recorder) finish(ctx context.Context, op *history.Op, err error) {
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
	op := history.Op{Kind: history.OpSeal, RunID: runID, Start: r.now(), Slot: slot}
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
	op := history.Op{Kind: history.OpCreateRun, RunID: run.ID, Start: r.now()}
	err := r.inner.CreateRun(ctx, run)
	r.finish(ctx, &op, err)
	return err
}

func wrote(d []eventlog.Draft, evs []eventlog.Event) []history.OpEvent {
	out := make([]history.OpEvent, len(d))
	for i, x := range d {
		out[i] = history.OpEvent{Type: x.Type, CorrelationID: x.CorrelationID}
		if i < len(evs) {
			e := evs[i]
			out[i].ID, out[i].Seq, out[i].MintedAt, out[i].CommittedAt = e.ID, e.Seq, e.MintedAt, e.CommittedAt
		}
	}
	return out
}

// Append implements World.
func (r *Recorder) Append(ctx context.Context, runID string, d []eventlog.Draft) ([]eventlog.Event, error) {
	op := history.Op{Kind: history.OpAppend, RunID: runID, Start: r.now()}
	evs, err := r.inner.Append(ctx, runID, d)
	op.Wrote = wrote(d, evs)
	r.finish(ctx, &op, err)
	return evs, err
}

// AppendFenced implements World.
func (r *Recorder) AppendFenced(ctx context.Context, runID string, expectedSeq int64, d []eventlog.Draft) ([]eventlog.Event, error) {
	op := history.Op{Kind: history.OpAppendFenced, RunID: runID, Start: r.now(), Expected: expectedSeq}
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
	op := history.Op{Kind: history.OpList, RunID: runID, Start: r.now(), After: after, Limit: limit}
	p, err := r.inner.List(ctx, runID, after, limit)
	if err == nil {
		op.Read = history.Summarize(p)
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
