package scenarios

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/stormctl/stormctl/internal/engine"
)

// stormInput is the input of step-storm, hook-storm and blocked-branch runs.
type stormInput struct {
	Rounds int     `json:"rounds"`
	Width  int     `json:"width"`
	Scale  float64 `json:"scale"`
	Seed   uint64  `json:"seed"`
}

func (in stormInput) dur(d time.Duration) time.Duration {
	return time.Duration(float64(d) * in.Scale)
}

// stormInputFor is the harness's shape, 6 rounds of 8 branches, unless env
// asks for other rounds.
func stormInputFor(env Env, _ int) any {
	rounds := env.Rounds
	if rounds == 0 {
		rounds = DefaultRounds
	}
	return stormInput{Rounds: rounds, Width: 8, Scale: env.Scale, Seed: env.Seed}
}

// Branch is one branch's ledger entry: which way its race went and what each
// of its steps returned.
type Branch struct {
	R    int    `json:"r"`
	B    int    `json:"b"`
	Path string `json:"path"`
	// Launch is what the step a branch runs before its race returned
	// (blocked-branch only).
	Launch   string `json:"launch,omitempty"`
	Won      string `json:"won,omitempty"`
	Recover  string `json:"recover,omitempty"`
	Finalize string `json:"finalize"`
	Release  string `json:"release"`
}

// Round is one round's ledger: its branches and reconciles.
type Round struct {
	Branches   []Branch `json:"branches"`
	Reconciles []string `json:"reconciles"`
}

// StormOutput is the output of step-storm, hook-storm and blocked-branch
// runs.
type StormOutput struct {
	Rounds []Round `json:"rounds"`
}

// Paths a branch's race can take.
const (
	pathTimer = "timer"
	pathStep  = "step"
	pathHook  = "hook"
)

const (
	watchdog   = 2500 * time.Millisecond
	shortStep  = 100 * time.Millisecond
	roundPause = time.Second
)

// stormShape is what tells the storms built on stormProgram apart.
type stormShape struct {
	// poke: a side hook is created before the rounds, never read, and
	// disposed at the end of the workflow (step-storm).
	poke bool
	// roundHooks: each round creates its width hooks (tokens r<r>-b<b>) in
	// the main branch before the fan-out and disposes of all of them after
	// the round's reconciles (hook-storm, blocked-branch).
	roundHooks bool
	// hook creates a round hook (nil: engine.Ctx.Hook on hookToken).
	hook func(c *engine.Ctx, r, b int) *engine.Hook
	// race runs branch br's race and fills its Path, Won and Launch; h is
	// the branch's round hook (nil without roundHooks).
	race func(c *engine.Ctx, in stormInput, br *Branch, h *engine.Hook) error
}

// pokeToken is the token of step-storm's side hook.
const pokeToken = "poke"

// stormProgram runs rounds x width branches: each races (shape.race), then
// the recover/finalize/release tail behind the race; then 2 + stragglers
// reconciles in parallel, then a pause.
func stormProgram(shape stormShape) engine.Program {
	return func(c *engine.Ctx) (any, error) {
		var in stormInput
		if err := c.Decode(&in); err != nil {
			return nil, err
		}
		var poke *engine.Hook
		if shape.poke {
			poke = c.Hook(pokeToken) // resumed by the driver, never read
		}
		var out StormOutput
		for r := range in.Rounds {
			round, err := stormRound(c, in, shape, r)
			if err != nil {
				return nil, err
			}
			out.Rounds = append(out.Rounds, round)
			if _, err := c.Await(c.Sleep(in.dur(roundPause))); err != nil {
				return nil, err
			}
		}
		if poke != nil {
			poke.Dispose()
		}
		return out, nil
	}
}

// stormRound is round r: the round's hooks, the fan-out, the reconciles,
// then the hooks' disposal.
func stormRound(c *engine.Ctx, in stormInput, shape stormShape, r int) (Round, error) {
	hooks := make([]*engine.Hook, in.Width)
	if shape.roundHooks {
		for b := range in.Width {
			if shape.hook != nil {
				hooks[b] = shape.hook(c, r, b)
				continue
			}
			hooks[b] = c.Hook(hookToken(r, b))
		}
	}
	fs := make([]*engine.Future, in.Width)
	for b := range in.Width {
		fs[b] = c.Go(func(c *engine.Ctx) (any, error) { return branchTail(c, in, r, b, hooks[b], shape.race) })
	}
	var round Round
	if _, err := c.Await(c.All(fs...)); err != nil {
		return round, err
	}
	stragglers := 0
	for _, f := range fs {
		br, err := await[Branch](c, f)
		if err != nil {
			return round, err
		}
		if br.Path == pathTimer {
			stragglers++
		}
		round.Branches = append(round.Branches, br)
	}
	recs := make([]*engine.Future, 2+stragglers)
	for i := range recs {
		recs[i] = c.Step("reconcile", stepArgs{R: r, B: i, Ms: ms(in.dur(shortStep))})
	}
	for _, f := range recs {
		s, err := await[string](c, f)
		if err != nil {
			return round, err
		}
		round.Reconciles = append(round.Reconciles, s)
	}
	for _, h := range hooks {
		if h != nil {
			h.Dispose()
		}
	}
	return round, nil
}

// branchTail is one branch: the race, then recover (timer path only),
// finalize and release.
func branchTail(c *engine.Ctx, in stormInput, r, b int, h *engine.Hook, race func(*engine.Ctx, stormInput, *Branch, *engine.Hook) error) (Branch, error) {
	br := Branch{R: r, B: b}
	if err := race(c, in, &br, h); err != nil {
		return br, err
	}
	short := ms(in.dur(shortStep))
	var err error
	if br.Path == pathTimer {
		if br.Recover, err = await[string](c, c.Step("recover", stepArgs{R: r, B: b, Ms: short})); err != nil {
			return br, err
		}
	}
	if br.Finalize, err = await[string](c, c.Step("finalize", stepArgs{R: r, B: b, Path: br.Path, Ms: short})); err != nil {
		return br, err
	}
	if br.Release, err = await[string](c, c.Step("release", stepArgs{R: r, B: b, Ms: short})); err != nil {
		return br, err
	}
	return br, nil
}

// stormWant is what a storm's check expects of each branch beyond the
// shared tail.
type stormWant struct {
	// win is the path of a race the timer did not win.
	win string
	// won is what that winner returned.
	won func(r, b int) string
	// launch: every branch ran settle before its race (blocked-branch).
	launch bool
	// lost are the other paths a branch may take, each a race that ended
	// without a value (hook-claim's claimed and conflict).
	lost []string
}

// checkStorm verifies a storm run's output against its ledger.
func checkStorm(rawIn, rawOut json.RawMessage, want stormWant) error {
	var in stormInput
	var out StormOutput
	if err := json.Unmarshal(rawIn, &in); err != nil {
		return fmt.Errorf("input: %w", err)
	}
	if err := json.Unmarshal(rawOut, &out); err != nil {
		return fmt.Errorf("output: %w", err)
	}
	if len(out.Rounds) != in.Rounds {
		return fmt.Errorf("%d rounds, want %d", len(out.Rounds), in.Rounds)
	}
	for r, round := range out.Rounds {
		if len(round.Branches) != in.Width {
			return fmt.Errorf("round %d: %d branches, want %d", r, len(round.Branches), in.Width)
		}
		stragglers := 0
		for b, br := range round.Branches {
			if br.R != r || br.B != b {
				return fmt.Errorf("round %d branch %d: ledger names r=%d b=%d", r, b, br.R, br.B)
			}
			if err := checkBranch(br, want); err != nil {
				return fmt.Errorf("round %d branch %d: %w", r, b, err)
			}
			if br.Path == pathTimer {
				stragglers++
			}
		}
		if len(round.Reconciles) != 2+stragglers {
			return fmt.Errorf("round %d: %d reconciles, want %d", r, len(round.Reconciles), 2+stragglers)
		}
		for i, s := range round.Reconciles {
			if want := expect("reconcile", stepArgs{R: r, B: i}); s != want {
				return fmt.Errorf("round %d: reconcile %d returned %q, want %q", r, i, s, want)
			}
		}
	}
	return nil
}

// checkBranch verifies one branch's ledger entry: every step it ran
// returned its one correct value, and it ran the steps of its path only.
func checkBranch(br Branch, want stormWant) error {
	r, b := br.R, br.B
	a := stepArgs{R: r, B: b}
	type got struct{ name, got, want string }
	checks := []got{
		{"finalize", br.Finalize, expect("finalize", stepArgs{R: r, B: b, Path: br.Path})},
		{"release", br.Release, expect("release", a)},
	}
	if want.launch {
		checks = append(checks, got{"settle (launch)", br.Launch, expect("settle", a)})
	} else if br.Launch != "" {
		return fmt.Errorf("a launch %q in a scenario without one", br.Launch)
	}
	switch br.Path {
	case pathTimer:
		checks = append(checks, got{"recover", br.Recover, expect("recover", a)})
		if br.Won != "" {
			return fmt.Errorf("the timer path records a race winner's value %q", br.Won)
		}
	case want.win:
		checks = append(checks, got{br.Path, br.Won, want.won(r, b)})
		if br.Recover != "" {
			return fmt.Errorf("recover ran on the %s path", br.Path)
		}
	default:
		if slices.Contains(want.lost, br.Path) {
			if br.Won != "" || br.Recover != "" {
				return fmt.Errorf("the %s path records a winner's value %q or a recover %q", br.Path, br.Won, br.Recover)
			}
			break
		}
		return fmt.Errorf("unknown path %q (want %s or %s)", br.Path, pathTimer, strings.Join(append([]string{want.win}, want.lost...), " or "))
	}
	for _, c := range checks {
		if c.got != c.want {
			return fmt.Errorf("%s returned %q, want %q", c.name, c.got, c.want)
		}
	}
	return nil
}

// raceWatchdog races first against the watchdog sleep: the timer path if
// the watchdog's completion comes first in the log, else path with the
// value first returned.
func raceWatchdog(c *engine.Ctx, first, watchdog *engine.Future, path string) (string, string, error) {
	race := c.Race(first, watchdog)
	val, err := c.Await(race)
	if err != nil {
		return "", "", err
	}
	if race.Winner() == 1 {
		return pathTimer, "", nil
	}
	var won string
	if err := json.Unmarshal(val, &won); err != nil {
		return "", "", err
	}
	return path, won, nil
}
