package replay

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/stormctl/stormctl/internal/eventlog"
	"github.com/stormctl/stormctl/internal/history"
	"github.com/stormctl/stormctl/worlds"
)

// errDeviated answers every call after the replay left its record: the
// invocation stops at its next store operation.
var errDeviated = errors.New("replay: the invocation left its recorded operations")

// Deviation is the first store operation at which a replayed invocation
// did something else than its record.
type Deviation struct {
	// Op is the operation's index among the invocation's recorded ones
	// (len of them when the replay went on past the last).
	Op int `json:"op"`
	// Recorded is what the record holds there ("" past its end) and
	// Replayed what the replay did instead ("" when it stopped early).
	Recorded string `json:"recorded,omitempty"`
	Replayed string `json:"replayed,omitempty"`
}

// String says where and how the replay left its record.
func (d *Deviation) String() string {
	switch {
	case d.Recorded == "":
		return fmt.Sprintf("went on past its record's %d operations: %s", d.Op, d.Replayed)
	case d.Replayed == "":
		return fmt.Sprintf("stopped before its operation %d: %s", d.Op+1, d.Recorded)
	}
	return fmt.Sprintf("operation %d: recorded %s, replayed %s", d.Op+1, d.Recorded, d.Replayed)
}

// cut says the replay went on past the record's last operation: the run
// ended (or the storm stopped it) while the invocation was in flight.
func (d *Deviation) cut() bool { return d != nil && d.Recorded == "" }

// world is a read-only world that serves one invocation's recorded
// operations in order: each List is answered with the page the invocation
// read (the same cursor and limit, or the replay deviated), each append is
// checked against the recorded one, taken into a scratch log and answered
// as the store answered it. Its clock is the end of the operation it
// served last, the time the invocation saw when it went on.
type world struct {
	runID string
	ops   []history.Op
	// pages holds the events each list op of ops returned (by index into
	// ops); final the run's final log by event id, the payloads of what
	// the invocation wrote.
	pages map[int][]eventlog.Event
	final map[string]eventlog.Event

	mu    sync.Mutex
	next  int
	now   time.Time
	read  []eventlog.Event // every event served, in order: the log the invocation replays
	wrote []eventlog.Draft // the scratch log
	dev   *Deviation
}

var _ worlds.World = (*world)(nil)

// Now is the world's clock: the engine's Config.Now.
func (w *world) Now() time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.now
}

// take returns the next recorded op if it is of kind, or records the
// deviation described by replayed. Callers hold w.mu.
func (w *world) take(kind, replayed string) (history.Op, bool) {
	if w.dev != nil {
		return history.Op{}, false
	}
	if w.next >= len(w.ops) {
		w.dev = &Deviation{Op: w.next, Replayed: replayed}
		return history.Op{}, false
	}
	op := w.ops[w.next]
	if op.Kind != kind {
		w.dev = &Deviation{Op: w.next, Recorded: describeOp(op), Replayed: replayed}
		return history.Op{}, false
	}
	return op, true
}

// served marks the current op answered and moves the clock to its end.
// Callers hold w.mu.
func (w *world) served(op history.Op) {
	w.next++
	if op.End.After(w.now) {
		w.now = op.End
	}
}

// CreateRun is never asked of an invocation.
func (w *world) CreateRun(context.Context, eventlog.Run) error {
	return fmt.Errorf("replay of run %s: an invocation creates no run: %w", w.runID, errDeviated)
}

// List answers the recorded page, when the invocation asks for it.
func (w *world) List(_ context.Context, runID string, after eventlog.Cursor, limit int) (eventlog.Page, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	asked := fmt.Sprintf("list after %s limit %d", after.Text(), limit)
	op, ok := w.take(history.OpList, asked)
	if !ok {
		return eventlog.Page{}, errDeviated
	}
	if op.After != after || op.Limit != limit {
		w.dev = &Deviation{Op: w.next, Recorded: describeOp(op), Replayed: asked}
		return eventlog.Page{}, errDeviated
	}
	w.served(op)
	if err := recordedErr(op); err != nil {
		return eventlog.Page{}, err
	}
	evs := slices.Clone(w.pages[w.next-1])
	w.read = append(w.read, evs...)
	p := eventlog.Page{Events: evs, Next: after, More: op.Read != nil && op.Read.More}
	if n := len(evs); n > 0 {
		p.Next = eventlog.After(evs[n-1])
	}
	return p, nil
}

// Append takes unfenced writes.
func (w *world) Append(_ context.Context, runID string, d []eventlog.Draft) ([]eventlog.Event, error) {
	return w.write(history.OpAppend, 0, d)
}

// AppendFenced takes fenced writes.
func (w *world) AppendFenced(_ context.Context, runID string, expected int64, d []eventlog.Draft) ([]eventlog.Event, error) {
	return w.write(history.OpAppendFenced, expected, d)
}

// write checks an append against the recorded one and answers as the
// store did: the recorded error, or the events with the ids and positions
// the store assigned.
func (w *world) write(kind string, expected int64, d []eventlog.Draft) ([]eventlog.Event, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	asked := describeDrafts(kind, d)
	op, ok := w.take(kind, asked)
	if !ok {
		return nil, errDeviated
	}
	if why := w.differs(op, expected, d); why != "" {
		w.dev = &Deviation{Op: w.next, Recorded: describeOp(op), Replayed: asked + " (" + why + ")"}
		return nil, errDeviated
	}
	w.served(op)
	w.wrote = append(w.wrote, d...)
	if err := recordedErr(op); err != nil {
		return nil, err
	}
	evs := make([]eventlog.Event, len(d))
	for i, x := range d {
		rec := op.Wrote[i]
		evs[i] = x.Event(w.runID, rec.ID, rec.MintedAt)
		evs[i].Seq, evs[i].CommittedAt = rec.Seq, rec.CommittedAt
	}
	return evs, nil
}

// differs says how drafts d, written with expected, differ from the
// recorded append op ("" when they do not): the fence, the number of
// drafts, and each draft's type, correlation id, token and payload (as the
// final log holds it; a wait's resumeAt is the clock's and not compared).
// Callers hold w.mu.
func (w *world) differs(op history.Op, expected int64, d []eventlog.Draft) string {
	if op.Kind == history.OpAppendFenced && op.Expected != expected {
		return fmt.Sprintf("expected seq %d, recorded %d", expected, op.Expected)
	}
	if len(op.Wrote) != len(d) {
		return fmt.Sprintf("%d events, recorded %d", len(d), len(op.Wrote))
	}
	for i, x := range d {
		rec := op.Wrote[i]
		if x.Type != rec.Type || x.CorrelationID != rec.CorrelationID {
			return fmt.Sprintf("event %d is %s %s, recorded %s %s", i+1, x.Type, x.CorrelationID, rec.Type, rec.CorrelationID)
		}
		if e, ok := w.final[rec.ID]; ok && rec.ID != "" {
			if why := samePayload(e, x); why != "" {
				return fmt.Sprintf("event %d (%s %s): %s", i+1, x.Type, x.CorrelationID, why)
			}
		}
	}
	return ""
}

// Close releases nothing.
func (w *world) Close() error { return nil }

// end records, after the invocation returned, a record that goes on
// further than the replay did.
func (w *world) end() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.dev == nil && w.next < len(w.ops) {
		w.dev = &Deviation{Op: w.next, Recorded: describeOp(w.ops[w.next])}
	}
}

// recordedErr is the error a recorded op's store answered.
func recordedErr(op history.Op) error {
	return eventlog.Recorded{Class: op.Err, Text: op.ErrText, Expected: op.Expected, Actual: op.Actual, Slot: op.Slot, Above: op.Above}.Err()
}

// describeOp says what a recorded op did, in a few words.
func describeOp(op history.Op) string {
	switch op.Kind {
	case history.OpList:
		s := fmt.Sprintf("list after %s limit %d", op.After.Text(), op.Limit)
		if op.Err != "" {
			return s + " (" + op.Err + ")"
		}
		if op.Read != nil {
			s += fmt.Sprintf(" (%d events)", op.Read.N)
		}
		return s
	case history.OpAppend, history.OpAppendFenced:
		var parts []string
		for _, e := range op.Wrote {
			parts = append(parts, strings.TrimSpace(string(e.Type)+" "+e.CorrelationID))
		}
		s := op.Kind + " " + strings.Join(parts, ", ")
		if op.Err != "" {
			s += " (" + op.Err + ")"
		}
		return s
	}
	return op.Kind
}

// describeDrafts says what an append wrote, as describeOp says it.
func describeDrafts(kind string, d []eventlog.Draft) string {
	var parts []string
	for _, x := range d {
		parts = append(parts, strings.TrimSpace(string(x.Type)+" "+x.CorrelationID))
	}
	return kind + " " + strings.Join(parts, ", ")
}
