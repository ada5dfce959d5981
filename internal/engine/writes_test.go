package engine_test

import (
	"context"
	"encoding/json"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stormctl/stormctl/internal/engine"
	"github.com/stormctl/stormctl/internal/eventlog"
	"github.com/stormctl/stormctl/worlds"
)

// gate is a world whose appends of the types in want wait, before they go
// to the world beneath, until want[type] appends of that type are waiting
// together, or patience has passed. It counts the appends of each type
// that had to wait out patience, and the most of each type ever in flight
// together: a writer that issues a type's appends concurrently fills the
// gate at once; one that issues them one at a time waits out patience on
// every append.
type gate struct {
	worlds.World
	want     map[eventlog.Type]int
	patience time.Duration
	// refuse, if set, is the type whose first append the world refuses
	// (a store's entity check saying no), after the gate.
	refuse eventlog.Type

	mu       sync.Mutex
	waiting  map[eventlog.Type]int
	release  map[eventlog.Type]chan struct{}
	inFlight map[eventlog.Type]int
	peak     map[eventlog.Type]int
	timedOut map[eventlog.Type]int
}

func newGate(w worlds.World, want map[eventlog.Type]int, patience time.Duration) *gate {
	g := &gate{World: w, want: want, patience: patience, waiting: map[eventlog.Type]int{},
		release: map[eventlog.Type]chan struct{}{}, inFlight: map[eventlog.Type]int{}, peak: map[eventlog.Type]int{}, timedOut: map[eventlog.Type]int{}}
	for t := range want {
		g.release[t] = make(chan struct{})
	}
	return g
}

func (g *gate) Append(ctx context.Context, runID string, d []eventlog.Draft) ([]eventlog.Event, error) {
	t := d[0].Type
	g.mu.Lock()
	g.inFlight[t]++
	g.peak[t] = max(g.peak[t], g.inFlight[t])
	refuse := t == g.refuse
	if refuse {
		g.refuse = ""
	}
	g.mu.Unlock()
	defer func() {
		g.mu.Lock()
		g.inFlight[t]--
		g.mu.Unlock()
	}()
	g.hold(ctx, t)
	if refuse {
		return nil, &eventlog.RefusedError{RunID: runID, Type: t, Reason: "TestRefusal", Message: "refused"}
	}
	return g.World.Append(ctx, runID, d)
}

// hold waits until g.want[t] appends of type t wait together, patience
// passes, or ctx ends.
func (g *gate) hold(ctx context.Context, t eventlog.Type) {
	g.mu.Lock()
	n, gated := g.want[t]
	if !gated {
		g.mu.Unlock()
		return
	}
	g.waiting[t]++
	if g.waiting[t] >= n {
		close(g.release[t])
		g.release[t], g.waiting[t] = make(chan struct{}), 0
		g.mu.Unlock()
		return
	}
	ch := g.release[t]
	g.mu.Unlock()
	timer := time.NewTimer(g.patience)
	defer timer.Stop()
	select {
	case <-ch:
		return
	case <-timer.C:
	case <-ctx.Done():
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	select {
	case <-ch: // released as the timer fired
	default:
		g.waiting[t]--
		g.timedOut[t]++
	}
}

// stepsThenHooks calls three steps, then creates four hooks, and awaits
// them all: one suspension derives 3 step_created and 4 hook_created, in
// that call order.
func stepsThenHooks(c *engine.Ctx) (any, error) {
	var fs []*engine.Future
	for _, name := range []string{"a", "b", "c"} {
		fs = append(fs, c.Step(name, 1))
	}
	for _, token := range []string{"t0", "t1", "t2", "t3"} {
		fs = append(fs, c.Hook(token).Next())
	}
	_, err := c.Await(c.All(fs...))
	return nil, err
}

const writesRun = "wrun_writes"

// invokeGated runs one invocation of stepsThenHooks on a fresh run of a
// local world behind g's gate, on a Detached runtime under policy, and
// returns what it added to the log.
func invokeGated(t *testing.T, policy engine.Policy, wrap func(worlds.World) *gate) (*gate, []eventlog.Event) {
	t.Helper()
	ctx := t.Context()
	w := openLocal(ctx, t)
	if err := w.CreateRun(ctx, eventlog.Run{ID: writesRun, Scheme: eventlog.SchemeULID}); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Append(ctx, writesRun, []eventlog.Draft{{Type: eventlog.RunCreated, Payload: json.RawMessage(`null`)}}); err != nil {
		t.Fatal(err)
	}
	g := wrap(w)
	rt := engine.New(ctx, engine.Config{World: g, Program: stepsThenHooks, Detached: true, Backoff: time.Millisecond,
		Knobs: engine.Knobs{Scheme: eventlog.SchemeULID, Policy: policy}})
	rt.Invoke(ctx, writesRun, engine.Delivery{})
	rt.Close()
	log, err := engine.New(ctx, engine.Config{World: w}).Log(ctx, writesRun)
	if err != nil {
		t.Fatal(err)
	}
	return g, log[1:]
}

// TestParallelWrites: under writes=parallel one suspension's hook_created
// appends are in flight together, then its step_created appends, hooks
// first whatever the call order; under writes=serial (the zero value too)
// no two are, and the log keeps the call order. A refusal in the hook
// phase ends the write before the steps, the other hooks landing.
func TestParallelWrites(t *testing.T) {
	t.Parallel()
	hooks := []eventlog.Type{eventlog.HookCreated, eventlog.HookCreated, eventlog.HookCreated, eventlog.HookCreated}
	steps := []eventlog.Type{eventlog.StepCreated, eventlog.StepCreated, eventlog.StepCreated}
	want := map[eventlog.Type]int{eventlog.HookCreated: 4, eventlog.StepCreated: 3}
	const patience = 100 * time.Millisecond
	for _, tc := range []struct {
		name     string
		writes   engine.WritesPolicy
		refuse   eventlog.Type
		peak     map[eventlog.Type]int
		timedOut map[eventlog.Type]int
		log      []eventlog.Type
	}{
		{name: "serial", writes: engine.WritesSerial,
			peak:     map[eventlog.Type]int{eventlog.HookCreated: 1, eventlog.StepCreated: 1},
			timedOut: map[eventlog.Type]int{eventlog.HookCreated: 4, eventlog.StepCreated: 3},
			log:      append(slices.Clone(steps), hooks...)},
		{name: "zero value is serial", writes: "",
			peak:     map[eventlog.Type]int{eventlog.HookCreated: 1, eventlog.StepCreated: 1},
			timedOut: map[eventlog.Type]int{eventlog.HookCreated: 4, eventlog.StepCreated: 3},
			log:      append(slices.Clone(steps), hooks...)},
		{name: "parallel", writes: engine.WritesParallel,
			peak:     map[eventlog.Type]int{eventlog.HookCreated: 4, eventlog.StepCreated: 3},
			timedOut: map[eventlog.Type]int{},
			log:      append(slices.Clone(hooks), steps...)},
		{name: "parallel, one hook refused", writes: engine.WritesParallel, refuse: eventlog.HookCreated,
			peak:     map[eventlog.Type]int{eventlog.HookCreated: 4},
			timedOut: map[eventlog.Type]int{},
			log:      hooks[:3]},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			policy := engine.DefaultPolicy()
			policy.Writes = tc.writes
			g, added := invokeGated(t, policy, func(w worlds.World) *gate {
				g := newGate(w, want, patience)
				g.refuse = tc.refuse
				return g
			})
			g.mu.Lock()
			defer g.mu.Unlock()
			if got := types(added); !slices.Equal(got, tc.log) {
				t.Errorf("the invocation added %v, want %v", got, tc.log)
			}
			for _, typ := range []eventlog.Type{eventlog.HookCreated, eventlog.StepCreated} {
				if g.peak[typ] != tc.peak[typ] {
					t.Errorf("%s: at most %d appends in flight together, want %d", typ, g.peak[typ], tc.peak[typ])
				}
				if g.timedOut[typ] != tc.timedOut[typ] {
					t.Errorf("%s: %d appends waited out the gate, want %d", typ, g.timedOut[typ], tc.timedOut[typ])
				}
			}
		})
	}
}
