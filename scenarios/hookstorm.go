package scenarios

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/stormctl/stormctl/engine"
	"github.com/stormctl/stormctl/eventlog"
	"golang.org/x/sync/errgroup"
)

const hookStagger = 400 * time.Millisecond

// HookStorm is rounds x width branches, each racing its own hook against the
// 2.5 s watchdog; the driver resumes hook i of a round i x 400 ms after the
// round's hooks appear (0 to 2.8 s), straddling the watchdog.
func HookStorm() Scenario {
	return Scenario{
		Name:        "hook-storm",
		Description: "6x8 branches race their own hook against a 2.5s watchdog; hook i resumed after i x 400ms (0-2.8s); hooks disposed after the branch",
		Program:     stormProgram(raceHook, false),
		Steps:       steps("recover", "finalize", "release", "reconcile"),
		Input: func(env Env, _ int) any {
			return stormInput{Rounds: 6, Width: 8, Scale: env.Scale, Seed: env.Seed}
		},
		Drive: driveHooks,
		Check: func(in, out json.RawMessage) error {
			return checkStorm(in, out, pathHook, func(r, b int) string { return hookPayload(r, b) })
		},
	}
}

func hookToken(r, b int) string   { return fmt.Sprintf("r%d-b%d", r, b) }
func hookPayload(r, b int) string { return fmt.Sprintf("hook(r=%d,b=%d)", r, b) }

func raceHook(c *engine.Ctx, in stormInput, r, b int) (string, string, error) {
	h := c.Hook(hookToken(r, b))
	defer h.Dispose()
	return raceWatchdog(c, h.Next(), c.Sleep(in.dur(watchdog)), pathHook)
}

// driveHooks watches the log for each round's hooks and resumes hook b of
// round r b x 400 ms after the round's first hook appeared.
func driveHooks(ctx context.Context, h Hooks, runID string, env Env) error {
	g, ctx := errgroup.WithContext(ctx)
	g.Go(func() error {
		roundStart := map[int]time.Time{}
		seen := map[string]bool{}
		for {
			if sleepCtx(ctx, env.Dur(250*time.Millisecond)) != nil {
				return nil
			}
			log, err := h.Log(ctx, runID)
			if err != nil {
				continue // retried at the next poll; the run's outcome says the rest
			}
			for _, e := range log {
				var r, b int
				if e.Type != eventlog.HookCreated || seen[e.Token] {
					continue
				}
				if _, err := fmt.Sscanf(e.Token, "r%d-b%d", &r, &b); err != nil {
					continue
				}
				seen[e.Token] = true
				if _, ok := roundStart[r]; !ok {
					roundStart[r] = time.Now()
				}
				at := roundStart[r].Add(env.Dur(time.Duration(b) * hookStagger))
				g.Go(func() error { return resumeAt(ctx, h, runID, env, at, r, b) })
			}
		}
	})
	return g.Wait()
}

// resumeAt resumes hook (r, b) at time at, retrying while it is not found.
func resumeAt(ctx context.Context, h Hooks, runID string, env Env, at time.Time, r, b int) error {
	if sleepCtx(ctx, time.Until(at)) != nil {
		return nil
	}
	for {
		err := h.ResumeHook(ctx, runID, hookToken(r, b), hookPayload(r, b), hookToken(r, b))
		switch {
		case err == nil, errors.Is(err, engine.ErrHookDisposed), ctx.Err() != nil:
			return nil
		case !errors.Is(err, engine.ErrHookNotFound):
			return fmt.Errorf("resume %s: %w", hookToken(r, b), err)
		}
		if sleepCtx(ctx, env.Dur(50*time.Millisecond)) != nil {
			return nil
		}
	}
}
