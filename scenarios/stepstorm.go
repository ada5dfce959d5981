package scenarios

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/stormctl/stormctl/engine"
)

const (
	settleBase   = 2200 * time.Millisecond
	settleSpread = 500 * time.Millisecond
)

// StepStorm is rounds x width branches, each racing a slow step (settle,
// 2.2 s ± 0.5 s per branch) against a 2.5 s watchdog, while a side hook the
// workflow never reads is poked every 0.75–1 s.
func StepStorm() Scenario {
	return Scenario{
		Name:        "step-storm",
		Description: "6x8 branches race a 2.2s±0.5s step against a 2.5s watchdog; recover/finalize/release behind the race; a side hook poked every ~0.75-1s",
		Program:     stormProgram(raceSettle, true),
		Steps:       steps("settle", "recover", "finalize", "release", "reconcile"),
		Input: func(env Env, _ int) any {
			return stormInput{Rounds: 6, Width: 8, Scale: env.Scale, Seed: env.Seed}
		},
		Drive: drivePoke,
		Check: func(in, out json.RawMessage) error {
			return checkStorm(in, out, pathStep, func(r, b int) string { return expect("settle", stepArgs{R: r, B: b}) })
		},
	}
}

func raceSettle(c *engine.Ctx, in stormInput, r, b int) (string, string, error) {
	c.Attr(fmt.Sprintf("r%d.b%d", r, b), "racing")
	settle := in.dur(settleBase + jitter(settleSpread, in.Seed, r, b))
	step := c.Step("settle", stepArgs{R: r, B: b, Ms: ms(settle)})
	return raceWatchdog(c, step, c.Sleep(in.dur(watchdog)), pathStep)
}

// drivePoke resumes the side hook every 0.75–1 s until ctx ends.
func drivePoke(ctx context.Context, h Hooks, runID string, env Env) error {
	for k := 0; ; k++ {
		gap := env.Dur(875*time.Millisecond + jitter(125*time.Millisecond, env.Seed, k))
		if sleepCtx(ctx, gap) != nil {
			return nil
		}
		err := h.ResumeHook(ctx, runID, "poke", map[string]int{"k": k}, fmt.Sprintf("poke-%d", k))
		switch {
		case err == nil, errors.Is(err, engine.ErrHookNotFound):
		case errors.Is(err, engine.ErrHookDisposed), ctx.Err() != nil:
			return nil
		default:
			return fmt.Errorf("poke %d: %w", k, err)
		}
	}
}
