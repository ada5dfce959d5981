package scenarios

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/stormctl/stormctl/engine"
	"github.com/stormctl/stormctl/eventlog"
)

const controlSleep = 5 * time.Second

// controlInput is the input of control runs.
type controlInput struct {
	Iterations int     `json:"iterations"`
	Scale      float64 `json:"scale"`
}

// ControlIteration is one iteration's ledger entry.
type ControlIteration struct {
	I       int    `json:"i"`
	Path    string `json:"path"`
	Tick    string `json:"tick"`
	Payload string `json:"payload,omitempty"`
	Late    string `json:"late,omitempty"`
}

// Control is the hook-sleep loop: one step, then a hook raced against a 5 s
// sleep, one more step on the timer path. One thing is in flight at a time
// and the driver keeps the hook well clear of the timer, so it must never
// corrupt: a corrupted control means the harness is broken.
func Control() Scenario {
	return Scenario{
		Name:        "control",
		Description: "4 iterations of a step then a hook raced against a 5s sleep, resumed well clear of the timer; must never corrupt",
		Program:     controlProgram,
		Steps:       steps("tick", "late"),
		Input: func(env Env, _ int) any {
			return controlInput{Iterations: 4, Scale: env.Scale}
		},
		Drive: driveControl,
		Check: checkControl,
	}
}

func controlProgram(c *engine.Ctx) (any, error) {
	var in controlInput
	if err := c.Decode(&in); err != nil {
		return nil, err
	}
	short := ms(time.Duration(float64(shortStep) * in.Scale))
	var out []ControlIteration
	for i := range in.Iterations {
		it := ControlIteration{I: i}
		var err error
		if it.Tick, err = await[string](c, c.Step("tick", stepArgs{R: i, Ms: short})); err != nil {
			return nil, err
		}
		h := c.Hook(fmt.Sprintf("ctl-%d", i))
		it.Path, it.Payload, err = raceWatchdog(c, h.Next(), c.Sleep(time.Duration(float64(controlSleep)*in.Scale)), pathHook)
		if err != nil {
			return nil, err
		}
		if it.Path == pathTimer {
			if it.Late, err = await[string](c, c.Step("late", stepArgs{R: i, Ms: short})); err != nil {
				return nil, err
			}
		}
		h.Dispose()
		out = append(out, it)
	}
	return out, nil
}

func controlPayload(i int) string { return fmt.Sprintf("ctl(i=%d)", i) }

// driveControl resumes the hook of even iterations 40% into the sleep and
// leaves odd ones to the timer. It never resumes within 20% of the sleep's
// length of the timer (nor within the latency profile's longest fact window),
// so no two facts race.
func driveControl(ctx context.Context, h Hooks, runID string, env Env) error {
	done := map[int]bool{}
	for {
		if sleepCtx(ctx, env.Dur(250*time.Millisecond)) != nil {
			return nil
		}
		log, err := h.Log(ctx, runID)
		if err != nil {
			continue
		}
		for i, e := range log {
			var it int
			if e.Type != eventlog.HookCreated {
				continue
			}
			if _, err := fmt.Sscanf(e.Token, "ctl-%d", &it); err != nil || done[it] || it%2 == 1 {
				continue
			}
			resume, ok := controlResumeTime(log[i+1:], env)
			if !ok {
				continue // the sleep is not in the log yet
			}
			done[it] = true
			if resume.IsZero() {
				continue // too late to stay clear of the timer: let it win
			}
			if sleepCtx(ctx, time.Until(resume)) != nil {
				return nil
			}
			err := h.ResumeHook(ctx, runID, e.Token, controlPayload(it), e.Token)
			if err != nil && !errors.Is(err, engine.ErrHookDisposed) && ctx.Err() == nil {
				return fmt.Errorf("resume %s: %w", e.Token, err)
			}
		}
	}
}

// controlResumeTime finds the sleep raced against the hook (the first
// wait_created after it) and returns when to resume: 40% into the sleep, or
// zero when that is no longer clear of the timer.
func controlResumeTime(after []eventlog.Event, env Env) (time.Time, bool) {
	for _, e := range after {
		if e.Type != eventlog.WaitCreated {
			continue
		}
		var p struct {
			DurationMs int64     `json:"durationMs"`
			ResumeAt   time.Time `json:"resumeAt"`
		}
		if json.Unmarshal(e.Payload, &p) != nil {
			return time.Time{}, false
		}
		d := time.Duration(p.DurationMs) * time.Millisecond
		clear := max(d/5, 2*env.MaxFactDelay)
		at := p.ResumeAt.Add(-d * 6 / 10)
		if time.Until(at) < 0 {
			at = time.Now()
		}
		if p.ResumeAt.Sub(at) < clear {
			return time.Time{}, true
		}
		return at, true
	}
	return time.Time{}, false
}

func checkControl(rawIn, rawOut json.RawMessage) error {
	var in controlInput
	var out []ControlIteration
	if err := json.Unmarshal(rawIn, &in); err != nil {
		return fmt.Errorf("input: %w", err)
	}
	if err := json.Unmarshal(rawOut, &out); err != nil {
		return fmt.Errorf("output: %w", err)
	}
	if len(out) != in.Iterations {
		return fmt.Errorf("%d iterations, want %d", len(out), in.Iterations)
	}
	for i, it := range out {
		if it.I != i || it.Tick != expect("tick", stepArgs{R: i}) {
			return fmt.Errorf("iteration %d: tick returned %q", i, it.Tick)
		}
		switch it.Path {
		case pathHook:
			if it.Payload != controlPayload(i) || it.Late != "" {
				return fmt.Errorf("iteration %d: hook path with payload %q late %q", i, it.Payload, it.Late)
			}
		case pathTimer:
			if it.Late != expect("late", stepArgs{R: i}) || it.Payload != "" {
				return fmt.Errorf("iteration %d: timer path with late %q payload %q", i, it.Late, it.Payload)
			}
		default:
			return fmt.Errorf("iteration %d: unknown path %q", i, it.Path)
		}
	}
	return nil
}
