package scenarios

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/stormctl/stormctl/internal/engine"
	"github.com/stormctl/stormctl/internal/eventlog"
)

const (
	controlIterations = 8
	// controlSleep is the sleep raced against the hook; the driver knows it
	// in the log by its durationMs.
	controlSleep = 5 * time.Second
	// The timer path's two parallel sleeps.
	controlWaitA = 1000 * time.Millisecond
	controlWaitB = 1250 * time.Millisecond
	// The driver resumes the hook once, 15 to 25 s after the run starts (or
	// as soon after as it is clear of the race's timer).
	controlResumeBase   = 15 * time.Second
	controlResumeSpread = 10 * time.Second
	controlToken        = "ctl"
	controlPayload      = "wake"
)

// controlInput is the input of control runs.
type controlInput struct {
	Iterations int     `json:"iterations"`
	Scale      float64 `json:"scale"`
}

// ControlIteration is one iteration's ledger entry.
type ControlIteration struct {
	I       int    `json:"i"`
	Path    string `json:"path"`
	Sync    string `json:"sync"`
	Payload string `json:"payload,omitempty"`
	Drain   string `json:"drain,omitempty"`
}

// Control is the harness's hook-sleep calibration: one hook, read through
// one pending read reused across iterations; 8 iterations of a sync step
// then that read raced against a 5 s sleep. The timer path sleeps 1 s and
// 1.25 s in parallel and goes on; a wake drains and returns. The driver
// resumes the hook once, 15-25 s in, clear of the race's timer, so no two
// facts race: a corrupted control means the harness is broken.
func Control() Scenario {
	return Scenario{
		Name: "control",
		Description: "hook-sleep: 8 iterations of a step then one reused hook read raced against a 5s sleep (timer: 1s and 1.25s sleeps in parallel; " +
			"wake: drain and return); resumed once 15-25s in, clear of the timer; must never corrupt",
		Program: controlProgram,
		Steps:   steps("sync", "drain"),
		Input: func(env Env, _ int) any {
			return controlInput{Iterations: controlIterations, Scale: env.Scale}
		},
		Drive: driveControl,
		Reads: []eventlog.Type{eventlog.WaitCreated, eventlog.WaitCompleted},
		Check: checkControl,
	}
}

func controlProgram(c *engine.Ctx) (any, error) {
	var in controlInput
	if err := c.Decode(&in); err != nil {
		return nil, err
	}
	dur := func(d time.Duration) time.Duration { return time.Duration(float64(d) * in.Scale) }
	short := ms(dur(shortStep))
	h := c.Hook(controlToken)
	var pending *engine.Future // the one pending read, reused until it wins
	var out []ControlIteration
	for i := range in.Iterations {
		it := ControlIteration{I: i}
		var err error
		if it.Sync, err = await[string](c, c.Step("sync", stepArgs{R: i, Ms: short})); err != nil {
			return nil, err
		}
		if pending == nil {
			pending = h.Next()
		}
		if it.Path, it.Payload, err = raceWatchdog(c, pending, c.Sleep(dur(controlSleep)), pathHook); err != nil {
			return nil, err
		}
		if it.Path == pathTimer {
			if _, err := c.Await(c.All(c.Sleep(dur(controlWaitA)), c.Sleep(dur(controlWaitB)))); err != nil {
				return nil, err
			}
			out = append(out, it)
			continue
		}
		if it.Drain, err = await[string](c, c.Step("drain", stepArgs{R: i, Ms: short})); err != nil {
			return nil, err
		}
		out = append(out, it)
		break // returnOnWake
	}
	h.Dispose()
	return out, nil
}

// controlResumeDelay is how long after the run starts the driver first
// tries to resume the hook, at time scale 1: 15 s plus a reproducible draw
// in [0, 10 s] per (storm seed, run).
func controlResumeDelay(seed uint64, runID string) time.Duration {
	return controlResumeBase + controlResumeSpread/2 + jitter(controlResumeSpread/2, seed, runKey(runID))
}

// driveControl resumes the hook once, at controlResumeDelay or, when the
// race's timer is too close then, at the first poll (every 250 ms) that
// finds it clear (controlClear).
func driveControl(ctx context.Context, h Hooks, runID string, env Env) error {
	if env.sleep(ctx, env.Dur(controlResumeDelay(env.Seed, runID))) != nil {
		return nil
	}
	for {
		log, err := h.Log(ctx, runID)
		if err == nil && controlClear(log, env, time.Now()) {
			err := h.ResumeHook(ctx, runID, controlToken, controlPayload, controlToken)
			switch {
			case err == nil, errors.Is(err, engine.ErrHookDisposed), ctx.Err() != nil:
				return nil // resumed, or the run is over (8 timer iterations)
			case !errors.Is(err, engine.ErrHookNotFound) && !errors.Is(err, eventlog.ErrUnavailable):
				return fmt.Errorf("resume %s: %w", controlToken, err)
			}
		}
		if env.sleep(ctx, env.Dur(250*time.Millisecond)) != nil {
			return nil
		}
	}
}

// controlClear reports whether a payload sent now stays clear of the race's
// timer: no race sleep (a wait_created of the scaled 5 s) is pending, or the
// pending one fires more than the clearance away, the clearance being
// max(20% of the sleep, 2 x the storm's longest fact window). A wait whose
// duration the log does not carry (the devkit worlds: the packages keep
// only a wait's resumeAt) counts as a race sleep. A race sleep
// is pending until its wait_completed is in the log, even past its
// resumeAt: the engine writes that completion at the first invocation after
// resumeAt (timer wake-ups are rounded up to whole seconds). An unreadable
// wait is not clear.
func controlClear(log []eventlog.Event, env Env, now time.Time) bool {
	raceMs := env.Dur(controlSleep).Milliseconds()
	pending := map[string]time.Time{}
	for _, e := range log {
		switch e.Type {
		case eventlog.WaitCreated:
			var p struct {
				DurationMs int64     `json:"durationMs"`
				ResumeAt   time.Time `json:"resumeAt"`
			}
			if json.Unmarshal(e.Payload, &p) != nil {
				return false
			}
			if p.DurationMs == raceMs || p.DurationMs == 0 {
				pending[e.CorrelationID] = p.ResumeAt
			}
		case eventlog.WaitCompleted:
			delete(pending, e.CorrelationID)
		}
	}
	d := time.Duration(raceMs) * time.Millisecond
	margin := max(d/5, 2*env.MaxFactDelay)
	for _, at := range pending {
		if at.Sub(now) <= margin {
			return false
		}
	}
	return true
}

// checkControl accepts the two correct ledgers: timer iterations ending in
// one wake, or every iteration on the timer path.
func checkControl(rawIn, rawOut json.RawMessage) error {
	var in controlInput
	var out []ControlIteration
	if err := json.Unmarshal(rawIn, &in); err != nil {
		return fmt.Errorf("input: %w", err)
	}
	if err := json.Unmarshal(rawOut, &out); err != nil {
		return fmt.Errorf("output: %w", err)
	}
	if len(out) == 0 || len(out) > in.Iterations {
		return fmt.Errorf("%d iterations, want 1 to %d", len(out), in.Iterations)
	}
	for i, it := range out {
		if it.I != i {
			return fmt.Errorf("iteration %d: ledger names iteration %d", i, it.I)
		}
		if want := expect("sync", stepArgs{R: i}); it.Sync != want {
			return fmt.Errorf("iteration %d: sync returned %q, want %q", i, it.Sync, want)
		}
		last := i == len(out)-1
		switch {
		case it.Path == pathTimer:
			if it.Payload != "" || it.Drain != "" {
				return fmt.Errorf("iteration %d: timer path with payload %q drain %q", i, it.Payload, it.Drain)
			}
			if last && len(out) != in.Iterations {
				return fmt.Errorf("the run ended after %d timer iterations, neither woken nor all %d", len(out), in.Iterations)
			}
		case it.Path == pathHook && !last:
			return fmt.Errorf("iteration %d: woken, but the run went on (it returns on a wake)", i)
		case it.Path == pathHook:
			if it.Payload != controlPayload {
				return fmt.Errorf("iteration %d: woken with %q, want %q", i, it.Payload, controlPayload)
			}
			if want := expect("drain", stepArgs{R: i}); it.Drain != want {
				return fmt.Errorf("iteration %d: drain returned %q, want %q", i, it.Drain, want)
			}
		default:
			return fmt.Errorf("iteration %d: unknown path %q", i, it.Path)
		}
	}
	return nil
}
