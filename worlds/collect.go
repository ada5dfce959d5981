package worlds

import (
	"context"
	"errors"
	"time"

	"github.com/stormctl/stormctl/internal/base/clock"
	"github.com/stormctl/stormctl/internal/eventlog"
	"github.com/stormctl/stormctl/internal/history"
)

// Collected is what a world holds of a run once the run ended: the
// evidence, besides its recorded history, that the post-run pipeline
// decides and checks the run on.
type Collected struct {
	// Final is the run's stored log, with the store's own commit times
	// when CommitSource is "store"; ReadErr is why it could not be read
	// whole (eventlog.ErrGap, ErrDuplicate, ErrUnavailable, ...).
	Final   []eventlog.Event
	ReadErr error
	// CommitSource says whose commit times the run's forensics use:
	// "store" (the database's own, CommitTimes) or "world" (what the
	// writers observed); CommitErr is why the store's could not be had.
	CommitSource string
	CommitErr    error
	// Guard is how the world's legacy guard fared on the run, nil when
	// the run had no guard or the world cannot tell.
	Guard *history.GuardCounts
}

// Collect gathers from w what it holds of run runID once the run ended:
// its final log, read without the density assertion when w can (Dumper),
// so that the forensics see what a reader would refuse; the store's commit
// times when w has them (CommitTimes with Source "store"), put on the
// final log; and, when the run's condition has a guard, the guard's counts
// (GuardCounter). An unreachable store is asked for the final log again
// until ctx ends: a run that ended is never recorded as infra because a
// fault was passing when it was read.
func Collect(ctx context.Context, w World, runID string, guard eventlog.Guard) Collected {
	var c Collected
	c.Final, c.ReadErr = readFinal(ctx, w, runID)
	c.CommitSource, c.CommitErr = storeCommitTimes(ctx, w, runID, c.Final)
	c.Guard = guardCounts(ctx, w, runID, guard)
	return c
}

// readFinal reads a run's stored log, asking an unreachable store again
// every 250 ms until ctx ends.
func readFinal(ctx context.Context, w World, runID string) ([]eventlog.Event, error) {
	for {
		final, err := readFinalOnce(ctx, w, runID)
		if !errors.Is(err, eventlog.ErrUnavailable) || clock.Sleep(ctx, 250*time.Millisecond) != nil {
			return final, err
		}
	}
}

func readFinalOnce(ctx context.Context, w World, runID string) ([]eventlog.Event, error) {
	if d, ok := Inner(w).(Dumper); ok {
		return d.Dump(ctx, runID)
	}
	var out []eventlog.Event
	after := eventlog.Cursor{}
	for {
		p, err := w.List(ctx, runID, after, 1000)
		if err != nil {
			return out, err
		}
		out = append(out, p.Events...)
		if !p.More || len(p.Events) == 0 {
			return out, nil
		}
		after = p.Next
	}
}

// guardCounts asks the world how its legacy guard fared on a run.
func guardCounts(ctx context.Context, w World, runID string, guard eventlog.Guard) *history.GuardCounts {
	if guard == eventlog.GuardNone {
		return nil
	}
	gc, ok := Inner(w).(GuardCounter)
	if !ok {
		return nil
	}
	g, err := gc.GuardCounts(ctx, runID)
	if err != nil {
		return nil
	}
	return &g
}

// storeCommitTimes puts the store's own commit times on final when the
// world has them and says whose times the run's forensics use: "store" or
// "world" (with why not the store's, when it was asked and failed).
func storeCommitTimes(ctx context.Context, w World, runID string, final []eventlog.Event) (string, error) {
	ct, ok := Inner(w).(CommitTimes)
	if !ok {
		return "world", nil
	}
	times, err := ct.CommitTimes(ctx, runID)
	if err != nil {
		return "world", err
	}
	return PutCommitTimes(final, times), nil
}

// PutCommitTimes puts the store's commit times on a run's final log and
// returns "store" (Collected.CommitSource), or leaves final as it is and
// returns "world" when any of times is not the store's own.
func PutCommitTimes(final []eventlog.Event, times []CommitTime) string {
	at := make(map[string]time.Time, len(times))
	for _, t := range times {
		if t.Source != "store" {
			return "world"
		}
		at[t.EventID] = t.At
	}
	for i := range final {
		final[i].CommittedAt = at[final[i].ID]
	}
	return "store"
}
