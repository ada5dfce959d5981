package engine_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stormctl/stormctl/internal/base/clock"
	"github.com/stormctl/stormctl/internal/engine"
	"github.com/stormctl/stormctl/internal/eventlog"
	"github.com/stormctl/stormctl/internal/history"
	"github.com/stormctl/stormctl/worlds"
)

// errOdd is an error no world classifies: neither a store answer the engine
// knows nor an unreachable store.
var errOdd = errors.New("decode row: unexpected column \"payload2\"")

// failOnce fails the first List (load) or the first unfenced Append of
// type (write) with err, passing everything else to the world.
type failOnce struct {
	worlds.World
	list bool
	typ  eventlog.Type
	err  error
	mu   sync.Mutex
	done bool
}

func (f *failOnce) fire(want bool) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !want || f.done {
		return false
	}
	f.done = true
	return true
}

func (f *failOnce) List(ctx context.Context, runID string, after eventlog.Cursor, limit int) (eventlog.Page, error) {
	if f.fire(f.list) {
		return eventlog.Page{}, f.err
	}
	return f.World.List(ctx, runID, after, limit)
}

func (f *failOnce) Append(ctx context.Context, runID string, d []eventlog.Draft) ([]eventlog.Event, error) {
	if f.fire(!f.list && len(d) == 1 && d[0].Type == f.typ) {
		return nil, f.err
	}
	return f.World.Append(ctx, runID, d)
}

// TestUnrecognisedErrorsAreNotInfra covers the default branches of the
// engine's load-failure and suspension-write handling and the step worker:
// an error that is not eventlog.ErrUnavailable is counted as unrecognised
// with its text, never as infrastructure; an unavailable store is counted
// as infrastructure and dated, and the store answering later is dated after
// it. Before, both branches counted every unrecognised error as infra, so
// a run stopped by one read as an unreachable store.
func TestUnrecognisedErrorsAreNotInfra(t *testing.T) {
	unavailable := eventlog.Unavailable("test", context.DeadlineExceeded)
	tests := []struct {
		name string
		list bool
		typ  eventlog.Type
		err  error
		// ends says the run completes after the failure (the engine
		// retries it); otherwise it stops there and the test waits for
		// the count.
		ends             bool
		infra, unrecogn  int64
		unrecognisedText string
	}{
		{name: "load/unrecognised", list: true, err: errOdd, ends: true, unrecogn: 1, unrecognisedText: errOdd.Error()},
		{name: "load/unavailable", list: true, err: unavailable, ends: true, infra: 1},
		{name: "suspension write/unrecognised", typ: eventlog.StepCreated, err: errOdd, unrecogn: 1,
			unrecognisedText: "append step_created: " + errOdd.Error()},
		{name: "suspension write/unavailable", typ: eventlog.StepCreated, err: unavailable, ends: true, infra: 1},
		{name: "step worker/unrecognised", typ: eventlog.StepStarted, err: errOdd, unrecogn: 1, unrecognisedText: errOdd.Error()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
			defer cancel()
			w := &failOnce{World: openLocal(ctx, t), list: tt.list, typ: tt.typ, err: tt.err}
			policy, scheme := singleRunner(false)
			prog := func(c *engine.Ctx) (any, error) {
				var v string
				err := c.AwaitInto(c.Step("a", 1), &v)
				return v, err
			}
			steps := map[string]engine.StepFunc{"a": func(json.RawMessage) (engine.StepOutcome, error) {
				return engine.StepOutcome{Result: "A"}, nil
			}}
			rt := engine.New(ctx, engine.Config{World: w, Program: prog, Steps: steps, Knobs: engine.Knobs{Scheme: scheme, Policy: policy}, Backoff: time.Millisecond})
			if tt.ends {
				startAndWait(ctx, t, rt, "run-1", "the run did not end after one failure")
			} else {
				if _, err := rt.Start(ctx, "run-1", nil); err != nil {
					t.Fatal(err)
				}
				awaitStats(ctx, t, rt, "run-1", func(s history.RunStats) bool { return s.Unrecognised+s.InfraErrors > 0 })
			}
			stats := rt.Finish("run-1")
			if stats.InfraErrors != tt.infra || stats.Unrecognised != tt.unrecogn {
				t.Fatalf("infra %d, unrecognised %d; want %d, %d", stats.InfraErrors, stats.Unrecognised, tt.infra, tt.unrecogn)
			}
			if stats.UnrecognisedErr != tt.unrecognisedText {
				t.Errorf("unrecognised error %q, want %q", stats.UnrecognisedErr, tt.unrecognisedText)
			}
			switch {
			case tt.infra > 0 && (stats.LastUnavailable.IsZero() || !strings.Contains(stats.LastUnavailableErr, "store unavailable")):
				t.Errorf("unavailable at %v (%q): want the time and text of the unavailable error", stats.LastUnavailable, stats.LastUnavailableErr)
			case tt.infra > 0 && !stats.LastStoreOK.After(stats.LastUnavailable):
				t.Errorf("the store answered last at %v, not after it was unavailable at %v, yet the run went on", stats.LastStoreOK, stats.LastUnavailable)
			case tt.infra == 0 && !stats.LastUnavailable.IsZero():
				t.Errorf("unavailable at %v (%q) with no unavailable error", stats.LastUnavailable, stats.LastUnavailableErr)
			case stats.LastStoreOK.IsZero():
				t.Error("the store answered the run, yet no answer is dated")
			}
		})
	}
}

// awaitStats waits until cond holds of runID's stats; ctx ending first
// fails the test.
func awaitStats(ctx context.Context, t *testing.T, rt *engine.Runtime, runID string, cond func(history.RunStats) bool) {
	t.Helper()
	for !cond(rt.Stats(runID)) {
		if clock.Sleep(ctx, time.Millisecond) != nil {
			t.Fatalf("stats %+v: the awaited count never came", rt.Stats(runID))
		}
	}
}

// hanging holds every List until its ctx ends, then fails it as an
// unreachable store would; blocked is closed when the first one waits.
type hanging struct {
	worlds.World
	once    sync.Once
	blocked chan struct{}
}

func (h *hanging) List(ctx context.Context, runID string, after eventlog.Cursor, limit int) (eventlog.Page, error) {
	h.once.Do(func() { close(h.blocked) })
	<-ctx.Done()
	return eventlog.Page{}, eventlog.Unavailable("hanging", ctx.Err())
}

// TestTheRunsEndIsNotTheStores: an operation cut short because its run
// ended is no evidence about the store, whatever error it comes back
// with: a run finished while its load hung records no unavailable store,
// and its only dated answer is its creation's.
func TestTheRunsEndIsNotTheStores(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	w := &hanging{World: openLocal(ctx, t), blocked: make(chan struct{})}
	policy, scheme := singleRunner(false)
	rt := engine.New(ctx, engine.Config{World: w, Program: func(*engine.Ctx) (any, error) { return nil, nil }, Knobs: engine.Knobs{Scheme: scheme, Policy: policy}})
	if _, err := rt.Start(ctx, "run-1", nil); err != nil {
		t.Fatal(err)
	}
	select {
	case <-w.blocked:
	case <-ctx.Done():
		t.Fatal("the run never loaded its log")
	}
	stats := rt.Finish("run-1")
	if !stats.LastUnavailable.IsZero() || stats.InfraErrors != 0 || stats.Unrecognised != 0 {
		t.Errorf("stats %+v: a load the run's end cut short counted against the store", stats)
	}
	if stats.LastStoreOK.IsZero() {
		t.Error("the run's creation was answered, yet no answer is dated")
	}
}
