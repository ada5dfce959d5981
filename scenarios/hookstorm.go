package scenarios

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/stormctl/stormctl/internal/engine"
	"github.com/stormctl/stormctl/internal/eventlog"
)

const (
	hookStagger = 400 * time.Millisecond
	// hookPatience is how long a driver keeps looking for a hook it was
	// told about before it gives up on it (the harness's 5 s).
	hookPatience = 5 * time.Second
)

// HookStorm is rounds x width branches, each racing its own hook against the
// 2.5 s watchdog. A round's hooks are created before its fan-out and
// disposed after its reconciles; the driver resumes hook i of a round
// i x 400 ms after the round's hook 0 appears (0 to 2.8 s), straddling the
// watchdog.
func HookStorm() Scenario {
	return Scenario{
		Name: "hook-storm",
		Description: "6x8 branches race their own hook against a 2.5s watchdog; a round's hooks created before its fan-out, " +
			"disposed after its reconciles; hook i resumed i x 400ms (0-2.8s) after hook 0 appears",
		Program: stormProgram(stormShape{roundHooks: true, race: raceHook}),
		Steps:   steps("recover", "finalize", "release", "reconcile"),
		Input:   stormInputFor,
		Reads:   []eventlog.Type{eventlog.HookCreated},
		Drive: func(ctx context.Context, h Hooks, runID string, env Env) error {
			return driveRoundHooks(ctx, h, runID, env, hookStormOffset)
		},
		Check: func(in, out json.RawMessage) error {
			return checkStorm(in, out, stormWant{win: pathHook, won: hookPayload})
		},
	}
}

func hookToken(r, b int) string   { return fmt.Sprintf("r%d-b%d", r, b) }
func hookPayload(r, b int) string { return fmt.Sprintf("hook(r=%d,b=%d)", r, b) }

func raceHook(c *engine.Ctx, in stormInput, br *Branch, h *engine.Hook) error {
	var err error
	br.Path, br.Won, err = raceWatchdog(c, h.Next(), c.Sleep(in.dur(watchdog)), pathHook)
	return err
}

// hookStormOffset is when hook-storm's driver resumes hook b of a round,
// after the round's hook 0 appeared, at time scale 1.
func hookStormOffset(_ int, b int) time.Duration { return time.Duration(b) * hookStagger }

// driveRoundHooks watches the log for each round's hooks (tokens r<r>-b<b>)
// and resumes hook b of round r offset(r, b) (time-scaled) after the
// round's hook 0 first appeared.
func driveRoundHooks(ctx context.Context, h Hooks, runID string, env Env, offset func(r, b int) time.Duration) error {
	g, ctx := errgroup.WithContext(ctx)
	g.Go(func() error {
		roundStart := map[int]time.Time{}
		scheduled := map[string]bool{}
		for {
			if env.sleep(ctx, env.Dur(250*time.Millisecond)) != nil {
				return nil
			}
			log, err := h.Log(ctx, runID)
			if err != nil {
				continue // retried at the next poll; the run's outcome says the rest
			}
			now := time.Now()
			hooks := roundHooks(log)
			for _, rb := range hooks {
				if _, ok := roundStart[rb[0]]; !ok && rb[1] == 0 {
					roundStart[rb[0]] = now
				}
			}
			for _, rb := range hooks {
				r, b := rb[0], rb[1]
				start, ok := roundStart[r]
				if !ok || scheduled[hookToken(r, b)] {
					continue
				}
				scheduled[hookToken(r, b)] = true
				at := start.Add(env.Dur(offset(r, b)))
				g.Go(func() error { return resumeAt(ctx, h, runID, env, at, r, b) })
			}
		}
	})
	return g.Wait()
}

// roundHooks lists the (round, branch) of every round hook in the log.
func roundHooks(log []eventlog.Event) [][2]int {
	var out [][2]int
	for _, e := range log {
		var r, b int
		if e.Type != eventlog.HookCreated {
			continue
		}
		if n, err := fmt.Sscanf(e.Token, "r%d-b%d", &r, &b); err != nil || n != 2 || e.Token != hookToken(r, b) {
			continue
		}
		out = append(out, [2]int{r, b})
	}
	return out
}

// resumeAt resumes hook (r, b) at time at, retrying for a while when it is
// not found.
func resumeAt(ctx context.Context, h Hooks, runID string, env Env, at time.Time, r, b int) error {
	return resumeTokenAt(ctx, h, runID, env, at, hookToken(r, b), hookPayload(r, b))
}

// resumeTokenAt resumes the run's hook on token with payload at time at
// (the token is the dedup), retrying for a while when it is not found.
func resumeTokenAt(ctx context.Context, h Hooks, runID string, env Env, at time.Time, token, payload string) error {
	if env.sleep(ctx, time.Until(at)) != nil {
		return nil
	}
	giveUp := time.Now().Add(env.Dur(hookPatience))
	for {
		err := h.ResumeHook(ctx, runID, token, payload, token)
		switch {
		case err == nil, errors.Is(err, engine.ErrHookDisposed), ctx.Err() != nil:
			return nil
		case errors.Is(err, eventlog.ErrUnavailable):
			giveUp = giveUp.Add(env.Dur(50 * time.Millisecond)) // a sender retries a store that blinked
		case !errors.Is(err, engine.ErrHookNotFound):
			return fmt.Errorf("resume %s: %w", token, err)
		case time.Now().After(giveUp):
			return nil // as the harness: a hook that never shows is the run's business
		}
		if env.sleep(ctx, env.Dur(50*time.Millisecond)) != nil {
			return nil
		}
	}
}
