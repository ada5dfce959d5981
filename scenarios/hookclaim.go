package scenarios

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/stormctl/stormctl/internal/engine"
	"github.com/stormctl/stormctl/internal/eventlog"
)

// Paths of a hook-claim race beyond the hook and the timer: the hook's
// token was taken by another run (spec 8's HookForceClaimedError), or the
// world answered its forced creation with a hook_conflict.
const (
	pathClaimed  = "claimed"
	pathConflict = "conflict"
)

// hookClaimWidth is hook-claim's branches a round: half hook-storm's, as
// every run of a cell writes into the others' logs.
const hookClaimWidth = 4

// HookClaim is hook-storm's race on tokens the runs of a storm share:
// round r's branch b of every run creates its hook on token
// claim-r<r>-b<b> with force (createHook({experimental_force: true}),
// spec 8), and races its first payload against the 2.5 s watchdog. Under
// hook-claim=refuse the world answers every creation but the token's first
// with a hook_conflict (the conflict path); under hook-claim=force each
// creation takes the token from the run that held it, whose hook is
// disposed in its own log with forceClaimedBy (the claimed path, once its
// replay reads it). Each run's driver resumes its own hooks, i x 400 ms
// after the round's first hook appears in its log, as hook-storm's does:
// a payload that lands before a takeover is the victim's; one after it
// is dropped with the disposed hook. Every path (hook, timer, claimed,
// conflict) is a correct end; the ledger check verifies each step's value
// and the steps each path runs. Which path a branch takes emerges from the
// world's answers and the storm's timing only.
func HookClaim() Scenario {
	return Scenario{
		Name: "hook-claim",
		Description: "6x4 branches of every run force-create hooks on tokens shared by the storm's runs (spec 8) and race them " +
			"against a 2.5s watchdog; a taken hook ends on the claimed path, a refused one on the conflict path",
		Program: stormProgram(stormShape{roundHooks: true, race: raceClaimHook,
			hook: func(c *engine.Ctx, r, b int) *engine.Hook { return c.ClaimHook(claimToken(r, b)) }}),
		Steps:        steps("recover", "finalize", "release", "reconcile"),
		Input:        hookClaimInput,
		Reads:        []eventlog.Type{eventlog.HookCreated},
		SharedTokens: true,
		Drive: func(ctx context.Context, h Hooks, runID string, env Env) error {
			return driveClaimHooks(ctx, h, runID, env)
		},
		Check: func(in, out json.RawMessage) error {
			return checkStorm(in, out, stormWant{win: pathHook, won: hookPayload, lost: []string{pathClaimed, pathConflict}})
		},
	}
}

// claimToken is the token branch b of round r uses in every run.
func claimToken(r, b int) string { return fmt.Sprintf("claim-r%d-b%d", r, b) }

// parseClaimToken returns the round and branch of a claim token.
func parseClaimToken(token string) (r, b int, ok bool) {
	rest, found := strings.CutPrefix(token, "claim-")
	if !found {
		return 0, 0, false
	}
	if n, err := fmt.Sscanf(rest, "r%d-b%d", &r, &b); err != nil || n != 2 || claimToken(r, b) != token {
		return 0, 0, false
	}
	return r, b, true
}

// hookClaimInput is the harness's 6 rounds of 4 branches, unless env asks
// for other rounds.
func hookClaimInput(env Env, _ int) any {
	rounds := env.Rounds
	if rounds == 0 {
		rounds = DefaultRounds
	}
	return stormInput{Rounds: rounds, Width: hookClaimWidth, Scale: env.Scale, Seed: env.Seed}
}

// raceClaimHook races the hook's first payload against the watchdog; a
// hook whose token was taken ends on the claimed path, one whose creation
// the world refused on the conflict path.
func raceClaimHook(c *engine.Ctx, in stormInput, br *Branch, h *engine.Hook) error {
	var err error
	br.Path, br.Won, err = raceWatchdog(c, h.Next(), c.Sleep(in.dur(watchdog)), pathHook)
	var claimed *engine.HookForceClaimedError
	switch {
	case errors.As(err, &claimed):
		br.Path, br.Won = pathClaimed, ""
		return nil
	case errors.Is(err, engine.ErrHookConflict):
		br.Path, br.Won = pathConflict, ""
		return nil
	}
	return err
}

// driveClaimHooks watches the run's log for its claim hooks and resumes
// hook b of round r b x 400 ms (time-scaled) after the first hook of round
// r appeared, with the payload hook-storm sends it.
func driveClaimHooks(ctx context.Context, h Hooks, runID string, env Env) error {
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
			for _, e := range log {
				r, b, ok := parseClaimToken(e.Token)
				if e.Type != eventlog.HookCreated || !ok || scheduled[e.Token] {
					continue
				}
				if _, seen := roundStart[r]; !seen {
					roundStart[r] = now
				}
				scheduled[e.Token] = true
				at := roundStart[r].Add(env.Dur(hookStormOffset(r, b)))
				g.Go(func() error { return resumeTokenAt(ctx, h, runID, env, at, claimToken(r, b), hookPayload(r, b)) })
			}
		}
	})
	return g.Wait()
}
