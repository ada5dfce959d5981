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

// The settle step's duration: the harness's jitter, 5 fixed buckets 250 ms
// apart around 2.2 s (1.7 s to 2.7 s), straddling the 2.5 s watchdog.
const (
	settleBase    = 2200 * time.Millisecond
	settleBucket  = 250 * time.Millisecond
	settleBuckets = 5
)

// The poke cadence: 750 ms plus up to 250 ms of jitter, 8 times slower once
// 64 pokes were delivered (the harness's decay, which keeps a slow run from
// burying itself in hook_received events).
const (
	pokeInterval = 750 * time.Millisecond
	pokeJitter   = 250 * time.Millisecond
	pokeMax      = 64
	pokeDecay    = 8
)

// StepStorm is rounds x width branches, each racing a slow step (settle,
// 1.7-2.7 s by the harness's jitter buckets) against a 2.5 s watchdog; the
// settle step sets a run attribute from inside (out of band). A side hook
// the workflow never reads is poked every 0.75-1 s, then every 6-6.25 s
// after 64 pokes.
func StepStorm() Scenario {
	return Scenario{
		Name: "step-storm",
		Description: "6x8 branches race a settle step (1.7-2.7s in 5 buckets; it sets an attribute inside) against a 2.5s watchdog; " +
			"recover/finalize/release behind the race, 2+stragglers reconciles; a never-read hook poked every 0.75-1s, 8x slower after 64 pokes",
		Program: stormProgram(stormShape{poke: true, race: raceSettle}),
		Steps:   settleSteps(),
		Input:   stormInputFor,
		Drive:   drivePoke,
		Check: func(in, out json.RawMessage) error {
			return checkStorm(in, out, stormWant{win: pathStep, won: settleWon})
		},
	}
}

// settleDelay is branch (r, b)'s settle duration at time scale 1, the
// harness's formula base + ((r*3 + b*5) mod 5 - 2) x 250 ms. As in the
// harness, b*5 is 0 mod 5, so every branch of a round falls in one bucket:
// the rounds take turns at 1.7, 2.45, 1.95, 2.7 and 2.2 s.
func settleDelay(r, b int) time.Duration {
	bucket := (r*3 + b*5) % settleBuckets
	return settleBase + time.Duration(bucket-settleBuckets/2)*settleBucket
}

// settleAttr is the attribute value the settle step of branch (r, b) sets.
func settleAttr(r, b int) string { return fmt.Sprintf("r%d.b%d", r, b) }

func settleWon(r, b int) string { return expect("settle", stepArgs{R: r, B: b}) }

// settleStep is a pure step like the others that, before its work, sets the
// run attribute settle=r<r>.b<b> out of band, as the harness's settle step
// calls setAttributes: the step worker writes the attr_set, and no
// correlation id is drawn for it.
var settleStep = pureStepWith("settle", func(a stepArgs) map[string]string {
	return map[string]string{"settle": settleAttr(a.R, a.B)}
})

func raceSettle(c *engine.Ctx, in stormInput, br *Branch, _ *engine.Hook) error {
	step := c.Step("settle", stepArgs{R: br.R, B: br.B, Ms: ms(in.dur(settleDelay(br.R, br.B)))})
	var err error
	br.Path, br.Won, err = raceWatchdog(c, step, c.Sleep(in.dur(watchdog)), pathStep)
	return err
}

// pokeGap is the wait before poke k at time scale 1, when sent pokes were
// delivered so far.
func pokeGap(seed uint64, k, sent int) time.Duration {
	interval := pokeInterval
	if sent >= pokeMax {
		interval *= pokeDecay
	}
	return interval + pokeJitter/2 + jitter(pokeJitter/2, seed, k)
}

// drivePoke resumes the side hook on the poke cadence until the hook is
// disposed or ctx ends. A poke the store was unavailable for is sent again
// (the same poke, after a short pause), as a sender retries a 503.
func drivePoke(ctx context.Context, h Hooks, runID string, env Env) error {
	sent := 0
	for k := 0; ; k++ {
		if env.sleep(ctx, env.Dur(pokeGap(env.Seed, k, sent))) != nil {
			return nil
		}
		for {
			err := h.ResumeHook(ctx, runID, pokeToken, map[string]int{"k": k}, fmt.Sprintf("poke-%d", k))
			switch {
			case errors.Is(err, eventlog.ErrUnavailable) && ctx.Err() == nil:
				if env.sleep(ctx, env.Dur(50*time.Millisecond)) != nil {
					return nil
				}
				continue
			case err == nil:
				sent++
			case errors.Is(err, engine.ErrHookNotFound):
			case errors.Is(err, engine.ErrHookDisposed), ctx.Err() != nil:
				return nil
			default:
				return fmt.Errorf("poke %d: %w", k, err)
			}
			break
		}
	}
}
