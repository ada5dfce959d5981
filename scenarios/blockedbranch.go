package scenarios

import (
	"context"
	"encoding/json"
	"time"

	"github.com/stormctl/stormctl/internal/engine"
	"github.com/stormctl/stormctl/internal/eventlog"
)

const (
	// launchStagger spaces the launch steps of a round's branches, so their
	// completions commit one after another (2.2 s to 4.3 s).
	launchStagger = 300 * time.Millisecond
	// blockedWatchdog is sized to lose to the resume burst: it puts a wait
	// into each race rather than firing.
	blockedWatchdog = 8 * time.Second
	// The resume burst lands 4 to 5.2 s after a round's hook 0 appears, at
	// the tail of the launch completions.
	burstOffset = 4 * time.Second
	burstJitter = 1200 * time.Millisecond
)

// BlockedBranch is hook-storm with each branch first parked on a launch
// step: rounds x width branches run settle (2.2 s + b x 300 ms), then race
// their own hook against an 8 s watchdog. The driver resumes a round's
// hooks in one burst aimed at the tail of the launch completions, so a
// hook-woken replay can hold a log that ends just before a sibling's launch
// completes.
func BlockedBranch() Scenario {
	return Scenario{
		Name: "blocked-branch",
		Description: "6x8 branches each run a launch step (2.2s + b x 300ms, sets an attribute inside), then race their own hook " +
			"against an 8s watchdog; hooks as hook-storm; all 8 resumed in one burst 4-5.2s after hook 0 appears",
		Program: stormProgram(stormShape{roundHooks: true, race: raceBlocked}),
		Steps:   settleSteps(),
		Input:   stormInputFor,
		Reads:   []eventlog.Type{eventlog.HookCreated},
		Drive: func(ctx context.Context, h Hooks, runID string, env Env) error {
			return driveRoundHooks(ctx, h, runID, env, func(r, _ int) time.Duration {
				return blockedBurstOffset(env.Seed, runID, r)
			})
		},
		Check: func(in, out json.RawMessage) error {
			return checkStorm(in, out, stormWant{win: pathHook, won: hookPayload, launch: true})
		},
	}
}

// launchDelay is branch b's launch duration at time scale 1.
func launchDelay(b int) time.Duration { return settleBase + time.Duration(b)*launchStagger }

func raceBlocked(c *engine.Ctx, in stormInput, br *Branch, h *engine.Hook) error {
	var err error
	launch := c.Step("settle", stepArgs{R: br.R, B: br.B, Ms: ms(in.dur(launchDelay(br.B)))})
	if br.Launch, err = await[string](c, launch); err != nil {
		return err
	}
	br.Path, br.Won, err = raceWatchdog(c, h.Next(), c.Sleep(in.dur(blockedWatchdog)), pathHook)
	return err
}

// blockedBurstOffset is when the driver resumes round r's hooks, after the
// round's hook 0 appeared, at time scale 1: 4 s plus a reproducible draw in
// [0, 1.2 s] per (storm seed, run, round), so runs sweep the window.
func blockedBurstOffset(seed uint64, runID string, r int) time.Duration {
	return burstOffset + burstJitter/2 + jitter(burstJitter/2, seed, runKey(runID), r)
}
