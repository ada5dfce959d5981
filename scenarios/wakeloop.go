package scenarios

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/stormctl/stormctl/internal/engine"
)

// The wake-loop's shape (the harness's defaults).
const (
	wakeLoopWakes     = 12 // fresh wakes before the run returns
	wakeLoopMaxCycles = 80
	// Every continueEvery-th drain reports more work: the loop runs another
	// cycle without racing.
	continueEvery = 5
	heartbeat     = 4 * time.Second
	verifyStep    = 50 * time.Millisecond
	syncStep      = 50 * time.Millisecond
	drainBase     = 600 * time.Millisecond
	drainSpread   = 50 * time.Millisecond // x ((i*7) mod 10): 0 to 450 ms more
	drainBytes    = 8192
	wakeToken     = "wake"
	abortToken    = "abort"
)

// The wake-loop driver's mix (the harness's defaults).
const (
	wakeFreshRatio = 0.5
	wakeBurstRatio = 0.25
	wakeBurstSize  = 4
	wakeIdleRatio  = 0.3
	wakeGapMin     = 200 * time.Millisecond
	wakeGapMax     = 1500 * time.Millisecond
	// An idle lasts about one heartbeat, ±20%, so the next wake lands at
	// the heartbeat's deadline from either side.
	wakeIdle = heartbeat
)

// Causes of a wake-loop cycle.
const (
	causeStart     = "start"
	causeContinue  = "continue"
	causeHeartbeat = "heartbeat"
	causeWake      = "wake"
)

// wakeLoopInput is the input of wake-loop runs.
type wakeLoopInput struct {
	Wakes     int     `json:"wakes"`
	MaxCycles int     `json:"maxCycles"`
	Scale     float64 `json:"scale"`
}

// WakePayload is what the wake-loop driver sends: a send counter and
// whether the wake has work behind it.
type WakePayload struct {
	N     int  `json:"n"`
	Fresh bool `json:"fresh"`
}

// WakeCycle is one cycle's ledger entry: its cause and what its steps
// returned (the drain's ~8 KB result as a digest).
type WakeCycle struct {
	I      int    `json:"i"`
	Cause  string `json:"cause"`
	Before string `json:"before"`
	Drain  string `json:"drain"`
	After  string `json:"after"`
	Sync   string `json:"sync"`
}

// WakeRace is one race of the pending wake read against the heartbeat: the
// verify step that armed a new heartbeat for it (none when the heartbeat was
// carried over), the winner, and a winning wake's payload.
type WakeRace struct {
	Arm    string `json:"arm,omitempty"`
	Winner string `json:"winner"`
	N      int    `json:"n,omitempty"`
	Fresh  bool   `json:"fresh,omitempty"`
}

// WakeLoopOutput is the output of wake-loop runs.
type WakeLoopOutput struct {
	Cycles     []WakeCycle `json:"cycles"`
	Races      []WakeRace  `json:"races"`
	Fresh      int         `json:"fresh"`
	Stale      int         `json:"stale"`
	Heartbeats int         `json:"heartbeats"`
}

// WakeLoop is the harness's sequential shape: one loop racing a reusable
// hook read against a heartbeat sleep, its concurrency supplied by the
// driver's resumes. A fresh wake or a heartbeat win runs a four-step cycle,
// a stale wake none, so which of a hook_received and a wait_completed a
// replay sees first decides how many steps it calls.
func WakeLoop() Scenario {
	s := steps("verify", "sync")
	s["drain"] = drainStepFunc
	return Scenario{
		Name: "wake-loop",
		Description: "one loop races a reused hook read against a 4s heartbeat; fresh wakes and heartbeats run verify/drain(0.6-1.05s, 8KB)/verify/sync, " +
			"stale wakes nothing, every 5th drain one more cycle; until 12 fresh wakes or 80 cycles; wakes sent singly or in bursts of 4, 0.2-1.5s apart or after ~4s idles",
		Program: wakeLoopProgram,
		Steps:   s,
		Input: func(env Env, _ int) any {
			return wakeLoopInput{Wakes: wakeLoopWakes, MaxCycles: wakeLoopMaxCycles, Scale: env.Scale}
		},
		Drive: driveWakeLoop,
		Check: checkWakeLoop,
	}
}

// drainDelay is cycle i's drain duration at time scale 1.
func drainDelay(i int) time.Duration { return drainBase + time.Duration((i*7)%10)*drainSpread }

// drainResult is the one correct result of cycle i's drain: its name, a
// ":more" mark on every continueEvery-th cycle, padded to drainBytes.
func drainResult(i int) string {
	head := expect("drain", stepArgs{R: i})
	if i%continueEvery == continueEvery-1 {
		head += ":more"
	}
	return head + strings.Repeat("x", max(drainBytes-len(head), 0))
}

// drainMore reports whether a drain result asks for another cycle.
func drainMore(res string) bool { return strings.HasSuffix(strings.TrimRight(res, "x"), ":more") }

// drainDigest stands for a drain result in the ledger: its head, length and
// a hash of the whole.
func drainDigest(res string) string {
	sum := sha256.Sum256([]byte(res))
	return fmt.Sprintf("%s/%d/%x", strings.TrimRight(res, "x"), len(res), sum[:6])
}

// drainStepFunc is the drain step: a pure function of its arguments whose
// result is ~8 KB, so replays pay real hydration.
func drainStepFunc(raw json.RawMessage) (engine.StepOutcome, error) {
	var a stepArgs
	if err := json.Unmarshal(raw, &a); err != nil {
		return engine.StepOutcome{}, fmt.Errorf("drain: bad args: %w", err)
	}
	return engine.StepOutcome{Result: drainResult(a.R), Took: time.Duration(a.Ms) * time.Millisecond}, nil
}

func wakeLoopProgram(c *engine.Ctx) (any, error) {
	var in wakeLoopInput
	if err := c.Decode(&in); err != nil {
		return nil, err
	}
	dur := func(d time.Duration) int64 { return ms(time.Duration(float64(d) * in.Scale)) }
	abort := c.Hook(abortToken) // never read
	wake := c.Hook(wakeToken)
	var out WakeLoopOutput
	verify := func(i int, phase string) (string, error) {
		return await[string](c, c.Step("verify", stepArgs{R: i, Path: phase, Ms: dur(verifyStep)}))
	}
	cycle := func(cause string) (bool, error) {
		cy := WakeCycle{I: len(out.Cycles), Cause: cause}
		var err error
		if cy.Before, err = verify(cy.I, "before"); err != nil {
			return false, err
		}
		drained, err := await[string](c, c.Step("drain", stepArgs{R: cy.I, Ms: dur(drainDelay(cy.I))}))
		if err != nil {
			return false, err
		}
		cy.Drain = drainDigest(drained)
		if cy.After, err = verify(cy.I, "after"); err != nil {
			return false, err
		}
		if cy.Sync, err = await[string](c, c.Step("sync", stepArgs{R: cy.I, Ms: dur(syncStep)})); err != nil {
			return false, err
		}
		out.Cycles = append(out.Cycles, cy)
		return drainMore(drained), nil
	}

	pending := wake.Next() // carried across heartbeat wins
	var beat *engine.Future
	more, err := cycle(causeStart)
	for err == nil && out.Fresh < in.Wakes && len(out.Cycles) < in.MaxCycles {
		for err == nil && more && len(out.Cycles) < in.MaxCycles {
			more, err = cycle(causeContinue)
		}
		if err != nil || len(out.Cycles) >= in.MaxCycles {
			break
		}
		var race WakeRace
		if beat == nil {
			if race.Arm, err = verify(len(out.Cycles), "heartbeat"); err != nil {
				break
			}
			beat = c.Sleep(time.Duration(dur(heartbeat)) * time.Millisecond)
		}
		rf := c.Race(pending, beat)
		val, aerr := c.Await(rf)
		if aerr != nil {
			err = aerr
			break
		}
		if rf.Winner() == 1 {
			race.Winner = causeHeartbeat
			out.Races = append(out.Races, race)
			beat = nil
			out.Heartbeats++
			more, err = cycle(causeHeartbeat)
			continue
		}
		var p WakePayload
		if err = json.Unmarshal(val, &p); err != nil {
			break
		}
		pending = wake.Next() // consumed: the next race reads the next payload
		race.Winner, race.N, race.Fresh = causeWake, p.N, p.Fresh
		out.Races = append(out.Races, race)
		if p.Fresh {
			out.Fresh++
			more, err = cycle(causeWake)
		} else {
			out.Stale++
			more = false
		}
	}
	if err != nil {
		return nil, err
	}
	wake.Dispose()
	abort.Dispose()
	return out, nil
}

// wakeLoopLedger is the one correct ledger of a wake-loop run whose races
// went as races say (the only choices the log makes): the cycles, heartbeat
// arms and counts the program records. It fails when the races do not fit
// the loop: more of them than the loop runs before its stop rule, too few
// to reach it, or a winner the loop does not know.
func wakeLoopLedger(in wakeLoopInput, races []WakeRace) (WakeLoopOutput, error) {
	var out WakeLoopOutput
	cycle := func(cause string) bool {
		i := len(out.Cycles)
		out.Cycles = append(out.Cycles, WakeCycle{I: i, Cause: cause,
			Before: expect("verify", stepArgs{R: i, Path: "before"}),
			Drain:  drainDigest(drainResult(i)),
			After:  expect("verify", stepArgs{R: i, Path: "after"}),
			Sync:   expect("sync", stepArgs{R: i})})
		return drainMore(drainResult(i))
	}
	armed := false
	more := cycle(causeStart)
	for out.Fresh < in.Wakes && len(out.Cycles) < in.MaxCycles {
		for more && len(out.Cycles) < in.MaxCycles {
			more = cycle(causeContinue)
		}
		if len(out.Cycles) >= in.MaxCycles {
			break
		}
		k := len(out.Races)
		if k == len(races) {
			return out, fmt.Errorf("the ledger ends after %d races, before the stop rule (%d of %d fresh wakes, %d of %d cycles)",
				k, out.Fresh, in.Wakes, len(out.Cycles), in.MaxCycles)
		}
		race := WakeRace{Winner: races[k].Winner}
		if !armed {
			race.Arm = expect("verify", stepArgs{R: len(out.Cycles), Path: "heartbeat"})
			armed = true
		}
		switch race.Winner {
		case causeHeartbeat:
			out.Races = append(out.Races, race)
			armed = false
			out.Heartbeats++
			more = cycle(causeHeartbeat)
		case causeWake:
			race.N, race.Fresh = races[k].N, races[k].Fresh
			out.Races = append(out.Races, race)
			if race.Fresh {
				out.Fresh++
				more = cycle(causeWake)
			} else {
				out.Stale++
				more = false
			}
		default:
			return out, fmt.Errorf("race %d: unknown winner %q", k, race.Winner)
		}
	}
	if len(races) > len(out.Races) {
		return out, fmt.Errorf("%d races after the stop rule (%d of %d fresh wakes, %d of %d cycles)",
			len(races)-len(out.Races), out.Fresh, in.Wakes, len(out.Cycles), in.MaxCycles)
	}
	return out, nil
}

// checkWakeLoop verifies a wake-loop ledger: rebuilt from its own races, it
// must match in every step result, cause, arm and count, and the wakes it
// consumed must carry strictly increasing send numbers (a hook delivers its
// payloads in order).
func checkWakeLoop(rawIn, rawOut json.RawMessage) error {
	var in wakeLoopInput
	var out WakeLoopOutput
	if err := json.Unmarshal(rawIn, &in); err != nil {
		return fmt.Errorf("input: %w", err)
	}
	if err := json.Unmarshal(rawOut, &out); err != nil {
		return fmt.Errorf("output: %w", err)
	}
	last := 0
	for k, r := range out.Races {
		if r.Winner != causeWake {
			continue
		}
		if r.N <= last {
			return fmt.Errorf("race %d: wake %d delivered after wake %d", k, r.N, last)
		}
		last = r.N
	}
	want, err := wakeLoopLedger(in, out.Races)
	if err != nil {
		return err
	}
	for k, r := range out.Races {
		if r != want.Races[k] {
			return fmt.Errorf("race %d: ledger says %+v, want %+v", k, r, want.Races[k])
		}
	}
	if len(out.Cycles) != len(want.Cycles) {
		return fmt.Errorf("%d cycles, want %d for these races", len(out.Cycles), len(want.Cycles))
	}
	for i, cy := range out.Cycles {
		if cy != want.Cycles[i] {
			return fmt.Errorf("cycle %d: ledger says %+v, want %+v", i, cy, want.Cycles[i])
		}
	}
	if out.Fresh != want.Fresh || out.Stale != want.Stale || out.Heartbeats != want.Heartbeats {
		return fmt.Errorf("counted %d fresh, %d stale, %d heartbeats; the races say %d, %d, %d",
			out.Fresh, out.Stale, out.Heartbeats, want.Fresh, want.Stale, want.Heartbeats)
	}
	return nil
}

// wakeSend is one move of the wake-loop driver: send len(Fresh) payloads
// back to back (a burst when more than one), then wait Gap (at time scale
// 1), an Idle of about one heartbeat or a short gap.
type wakeSend struct {
	Fresh []bool
	Idle  bool
	Gap   time.Duration
}

// wakePlan draws the wake-loop driver's moves from its own PRNG, seeded by
// the storm seed and the run id: the same run of the same storm gets the
// same moves whatever the timing.
type wakePlan struct{ rng *rand.Rand }

func newWakePlan(seed uint64, runID string) *wakePlan {
	return &wakePlan{rng: driverRand(seed, runID, "wake-loop")}
}

func (p *wakePlan) next() wakeSend {
	n := 1
	if p.rng.Float64() < wakeBurstRatio {
		n = wakeBurstSize
	}
	s := wakeSend{Fresh: make([]bool, n)}
	for i := range s.Fresh {
		s.Fresh[i] = p.rng.Float64() < wakeFreshRatio
	}
	if p.rng.Float64() < wakeIdleRatio {
		spread := wakeIdle / 5
		s.Idle, s.Gap = true, wakeIdle-spread+time.Duration(p.rng.Int64N(int64(2*spread)))
	} else {
		s.Gap = wakeGapMin + time.Duration(p.rng.Int64N(int64(wakeGapMax-wakeGapMin)))
	}
	return s
}

// driveWakeLoop sends wakes by its plan until the hook is disposed (the
// run ended) or ctx ends. A burst's payloads are sent one after another, so
// the hook delivers them in send order.
func driveWakeLoop(ctx context.Context, h Hooks, runID string, env Env) error {
	plan := newWakePlan(env.Seed, runID)
	n := 0
	for {
		s := plan.next()
		for _, fresh := range s.Fresh {
			n++
			if done, err := sendWake(ctx, h, runID, env, WakePayload{N: n, Fresh: fresh}); done || err != nil {
				return err
			}
		}
		if env.sleep(ctx, env.Dur(s.Gap)) != nil {
			return nil
		}
	}
}

// sendWake delivers one wake, waiting for the hook to appear; done means
// the driver is finished (the hook is disposed or ctx ended).
func sendWake(ctx context.Context, h Hooks, runID string, env Env, p WakePayload) (done bool, err error) {
	for {
		err := h.ResumeHook(ctx, runID, wakeToken, p, fmt.Sprintf("wake-%d", p.N))
		switch {
		case err == nil:
			return false, nil
		case errors.Is(err, engine.ErrHookDisposed), ctx.Err() != nil:
			return true, nil
		case !errors.Is(err, engine.ErrHookNotFound):
			return true, fmt.Errorf("wake %d: %w", p.N, err)
		}
		if env.sleep(ctx, env.Dur(250*time.Millisecond)) != nil {
			return true, nil
		}
	}
}
