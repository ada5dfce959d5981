package certify

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"

	"github.com/stormctl/stormctl/internal/eventlog"
	"github.com/stormctl/stormctl/worlds"
)

// RunCreatedNote says what withRuns does, for the card.
const RunCreatedNote = "the package validates every event against its run, so a run the suite writes no run_created for gets one before its first event, which the suite's reads do not see"

// withRuns wraps a world whose store validates every event against its
// run (worlds.Limits.Lifecycle): the conformance suite writes most runs'
// events without a run_created, which such a store refuses (the run does
// not exist). Before a run's first write that is not itself a
// run_created, it writes one, and hides that event from the run's reads
// (and commit times) so that the suite checks exactly what it wrote. A
// world without the limit is returned as it is.
func withRuns(w worlds.World, l worlds.Limits) worlds.World {
	if l.Lifecycle == "" {
		return w
	}
	r := &runsWorld{World: w, hidden: map[string]string{}, started: map[string]bool{}}
	if ct, ok := w.(worlds.CommitTimes); ok {
		return runsWorldClock{runsWorld: r, ct: ct}
	}
	return r
}

type runsWorld struct {
	worlds.World

	mu sync.Mutex
	// hidden is each run's run_created written here, by event id;
	// started the runs written to at all.
	hidden  map[string]string
	started map[string]bool
}

// first writes the run's hidden run_created before its first write,
// unless that write starts with a run_created of its own.
func (r *runsWorld) first(ctx context.Context, run string, d []eventlog.Draft) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.started[run] {
		return nil
	}
	if len(d) > 0 && d[0].Type == eventlog.RunCreated {
		r.started[run] = true
		return nil
	}
	evs, err := r.World.Append(ctx, run, []eventlog.Draft{{Type: eventlog.RunCreated, Payload: json.RawMessage(`{"certify":"run_created"}`)}})
	if err != nil {
		return fmt.Errorf("certify: the run_created of run %s: %w", run, err)
	}
	r.started[run] = true
	if len(evs) == 1 {
		r.hidden[run] = evs[0].ID
	}
	return nil
}

func (r *runsWorld) hiddenOf(run string) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.hidden[run]
}

// Append writes d, after the run's hidden run_created the first time.
func (r *runsWorld) Append(ctx context.Context, run string, d []eventlog.Draft) ([]eventlog.Event, error) {
	if err := r.first(ctx, run, d); err != nil {
		return nil, err
	}
	return r.World.Append(ctx, run, d)
}

// AppendFenced writes d fenced, after the run's hidden run_created the
// first time (which the fence does not count).
func (r *runsWorld) AppendFenced(ctx context.Context, run string, expected int64, d []eventlog.Draft) ([]eventlog.Event, error) {
	if err := r.first(ctx, run, d); err != nil {
		return nil, err
	}
	if r.hiddenOf(run) != "" {
		expected++
	}
	return r.World.AppendFenced(ctx, run, expected, d)
}

// List reads as the world does, without the hidden run_created: a page
// asks for one event more, so that it still holds limit events.
func (r *runsWorld) List(ctx context.Context, run string, after eventlog.Cursor, limit int) (eventlog.Page, error) {
	h := r.hiddenOf(run)
	if h == "" {
		return r.World.List(ctx, run, after, limit)
	}
	ask := limit
	if limit > 0 {
		ask = limit + 1
	}
	p, err := r.World.List(ctx, run, after, ask)
	if err != nil {
		return p, err
	}
	p.Events = slices.DeleteFunc(p.Events, func(e eventlog.Event) bool { return e.ID == h })
	if limit > 0 && len(p.Events) > limit {
		p.Events, p.More = p.Events[:limit], true
	}
	if n := len(p.Events); n > 0 {
		p.Next = eventlog.Cursor{ID: p.Events[n-1].ID, Seq: p.Events[n-1].Seq}
	} else if !p.More {
		p.Next = after
	}
	return p, nil
}

type runsWorldClock struct {
	*runsWorld
	ct worlds.CommitTimes
}

// CommitTimes are the world's, without the hidden run_created's.
func (r runsWorldClock) CommitTimes(ctx context.Context, run string) ([]worlds.CommitTime, error) {
	out, err := r.ct.CommitTimes(ctx, run)
	h := r.hiddenOf(run)
	return slices.DeleteFunc(out, func(c worlds.CommitTime) bool { return h != "" && c.EventID == h }), err
}
