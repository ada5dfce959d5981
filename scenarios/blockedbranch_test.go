package scenarios

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/stormctl/stormctl/internal/eventlog"
)

var blockedWant = stormWant{win: pathHook, won: hookPayload, launch: true}

func TestBlockedBranchCheck(t *testing.T) {
	runStormCheckCases(t, BlockedBranch(), blockedWant, pathStep,
		stormCheckCase{name: "a launch result for a hook", mutate: func(o *StormOutput) {
			o.Rounds[1].Branches[1].Won = settleWon(1, 1)
		}},
		stormCheckCase{name: "a hook payload for a launch", mutate: func(o *StormOutput) {
			o.Rounds[1].Branches[1].Launch = hookPayload(1, 1)
		}},
	)
}

func TestLaunchDelay(t *testing.T) {
	for b, want := range []time.Duration{2200, 2500, 2800, 3100, 3400, 3700, 4000, 4300} {
		if got := launchDelay(b); got != want*time.Millisecond {
			t.Errorf("launchDelay(%d) = %s, want %dms", b, got, want)
		}
	}
}

func TestBlockedBurstOffset(t *testing.T) {
	seen := map[time.Duration]bool{}
	for seed := range uint64(4) {
		for i := range 10 {
			run := fmt.Sprintf("wrun_%02d", i)
			for r := range 6 {
				d := blockedBurstOffset(seed, run, r)
				if d < 4000*time.Millisecond || d > 5200*time.Millisecond {
					t.Fatalf("blockedBurstOffset(%d, %s, %d) = %s, want 4s to 5.2s", seed, run, r, d)
				}
				if again := blockedBurstOffset(seed, run, r); again != d {
					t.Fatalf("blockedBurstOffset(%d, %s, %d) = %s, then %s", seed, run, r, d, again)
				}
				seen[d] = true
			}
		}
	}
	if len(seen) < 150 {
		t.Errorf("only %d distinct offsets over 240 rounds: runs and rounds do not sweep the window", len(seen))
	}
}

// TestBlockedBranchShape runs blocked-branch through a clean engine in
// virtual time with the driver's burst: every branch launches first (its
// attribute set from inside the step), then its hook wins against the 8 s
// watchdog; the round hooks sit as in hook-storm.
func TestBlockedBranchShape(t *testing.T) {
	env := Env{Scale: 1, Seed: 5}
	sc := BlockedBranch()
	s := newSim(t, sc, env)
	s.onHook = func(s *simRun, token string) {
		var r, b int
		if _, err := fmt.Sscanf(token, "r%d-b%d", &r, &b); err == nil {
			s.resume(blockedBurstOffset(env.Seed, s.runID, r), token, hookPayload(r, b), token)
		}
	}
	in := sc.Input(env, 0)
	out := s.run(in)
	if err := sc.Check(mustMarshal(in), out); err != nil {
		t.Fatalf("Check rejected the simulated run: %v", err)
	}
	t.Logf("blocked-branch: %s at time scale 1, %d events, %d replays", s.elapsed(), len(s.log), s.replays)
	hist := s.history(eventlog.HookReceived, eventlog.AttrSet)
	checkRoundHooks(t, hist, 6, 8)
	var o StormOutput
	if err := json.Unmarshal(out, &o); err != nil {
		t.Fatal(err)
	}
	for _, round := range o.Rounds {
		for _, br := range round.Branches {
			if br.Path != pathHook {
				t.Errorf("branch r%d.b%d took the %s path; the burst lands before the 8s watchdog", br.R, br.B, br.Path)
			}
		}
	}
	// A branch's race starts only after its launch completed: the round's
	// first watchdog comes after its first launch completion.
	names := s.entity()
	attrs, firstLaunch, firstWatchdog := 0, -1, -1
	for i, e := range s.log {
		switch {
		case e.Type == eventlog.AttrSet:
			attrs++
		case e.Type == eventlog.StepCompleted && names[e.CorrelationID] == "settle(r=0,b=0)" && firstLaunch < 0:
			firstLaunch = i
		case e.Type == eventlog.WaitCreated && names[e.CorrelationID] == "sleep(8000ms)" && firstWatchdog < 0:
			firstWatchdog = i
		}
	}
	if firstLaunch < 0 || firstWatchdog < firstLaunch {
		t.Errorf("the first watchdog (event %d) does not follow the first launch completion (event %d)", firstWatchdog, firstLaunch)
	}
	if attrs != 48 {
		t.Errorf("%d attr_set events, want one per launch, 48", attrs)
	}
}
