package dynamo

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/stormctl/stormctl/internal/eventlog"
)

// A seq read Queries the whole run for every page (seed gotcha 7, option
// (a)), and a storm has up to 20 invocations of one run loading its log at
// once. Whole-run reads of one run are therefore shared: a reader joins the
// next Query that starts after it arrived (never one already in flight), so
// every reader gets a consistent read taken after its arrival, the same
// answer a Query of its own could have given, and a run has at most one
// whole-run Query running and one gathering readers.

// flight is one shared whole-run Query.
type flight struct {
	done chan struct{}
	evs  []eventlog.Event
	err  error
}

// runReads coalesces the whole-run reads of one run.
type runReads struct {
	mu      sync.Mutex
	running bool    // a Query of this run is in flight
	next    *flight // readers waiting for the next Query, nil if none
}

// readRun returns every event item of the run, in sort-key order, from a
// consistent Query that started after the call.
func (st *Store) readRun(ctx context.Context, runID string) ([]eventlog.Event, error) {
	v, _ := st.reads.LoadOrStore(runID, &runReads{})
	r := v.(*runReads)
	r.mu.Lock()
	f := r.next
	if f == nil {
		f = &flight{done: make(chan struct{})}
		r.next = f
	}
	if !r.running {
		r.running = true
		r.next = nil
		go st.fly(runID, r, f)
	}
	r.mu.Unlock()
	select {
	case <-f.done:
		// Readers share the slice: each gets its own copy to cut and sort.
		return slices.Clone(f.evs), f.err
	case <-ctx.Done():
		return nil, storeErr(ctx, "query run "+runID, ctx.Err())
	}
}

// fly runs f's Query, then the next flight's while readers keep arriving,
// and ends when none wait.
func (st *Store) fly(runID string, r *runReads, f *flight) {
	for f != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		f.evs, f.err = st.query(ctx, runID, nil, 0)
		cancel()
		close(f.done)
		r.mu.Lock()
		f, r.next = r.next, nil
		if f == nil {
			r.running = false
		}
		r.mu.Unlock()
	}
}
