package engine_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stormctl/stormctl/internal/engine"
	"github.com/stormctl/stormctl/internal/eventlog"
	"github.com/stormctl/stormctl/internal/history"
	"github.com/stormctl/stormctl/worlds"
)

// flaky calls a step whose name a test controls: while diverging > 0 the
// program calls "b" where the log has "a" (a replay that disagrees with the
// log), counting down once per replay.
func flaky(diverging *atomic.Int32, firstDone *atomic.Bool) engine.Program {
	return func(c *engine.Ctx) (any, error) {
		name := "a"
		if firstDone.Load() && diverging.Add(-1) >= 0 {
			name = "b"
		}
		var v string
		err := c.AwaitInto(c.Step(name, 1), &v)
		return v, err
	}
}

func TestRecoveryReplays(t *testing.T) {
	tests := []struct {
		name        string
		diverging   int32 // replays after the first that disagree with the log
		fenced      bool
		wantOutcome eventlog.Type
		wantCode    string
		wantRecover int64
		// wantRecovered counts the recovery replays that cleared a divergence.
		wantRecovered int64
	}{
		{"transient divergence recovers", 2, false, eventlog.RunCompleted, "", 2, 1},
		{"persistent divergence corrupts after three recoveries", 1000, false, eventlog.RunFailed, engine.CodeCorrupted, 3, 0},
		{"persistent divergence corrupts under a fence too", 1000, true, eventlog.RunFailed, engine.CodeCorrupted, 3, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
			defer cancel()
			w := openLocal(ctx, t)
			var diverging atomic.Int32
			var firstDone atomic.Bool
			diverging.Store(tt.diverging)
			policy, scheme := singleRunner(tt.fenced)
			steps := map[string]engine.StepFunc{
				"a": func(json.RawMessage) (engine.StepOutcome, error) {
					firstDone.Store(true) // from now on replays see step_created(a)
					return engine.StepOutcome{Result: "A"}, nil
				},
			}
			rt := engine.New(ctx, engine.Config{World: w, Program: flaky(&diverging, &firstDone), Steps: steps,
				Knobs: engine.Knobs{Scheme: scheme, Policy: policy}, Backoff: time.Millisecond})
			startAndWait(ctx, t, rt, "run-1", "run did not end")
			stats := rt.Finish("run-1")
			evs, err := rt.Log(ctx, "run-1")
			if err != nil {
				t.Fatal(err)
			}
			last := evs[len(evs)-1]
			if last.Type != tt.wantOutcome || engine.Failure(last).Code != tt.wantCode {
				t.Fatalf("last event %s %s, want %s %s", last.Type, last.Payload, tt.wantOutcome, tt.wantCode)
			}
			if stats.Recoveries != tt.wantRecover {
				t.Fatalf("recoveries %d, want %d (stats %+v)", stats.Recoveries, tt.wantRecover, stats)
			}
			if stats.Recovered != tt.wantRecovered {
				t.Fatalf("recovered divergences %d, want %d (stats %+v)", stats.Recovered, tt.wantRecovered, stats)
			}
		})
	}
}

// opSink keeps recorded operations.
type opSink struct {
	mu  sync.Mutex
	ops []history.Op
}

func (s *opSink) Record(op history.Op) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ops = append(s.ops, op)
}

// TestWaitCompletedByInvocation: no timer writes wait_completed; the timer
// only enqueues a wake-up (rounded up to whole ticks), and the invocation
// that loads the log after resumeAt writes the completion, carrying the
// wait's resumeAt.
func TestWaitCompletedByInvocation(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	w := openLocal(ctx, t)
	sink := &opSink{}
	sleepy := func(c *engine.Ctx) (any, error) {
		_, err := c.Await(c.Sleep(250 * time.Millisecond))
		return "woke", err
	}
	rt := engine.New(ctx, engine.Config{World: worlds.Record(w, sink), Program: sleepy,
		Knobs: engine.Knobs{Policy: engine.Policy{IDs: engine.IDsCallsite, Wake: engine.WakeEngine, Fence: engine.FenceNone,
			OnReject: engine.RejectRederive, Admission: engine.AdmitAll}},
		TimerTick: 100 * time.Millisecond})
	startAndWait(ctx, t, rt, "run-1", "run did not end")
	stats := rt.Finish("run-1")
	evs, err := rt.Log(ctx, "run-1")
	if err != nil {
		t.Fatal(err)
	}
	at := map[eventlog.Type]int{}
	for i, e := range evs {
		at[e.Type] = i
	}
	iCreated, okC := at[eventlog.WaitCreated]
	iDone, okD := at[eventlog.WaitCompleted]
	iEnd, okE := at[eventlog.RunCompleted]
	if !okC || !okD || !okE {
		t.Fatalf("log %v lacks the wait or the run's end", evs)
	}
	// The run ends after its wake-up: the log holds the wait's creation,
	// then its completion, then the run's end; and one wake-up did it (the
	// run's first invocation and the one the timer delivered), the timer
	// firing no earlier than the wait was due (see TestWakeDelay).
	if !(iCreated < iDone && iDone < iEnd) {
		t.Fatalf("log %v: want wait_created, then wait_completed, then run_completed", evs)
	}
	if stats.Invocations != 2 {
		t.Fatalf("%d invocations, want 2: the run's first and its wake-up", stats.Invocations)
	}
	created, done := &evs[iCreated], &evs[iDone]
	var c, d struct {
		ResumeAt time.Time `json:"resumeAt"`
	}
	_ = json.Unmarshal(created.Payload, &c)
	_ = json.Unmarshal(done.Payload, &d)
	if !c.ResumeAt.Equal(d.ResumeAt) || d.ResumeAt.IsZero() {
		t.Fatalf("wait_completed resumeAt %s, wait_created %s", d.ResumeAt, c.ResumeAt)
	}
	sink.mu.Lock()
	defer sink.mu.Unlock()
	for _, op := range sink.ops {
		for _, e := range op.Wrote {
			if e.Type == eventlog.WaitCompleted && op.Err == "" {
				if !strings.HasPrefix(op.Actor, "inv-") {
					t.Fatalf("wait_completed written by %q, want an invocation", op.Actor)
				}
				if e.MintedAt.Before(c.ResumeAt) {
					t.Fatalf("wait_completed minted at %s, before resumeAt %s", e.MintedAt, c.ResumeAt)
				}
			}
		}
	}
}

// TestPanicEndsTheRunNotTheProcess: a panic on a goroutine of the runtime
// (here a step function's) ends its run and is reported by Panicked, so a
// storm can stop with an internal error instead of the process dying.
func TestPanicEndsTheRunNotTheProcess(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	w := openLocal(ctx, t)
	prog := func(c *engine.Ctx) (any, error) {
		var v string
		err := c.AwaitInto(c.Step("a", 1), &v)
		return v, err
	}
	steps := map[string]engine.StepFunc{"a": func(json.RawMessage) (engine.StepOutcome, error) { panic("boom in a step") }}
	rt := engine.New(ctx, engine.Config{World: w, Program: prog, Steps: steps, Knobs: engine.Knobs{Scheme: eventlog.SchemeULID}, Backoff: time.Millisecond})
	if err := rt.Panicked(); err != nil {
		t.Fatalf("Panicked() = %v before any run", err)
	}
	startAndWait(ctx, t, rt, "run-1", "the run did not end after its step panicked")
	rt.Finish("run-1")
	err := rt.Panicked()
	if err == nil || !strings.Contains(err.Error(), "panic: boom in a step") {
		t.Fatalf("Panicked() = %v, want the step's panic", err)
	}
	cancel()
	rt.Wait()
}
