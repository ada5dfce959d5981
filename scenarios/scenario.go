// Package scenarios holds the storm scenarios: workflow programs in the
// shapes of the engine team's own harness, the drivers that send them
// out-of-band events, and the ledger checks that catch a wrong result.
package scenarios

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/stormctl/stormctl/internal/base/clock"
	"github.com/stormctl/stormctl/internal/engine"
	"github.com/stormctl/stormctl/internal/eventlog"
)

// Env is what a scenario needs to know about the storm it runs in.
type Env struct {
	// Scale multiplies every scenario duration (steps, watchdogs, sleeps,
	// driver delays).
	Scale float64
	// Seed makes per-run jitter reproducible.
	Seed uint64
	// MaxFactDelay is the longest mint-to-commit window of a fact under the
	// storm's latency profile; the control keeps its hook clear of it.
	MaxFactDelay time.Duration
	// Rounds is the number of rounds of the round-based scenarios
	// (step-storm, hook-storm, blocked-branch); 0 is DefaultRounds.
	Rounds int
	// Sleep is how a driver waits d before its next event, returning ctx's
	// error when ctx ends first (nil: clock.Sleep). A test sets it to see
	// the waits a driver asks for, in order with what the driver sends,
	// without spending them.
	Sleep func(ctx context.Context, d time.Duration) error
}

// DefaultRounds is the round-based scenarios' rounds in the engine team's
// harness: 6 rounds of 8 branches.
const DefaultRounds = 6

// Dur scales d by the environment's time scale.
func (e Env) Dur(d time.Duration) time.Duration { return time.Duration(float64(d) * e.Scale) }

// sleep waits d through Sleep, or clock.Sleep when it is nil.
func (e Env) sleep(ctx context.Context, d time.Duration) error {
	if e.Sleep != nil {
		return e.Sleep(ctx, d)
	}
	return clock.Sleep(ctx, d)
}

// Hooks is what a driver may do to a run: read its log and resume hooks.
type Hooks interface {
	ResumeHook(ctx context.Context, runID, token string, payload any, dedup string) error
	Log(ctx context.Context, runID string) ([]eventlog.Event, error)
}

// TypedLogger is implemented by Hooks that can read a run's log of some
// event types only, for less than the whole log costs (the devkit engine:
// its host leaves the others out of its answer).
type TypedLogger interface {
	LogOf(ctx context.Context, runID string, types []eventlog.Type) ([]eventlog.Event, error)
}

// Only returns h with its Log answering the events of types only, in log
// order (through TypedLogger when h has it).
func Only(h Hooks, types []eventlog.Type) Hooks { return onlyHooks{h, types} }

// onlyHooks is Only's Hooks.
type onlyHooks struct {
	Hooks
	types []eventlog.Type
}

// Log reads the run's log and keeps the events of the types.
func (o onlyHooks) Log(ctx context.Context, runID string) ([]eventlog.Event, error) {
	if tl, ok := o.Hooks.(TypedLogger); ok {
		return tl.LogOf(ctx, runID, o.types)
	}
	log, err := o.Hooks.Log(ctx, runID)
	if err != nil {
		return nil, err
	}
	return slices.DeleteFunc(log, func(e eventlog.Event) bool { return !slices.Contains(o.types, e.Type) }), nil
}

// Scenario is one storm shape. Steps are pure functions of their arguments,
// so every run has exactly one correct result, which Check verifies.
type Scenario struct {
	Name        string
	Description string
	Program     engine.Program
	Steps       map[string]engine.StepFunc
	// Input returns the run's input for an environment and run index.
	Input func(env Env, runIndex int) any
	// Drive sends the run its out-of-band events until ctx ends.
	Drive func(ctx context.Context, h Hooks, runID string, env Env) error
	// Reads are the event types Drive reads from the run's log (Hooks.Log),
	// none when it reads none. The runner gives Drive a Hooks whose Log
	// answers those only (Only), on every engine, so a driver that needs
	// more fails on the model as on the real runtime, and an engine whose
	// reads are costly (the devkit engine's host: some drivers poll every
	// 250 ms) reads no more than that.
	Reads []eventlog.Type
	// SharedTokens says the program's hook tokens are shared by the runs
	// of a storm cell: its runs are stamped with the condition's hook-claim
	// mode (engine.Policy.Stamp), so the world indexes their tokens across
	// runs (eventlog.Run.HookClaim).
	SharedTokens bool
	// Check returns an error describing the first way output disagrees with
	// the run's ledger (the silent-corruption check).
	Check func(input, output json.RawMessage) error
}

// Registry returns every scenario, by name.
func Registry() []Scenario {
	return []Scenario{StepStorm(), HookStorm(), BlockedBranch(), WakeLoop(), HookClaim(), Control(), FanOut()}
}

// Lookup returns the named scenario or an error listing the valid names.
func Lookup(name string) (Scenario, error) {
	var names []string
	for _, s := range Registry() {
		if s.Name == name {
			return s, nil
		}
		names = append(names, s.Name)
	}
	return Scenario{}, fmt.Errorf("unknown scenario %q (valid: %s)", name, strings.Join(names, ", "))
}

// stepArgs are the arguments of every scenario step: where it was called
// and how long it runs.
type stepArgs struct {
	R    int    `json:"r"`
	B    int    `json:"b"`
	Path string `json:"path,omitempty"`
	Ms   int64  `json:"ms"`
}

// expect is the one correct result of a step.
func expect(name string, a stepArgs) string {
	if a.Path != "" {
		return fmt.Sprintf("%s(r=%d,b=%d,%s)", name, a.R, a.B, a.Path)
	}
	return fmt.Sprintf("%s(r=%d,b=%d)", name, a.R, a.B)
}

// pureStep is a step whose result names its arguments.
func pureStep(name string) engine.StepFunc { return pureStepWith(name, nil) }

// pureStepWith is pureStep whose step also sets the attributes attrs
// returns for its arguments (nil attrs: none).
func pureStepWith(name string, attrs func(a stepArgs) map[string]string) engine.StepFunc {
	return func(raw json.RawMessage) (engine.StepOutcome, error) {
		var a stepArgs
		if err := json.Unmarshal(raw, &a); err != nil {
			return engine.StepOutcome{}, fmt.Errorf("%s: bad args: %w", name, err)
		}
		out := engine.StepOutcome{Result: expect(name, a), Took: time.Duration(a.Ms) * time.Millisecond}
		if attrs != nil {
			out.Attrs = attrs(a)
		}
		return out, nil
	}
}

// settleSteps are the steps of the storms whose branches run settle.
func settleSteps() map[string]engine.StepFunc {
	s := steps("recover", "finalize", "release", "reconcile")
	s["settle"] = settleStep
	return s
}

func steps(names ...string) map[string]engine.StepFunc {
	m := make(map[string]engine.StepFunc, len(names))
	for _, n := range names {
		m[n] = pureStep(n)
	}
	return m
}

// jitter is a reproducible offset in [-spread, +spread] for (seed, keys).
func jitter(spread time.Duration, seed uint64, keys ...int) time.Duration {
	h := fnv.New64a()
	fmt.Fprint(h, seed)
	for _, k := range keys {
		fmt.Fprint(h, ",", k)
	}
	n := int64(h.Sum64() % uint64(2*spread.Milliseconds()+1))
	return time.Duration(n-spread.Milliseconds()) * time.Millisecond
}

// runKey folds a run id into a jitter key, so runs of one storm draw
// different (and still reproducible) driver timings.
func runKey(runID string) int {
	h := fnv.New32a()
	h.Write([]byte(runID))
	return int(h.Sum32())
}

// driverRand is a driver's own PRNG for a run: its draws are a function of
// the storm seed, the run id and the stream's name only, never of timing.
func driverRand(seed uint64, runID, stream string) *rand.Rand {
	h := fnv.New64a()
	h.Write([]byte(stream + "/" + runID))
	return rand.New(rand.NewPCG(seed, h.Sum64()))
}

func ms(d time.Duration) int64 { return d.Milliseconds() }

// await is Ctx.AwaitInto for results the program cannot go on without.
func await[T any](c *engine.Ctx, f *engine.Future) (T, error) {
	var v T
	err := c.AwaitInto(f, &v)
	return v, err
}
