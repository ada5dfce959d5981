package worldtest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/stormctl/stormctl/internal/base/clock"
	"github.com/stormctl/stormctl/internal/eventlog"
	"github.com/stormctl/stormctl/worlds"
)

// testConcurrentAppenders: 8 writers append 25 events each to one run, half
// facts through Append and half decisions through AppendFenced, catching up
// and retrying when fenced. Afterwards the log holds every accepted event
// exactly once, at the position its append returned, and (positioned
// schemes) is dense 1..200. Under a scheme with gaps in flight a writer's
// read that meets a hole is counted and retried; the count is logged. On a
// world without fenced appends every write is unfenced: each writer creates
// steps and completes each one it created.
func testConcurrentAppenders(t testing.TB, s *suite) {
	const writers, perWriter = 8, 25
	f := s.fixture(t, eventlog.FenceOnLog)
	unfenced := s.limits.Fence != ""
	if unfenced {
		t.Logf("every append unfenced: the world has no fenced append: %s", s.limits.Fence)
	}
	var (
		mu       sync.Mutex
		accepted []eventlog.Event
		gaps     atomic.Int64
	)
	g, ctx := errgroup.WithContext(f.ctx)
	g.SetLimit(writers)
	for w := range writers {
		g.Go(func() error {
			v := &view{positioned: s.positioned}
			if s.gapsInFlight {
				v.gaps = &gaps
			}
			for i := range perWriter {
				corr := fmt.Sprintf("w%d_%02d", w, i)
				var evs []eventlog.Event
				var err error
				switch {
				case unfenced && i%2 == 0:
					evs, err = f.w.Append(ctx, f.run, []eventlog.Draft{f.draft(eventlog.StepCreated, corr)})
				case unfenced:
					done := f.draft(eventlog.StepCompleted, fmt.Sprintf("w%d_%02d", w, i-1))
					evs, err = f.w.Append(ctx, f.run, []eventlog.Draft{done})
				case i%2 == 0:
					evs, err = f.w.Append(ctx, f.run, []eventlog.Draft{Draft(eventlog.StepCompleted, corr)})
				default:
					evs, err = v.appendWithRetry(ctx, f.w, f.run, Draft(eventlog.StepCreated, corr))
				}
				if err != nil {
					return fmt.Errorf("writer %d, append %d: %w", w, i, err)
				}
				if len(evs) != 1 {
					return fmt.Errorf("writer %d, append %d: %d events returned, want 1", w, i, len(evs))
				}
				mu.Lock()
				accepted = append(accepted, evs[0])
				mu.Unlock()
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		t.Fatal(err)
	}
	if s.gapsInFlight {
		t.Logf("%s: %d reads met a gap while writes were in flight (tolerated; the final log must be dense)", s.scheme, gaps.Load())
	}

	all := f.all()
	if len(all) != writers*perWriter {
		t.Fatalf("log holds %d events, want %d", len(all), writers*perWriter)
	}
	byID := make(map[string]eventlog.Event, len(all))
	byKey := make(map[string]string)
	for _, e := range all {
		if _, dup := byID[e.ID]; dup {
			t.Fatalf("event %s is in the log twice", e.ID)
		}
		byID[e.ID] = e
		for _, k := range e.Draft().Keys() {
			if other, dup := byKey[k]; dup {
				t.Fatalf("key %s is held by both %s and %s", k, other, e.ID)
			}
			byKey[k] = e.ID
		}
	}
	for _, a := range accepted {
		e, ok := byID[a.ID]
		switch {
		case !ok:
			t.Fatalf("accepted event %s (%s %s) is not in the log", a.ID, a.Type, a.CorrelationID)
		case e.Seq != a.Seq || !sameDraft(e.Draft(), a.Draft()):
			t.Fatalf("accepted event %s@%d reads back as %s@%d (%s %s)", a.ID, a.Seq, e.ID, e.Seq, e.Type, e.CorrelationID)
		}
	}
}

// view is a decision writer's knowledge of the log: how many events it has
// loaded and where it stopped. A positioned log is caught up from the cursor;
// a ulid log is reloaded whole, since its cursor can pass events that commit
// later.
type view struct {
	positioned bool
	after      eventlog.Cursor
	n          int64
	// gaps, when set, counts reads that failed with eventlog.ErrGap (or, under
	// the slot scheme, eventlog.ErrHole); such a read is retried after a
	// pause instead of failing the writer.
	gaps *atomic.Int64
}

// maxGapRetries bounds how long a writer waits for a hole to fill.
const maxGapRetries = 5000

// load brings the view up to date.
func (v *view) load(ctx context.Context, w worlds.World, runID string) error {
	if !v.positioned {
		v.after, v.n = eventlog.Cursor{}, 0
	}
	for retries := 0; ; {
		p, err := w.List(ctx, runID, v.after, 1000)
		inFlight := errors.Is(err, eventlog.ErrGap) || errors.Is(err, eventlog.ErrHole)
		if v.gaps != nil && inFlight && retries < maxGapRetries {
			v.gaps.Add(1)
			retries++
			if err := clock.Sleep(ctx, time.Millisecond); err != nil {
				return err
			}
			continue
		}
		if err != nil {
			return err
		}
		v.n += int64(len(p.Events))
		if len(p.Events) > 0 {
			v.after = p.Next
		}
		if !p.More || len(p.Events) == 0 {
			return nil
		}
	}
}

// appendWithRetry is a decision writer: load the log, append fenced at its
// length, and on a fence rejection load again and retry.
func (v *view) appendWithRetry(ctx context.Context, w worlds.World, runID string, d eventlog.Draft) ([]eventlog.Event, error) {
	const attempts = 10000
	for range attempts {
		if err := v.load(ctx, w, runID); err != nil {
			return nil, err
		}
		evs, err := w.AppendFenced(ctx, runID, v.n, []eventlog.Draft{d})
		if !errors.Is(err, eventlog.ErrFenced) {
			return evs, err
		}
	}
	return nil, fmt.Errorf("fenced append of %s %s rejected %d times", d.Type, d.CorrelationID, attempts)
}
