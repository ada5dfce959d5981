package scenarios

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/stormctl/stormctl/engine"
)

// stormInput is the input of step-storm and hook-storm runs.
type stormInput struct {
	Rounds int     `json:"rounds"`
	Width  int     `json:"width"`
	Scale  float64 `json:"scale"`
	Seed   uint64  `json:"seed"`
}

func (in stormInput) dur(d time.Duration) time.Duration {
	return time.Duration(float64(d) * in.Scale)
}

// Branch is one branch's ledger entry: which way its race went and what each
// of its steps returned.
type Branch struct {
	R        int    `json:"r"`
	B        int    `json:"b"`
	Path     string `json:"path"`
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

// StormOutput is the output of step-storm and hook-storm runs.
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

// raceFunc runs a branch's race and returns its path and the winner's value.
type raceFunc func(c *engine.Ctx, in stormInput, r, b int) (path, won string, err error)

// stormProgram runs rounds x width branches: each races (raceFunc), then the
// recover/finalize/release tail behind the race; then 2 + stragglers
// reconciles in parallel, then a pause.
func stormProgram(race raceFunc, poke bool) engine.Program {
	return func(c *engine.Ctx) (any, error) {
		var in stormInput
		if err := c.Decode(&in); err != nil {
			return nil, err
		}
		if poke {
			c.Hook("poke") // resumed by the driver, never read
		}
		var out StormOutput
		for r := range in.Rounds {
			fs := make([]*engine.Future, in.Width)
			for b := range in.Width {
				fs[b] = c.Go(func(c *engine.Ctx) (any, error) { return branchTail(c, in, r, b, race) })
			}
			if _, err := c.Await(c.All(fs...)); err != nil {
				return nil, err
			}
			round := Round{}
			stragglers := 0
			for _, f := range fs {
				br, err := await[Branch](c, f)
				if err != nil {
					return nil, err
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
					return nil, err
				}
				round.Reconciles = append(round.Reconciles, s)
			}
			if _, err := c.Await(c.Sleep(in.dur(roundPause))); err != nil {
				return nil, err
			}
			out.Rounds = append(out.Rounds, round)
		}
		return out, nil
	}
}

// branchTail is one branch: the race, then recover (timer path only),
// finalize and release.
func branchTail(c *engine.Ctx, in stormInput, r, b int, race raceFunc) (Branch, error) {
	br := Branch{R: r, B: b}
	var err error
	if br.Path, br.Won, err = race(c, in, r, b); err != nil {
		return br, err
	}
	short := ms(in.dur(shortStep))
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

// checkStorm verifies a storm run's output against its ledger; win is the
// path a branch takes when its race is not won by the timer, and won says
// what that winner must have returned.
func checkStorm(rawIn, rawOut json.RawMessage, win string, won func(r, b int) string) error {
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
			a := stepArgs{R: r, B: b}
			checks := map[string][2]string{
				"finalize": {br.Finalize, expect("finalize", stepArgs{R: r, B: b, Path: br.Path})},
				"release":  {br.Release, expect("release", a)},
			}
			switch br.Path {
			case pathTimer:
				stragglers++
				checks["recover"] = [2]string{br.Recover, expect("recover", a)}
			case win:
				checks[br.Path] = [2]string{br.Won, won(r, b)}
				if br.Recover != "" {
					return fmt.Errorf("round %d branch %d: recover ran on the %s path", r, b, br.Path)
				}
			default:
				return fmt.Errorf("round %d branch %d: unknown path %q (want %s or %s)", r, b, br.Path, pathTimer, win)
			}
			for name, got := range checks {
				if got[0] != got[1] {
					return fmt.Errorf("round %d branch %d: %s returned %q, want %q", r, b, name, got[0], got[1])
				}
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
