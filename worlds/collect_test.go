package worlds_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stormctl/stormctl/internal/eventlog"
	"github.com/stormctl/stormctl/internal/history"
	"github.com/stormctl/stormctl/worlds"
)

// listWorld is a world that lists a fixed log in pages of two, failing
// the first fails calls with an unavailable store.
type listWorld struct {
	worlds.World
	log   []eventlog.Event
	fails int
	calls int
}

func (w *listWorld) List(_ context.Context, _ string, after eventlog.Cursor, _ int) (eventlog.Page, error) {
	w.calls++
	if w.calls <= w.fails {
		return eventlog.Page{}, fmt.Errorf("list: %w", eventlog.ErrUnavailable)
	}
	i := 0
	for i < len(w.log) && !after.IsZero() && w.log[i].ID <= after.ID {
		i++
	}
	end := min(i+2, len(w.log))
	p := eventlog.Page{Events: w.log[i:end], More: end < len(w.log)}
	if end > i {
		p.Next = eventlog.After(w.log[end-1])
	}
	return p, nil
}

// storeWorld adds the store's commit times and a guard's counts.
type storeWorld struct {
	*listWorld
	source string
	err    error
}

func (w storeWorld) CommitTimes(context.Context, string) ([]worlds.CommitTime, error) {
	var out []worlds.CommitTime
	for i, e := range w.log {
		out = append(out, worlds.CommitTime{EventID: e.ID, At: time.Unix(int64(i+1), 0), Source: w.source})
	}
	return out, w.err
}

func (w storeWorld) GuardCounts(context.Context, string) (history.GuardCounts, error) {
	return history.GuardCounts{Evaluated: 3, Rejected: 1}, nil
}

// TestCollect: what a world holds of a run once it ended: its whole log
// (asked again while the store is unavailable), the store's commit times
// when the world has them, its guard's counts when the run had a guard.
func TestCollect(t *testing.T) {
	t.Parallel()
	log := []eventlog.Event{{ID: "e1"}, {ID: "e2"}, {ID: "e3"}}
	for _, tc := range []struct {
		name       string
		world      func() worlds.World
		guard      eventlog.Guard
		wantSource string
		wantCommit bool
		wantGuard  bool
		wantErr    bool
	}{
		{"a world's own times", func() worlds.World { return &listWorld{log: log} }, eventlog.GuardNone, "world", false, false, false},
		{"read again past an outage", func() worlds.World { return &listWorld{log: log, fails: 2} }, eventlog.GuardNone, "world", false, false, false},
		{"the store's times", func() worlds.World { return storeWorld{&listWorld{log: log}, "store", nil} }, eventlog.GuardNone, "store", true, false, false},
		{"times the world observed are no store's", func() worlds.World { return storeWorld{&listWorld{log: log}, "world", nil} }, eventlog.GuardNone, "world", false, false, false},
		{"commit times that failed", func() worlds.World {
			return storeWorld{&listWorld{log: log}, "store", errors.New("no track_commit_timestamp")}
		}, eventlog.GuardNone, "world", false, false, true},
		{"a guard's counts", func() worlds.World { return storeWorld{&listWorld{log: log}, "store", nil} }, eventlog.GuardCountIndex, "store", true, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			w := tc.world()
			// Through the recorder, as a storm collects: the optional
			// abilities are the recorded world's.
			got := worlds.Collect(t.Context(), worlds.Record(w, discard{}), "r", tc.guard)
			if got.ReadErr != nil || len(got.Final) != len(log) {
				t.Fatalf("final log of %d events (%v), want %d", len(got.Final), got.ReadErr, len(log))
			}
			if got.CommitSource != tc.wantSource || (got.CommitErr != nil) != tc.wantErr {
				t.Errorf("commit source %q (%v), want %q", got.CommitSource, got.CommitErr, tc.wantSource)
			}
			if committed := !got.Final[0].CommittedAt.IsZero(); committed != tc.wantCommit {
				t.Errorf("commit time on the final log: %v, want %v", committed, tc.wantCommit)
			}
			if (got.Guard != nil) != tc.wantGuard {
				t.Errorf("guard counts %+v, want some: %v", got.Guard, tc.wantGuard)
			}
		})
	}
}

// TestCollectGivesUpWithItsContext: a store that stays unavailable is
// asked again until the context ends, and the read error says unavailable.
func TestCollectGivesUpWithItsContext(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(t.Context())
	w := &endingWorld{listWorld: &listWorld{fails: 1 << 30}, after: 3, cancel: cancel}
	got := worlds.Collect(ctx, w, "r", eventlog.GuardNone)
	if !errors.Is(got.ReadErr, eventlog.ErrUnavailable) || w.calls != 3 {
		t.Errorf("read error %v after %d calls, want unavailable after 3", got.ReadErr, w.calls)
	}
}

// endingWorld ends the reader's context at its after-th List.
type endingWorld struct {
	*listWorld
	after  int
	cancel context.CancelFunc
}

func (w *endingWorld) List(ctx context.Context, runID string, after eventlog.Cursor, limit int) (eventlog.Page, error) {
	p, err := w.listWorld.List(ctx, runID, after, limit)
	if w.calls == w.after {
		w.cancel()
	}
	return p, err
}

type discard struct{}

func (discard) Record(history.Op) {}
