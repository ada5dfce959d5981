package scenarios

import (
	"context"
	"encoding/json"
)

// FanOut is step-storm without its side hook: the same rounds x width
// branches racing the settle step against the watchdog, the same tail and
// reconciles, and no hook at all, so nothing is sent to the run from
// outside. It is the clean fan-out @workflow/core 5.0 folds into one
// events.createBatch per suspension (its suspension handler batches the
// step_created and wait_created writes of a suspension that carries no
// hook and no attribute, on a slot-identity run of a World with
// createBatch): the scenario through which a storm records batch creates
// at all, every other scenario holding a hook for its whole run.
func FanOut() Scenario {
	return Scenario{
		Name: "fan-out",
		Description: "step-storm without its hook: 6x8 branches race a settle step (1.7-2.7s in 5 buckets) against a 2.5s watchdog; " +
			"recover/finalize/release behind the race, 2+stragglers reconciles; nothing sent from outside (5.0 cores batch its suspensions' creates)",
		Program: stormProgram(stormShape{race: raceSettle}),
		Steps:   settleSteps(),
		Input:   stormInputFor,
		Drive:   driveNothing,
		Check: func(in, out json.RawMessage) error {
			return checkStorm(in, out, stormWant{win: pathStep, won: settleWon})
		},
	}
}

// driveNothing sends the run nothing: it returns at once.
func driveNothing(context.Context, Hooks, string, Env) error { return nil }
