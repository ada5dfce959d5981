package engine_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stormctl/stormctl/internal/engine"
	"github.com/stormctl/stormctl/internal/eventlog"
	"github.com/stormctl/stormctl/worlds"
)

// memWorld is a ulid-ordered world in memory whose creations are not
// unique, as world-local 4.4.1's check-then-write step_created and
// wait_created are under concurrency: every append of a decision lands,
// twice if written twice. Completions are unique per correlation id (its
// wait_completed takes an exclusive lock), answering a second with a
// conflict. List reads every event whose id sorts after the cursor, as
// world-local's directory scan does, and calls between (if set) after each
// page is read, with how many events the Lists have returned so far: a
// commit there lands between two pages of one load.
type memWorld struct {
	mu      sync.Mutex
	events  []eventlog.Event
	minted  int
	limits  []int
	reads   [][]string // the ids each List returned
	between func(read int)
}

var _ worlds.World = (*memWorld)(nil)

// uniqueTypes are the types memWorld accepts once per correlation id.
var uniqueTypes = []eventlog.Type{eventlog.WaitCompleted, eventlog.StepCompleted, eventlog.StepFailed, eventlog.HookDisposed}

func (w *memWorld) CreateRun(context.Context, eventlog.Run) error { return nil }

func (w *memWorld) Append(_ context.Context, runID string, ds []eventlog.Draft) ([]eventlog.Event, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []eventlog.Event
	for _, d := range ds {
		if slices.Contains(uniqueTypes, d.Type) && slices.ContainsFunc(w.events, func(e eventlog.Event) bool {
			return e.Type == d.Type && e.CorrelationID == d.CorrelationID
		}) {
			return out, &eventlog.ConflictError{RunID: runID, Key: d.Keys()[0]}
		}
		w.minted++
		out = append(out, w.commit(runID, fmt.Sprintf("evnt_%06d", w.minted*10), d))
	}
	return out, nil
}

// commit stores d under id; callers hold w.mu.
func (w *memWorld) commit(runID, id string, d eventlog.Draft) eventlog.Event {
	e := d.Event(runID, id, invokeT0)
	i, _ := slices.BinarySearchFunc(w.events, id, func(e eventlog.Event, id string) int { return strings.Compare(e.ID, id) })
	w.events = slices.Insert(w.events, i, e)
	return e
}

// commitAt stores d under id, an id minted earlier or later than the
// events around it: a write whose mint-to-commit window is still open.
func (w *memWorld) commitAt(runID, id string, d eventlog.Draft) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.commit(runID, id, d)
}

func (w *memWorld) AppendFenced(context.Context, string, int64, []eventlog.Draft) ([]eventlog.Event, error) {
	return nil, errors.New("memWorld has no fenced append")
}

func (w *memWorld) List(_ context.Context, _ string, after eventlog.Cursor, limit int) (eventlog.Page, error) {
	w.mu.Lock()
	i := slices.IndexFunc(w.events, func(e eventlog.Event) bool { return e.ID > after.ID })
	var past []eventlog.Event
	if i >= 0 {
		past = slices.Clone(w.events[i:])
	}
	out := eventlog.PageAfter(after, past, limit)
	w.limits = append(w.limits, limit)
	w.reads = append(w.reads, ids(out.Events))
	read := 0
	for _, r := range w.reads {
		read += len(r)
	}
	between := w.between
	w.mu.Unlock()
	if between != nil {
		between(read)
	}
	return out, nil
}

// ids lists the events' ids.
func ids(evs []eventlog.Event) []string {
	out := make([]string, len(evs))
	for i, e := range evs {
		out[i] = e.ID
	}
	return out
}

func (w *memWorld) Close() error { return nil }

// log returns the world's events in order.
func (w *memWorld) log() []eventlog.Event {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.events)
}

// detached is a Detached runtime over w whose clock stands at now, under
// main's policy with ordered wake-ups and the given page knob.
func detached(t *testing.T, w *memWorld, prog engine.Program, now time.Time, page int) *engine.Runtime {
	t.Helper()
	p := engine.DefaultPolicy()
	p.Wake, p.Page = engine.WakeOrdered, page
	rt := engine.New(t.Context(), engine.Config{World: w, Program: prog, Detached: true, Backoff: time.Millisecond,
		Now: func() time.Time { return now }, Knobs: engine.Knobs{Scheme: eventlog.SchemeULID, Policy: p}})
	t.Cleanup(rt.Close)
	return rt
}
