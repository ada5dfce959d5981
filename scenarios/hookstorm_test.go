package scenarios

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stormctl/stormctl/internal/engine"
	"github.com/stormctl/stormctl/internal/eventlog"
)

var hookStormWant = stormWant{win: pathHook, won: hookPayload}

func TestHookStormCheck(t *testing.T) {
	runStormCheckCases(t, HookStorm(), hookStormWant, pathStep,
		stormCheckCase{name: "payload of another hook", mutate: func(o *StormOutput) {
			o.Rounds[1].Branches[0].Won = hookPayload(0, 0)
		}},
		stormCheckCase{name: "payload of another round", mutate: func(o *StormOutput) {
			o.Rounds[0].Branches[1].Won = hookPayload(1, 1)
		}},
		stormCheckCase{name: "a poke payload", mutate: func(o *StormOutput) {
			o.Rounds[1].Branches[1].Won = `{"k":0}`
		}},
		stormCheckCase{name: "a settle result for a hook", mutate: func(o *StormOutput) {
			o.Rounds[1].Branches[1].Won = settleWon(1, 1)
		}},
	)
}

func hookCreated(token string) eventlog.Event {
	return eventlog.Event{Type: eventlog.HookCreated, CorrelationID: "corr-" + token, Token: token}
}

// resumeTimes records when a fake accepted each resume, by token.
type resumeTimes struct {
	mu sync.Mutex
	at map[string]time.Time
}

func (r *resumeTimes) hook(h *fakeHooks) {
	r.at = map[string]time.Time{}
	h.onResume = func() {
		r.mu.Lock()
		defer r.mu.Unlock()
		r.at[h.resumed[len(h.resumed)-1].token] = time.Now()
	}
}

func TestDriveRoundHooks(t *testing.T) {
	log := []eventlog.Event{
		{Type: eventlog.RunCreated},
		hookCreated("r0-b0"), hookCreated("r0-b1"), hookCreated("r0-b2"),
		hookCreated("poke"), hookCreated("ctl"), hookCreated("r0-b1x"), // not round hooks: never resumed
		{Type: eventlog.WaitCreated, CorrelationID: "w"},
		hookCreated("r1-b0"), hookCreated("r1-b1"),
	}
	all := []string{"r0-b0", "r0-b1", "r0-b2", "r1-b0", "r1-b1"}
	const scale = 0.01
	tests := []struct {
		name      string
		offset    func(r, b int) time.Duration
		resumeErr func(token string, attempt int) error
		want      []string // tokens resumed, once each
		wantErr   bool
	}{
		{name: "hook-storm: every hook once, staggered", offset: hookStormOffset, want: all},
		{name: "blocked-branch: every hook once, in a burst", offset: func(r, _ int) time.Duration { return blockedBurstOffset(1, "run-1", r) }, want: all},
		{name: "retried until found", offset: hookStormOffset, want: all,
			resumeErr: func(token string, n int) error {
				if token == "r0-b1" && n < 3 {
					return fmt.Errorf("resume: %w", engine.ErrHookNotFound)
				}
				return nil
			}},
		{name: "retried while the store is unavailable", offset: hookStormOffset, want: all,
			resumeErr: func(token string, n int) error {
				if token == "r0-b1" && n < 3 {
					return unavailable()
				}
				return nil
			}},
		{name: "given up when never found", offset: hookStormOffset, want: []string{"r0-b0", "r0-b2", "r1-b0", "r1-b1"},
			resumeErr: func(token string, _ int) error {
				if token == "r0-b1" {
					return engine.ErrHookNotFound
				}
				return nil
			}},
		{name: "disposed hooks are left alone", offset: hookStormOffset, want: []string{"r0-b0", "r0-b2", "r1-b0", "r1-b1"},
			resumeErr: func(token string, _ int) error {
				if token == "r0-b1" {
					return engine.ErrHookDisposed
				}
				return nil
			}},
		{name: "another error fails the driver", offset: hookStormOffset, wantErr: true,
			resumeErr: func(token string, _ int) error {
				if token == "r1-b1" {
					return errors.New("boom")
				}
				return nil
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newFakeHooks(log)
			h.resumeErr = tt.resumeErr
			var times resumeTimes
			times.hook(h)
			env := Env{Scale: scale, Seed: 1}
			started := time.Now()
			d := startDriver(t, func(ctx context.Context, h Hooks, runID string, env Env) error {
				return driveRoundHooks(ctx, h, runID, env, tt.offset)
			}, h, env)
			if tt.wantErr {
				if err := d.wait(t); err == nil {
					t.Fatal("the driver ended without the resume error")
				}
				return
			}
			polls := 0
			h.waitFor(t, fmt.Sprintf("resume %v", tt.want), func(f *fakeHooks) bool {
				polls = f.logCalls
				return len(f.resumed) >= len(tt.want)
			})
			// A few more polls of the same log must not resume anything again.
			h.waitFor(t, "poll again", func(f *fakeHooks) bool { return f.logCalls >= polls+3 })
			if err := d.stop(t); err != nil {
				t.Fatalf("driver = %v after cancel, want nil", err)
			}
			got := map[string]int{}
			for _, c := range h.resumed {
				got[c.token]++
				var r, b int
				fmt.Sscanf(c.token, "r%d-b%d", &r, &b)
				if c.dedup != c.token || c.payload != fmt.Sprintf("%q", hookPayload(r, b)) {
					t.Errorf("resume %+v: want dedup %s and payload %q", c, c.token, hookPayload(r, b))
				}
				// Never before its offset from the first look at the log.
				if early := started.Add(env.Dur(tt.offset(r, b))); times.at[c.token].Before(early) {
					t.Errorf("%s resumed %s before its offset", c.token, early.Sub(times.at[c.token]))
				}
			}
			for _, tok := range tt.want {
				if got[tok] != 1 {
					t.Errorf("hook %s resumed %d times, want once", tok, got[tok])
				}
				delete(got, tok)
			}
			if len(got) > 0 {
				t.Errorf("resumed hooks it should not have: %v", got)
			}
		})
	}
}

// TestDriveRoundHooksWaitsForHookZero: a round's hooks are resumed only
// once its hook 0 is in the log.
func TestDriveRoundHooksWaitsForHookZero(t *testing.T) {
	h := newFakeHooks([]eventlog.Event{hookCreated("r0-b0"), hookCreated("r1-b1"), hookCreated("r1-b2")})
	d := startDriver(t, func(ctx context.Context, h Hooks, runID string, env Env) error {
		return driveRoundHooks(ctx, h, runID, env, hookStormOffset)
	}, h, Env{Scale: 0.001})
	polls := 0
	h.waitFor(t, "resume r0-b0", func(f *fakeHooks) bool { polls = f.logCalls; return len(f.resumed) == 1 })
	h.waitFor(t, "poll again", func(f *fakeHooks) bool { return f.logCalls >= polls+3 })
	h.mu.Lock()
	if len(h.resumed) != 1 {
		t.Errorf("resumed %v before round 1's hook 0 appeared", h.resumed)
	}
	h.mu.Unlock()
	h.setLog([]eventlog.Event{hookCreated("r0-b0"), hookCreated("r1-b1"), hookCreated("r1-b2"), hookCreated("r1-b0")})
	h.waitFor(t, "resume round 1", func(f *fakeHooks) bool { return len(f.resumed) == 4 })
	if err := d.stop(t); err != nil {
		t.Fatal(err)
	}
}

func TestHookStormInput(t *testing.T) {
	got := HookStorm().Input(Env{Scale: 0.5, Seed: 9}, 0)
	if want := (stormInput{Rounds: 6, Width: 8, Scale: 0.5, Seed: 9}); got != want {
		t.Errorf("Input = %+v, want %+v", got, want)
	}
}

// checkRoundHooks asserts the round hooks' place in a simulated storm's
// history: round r's width hooks are the round's first decisions (before
// its fan-out) and are disposed after its reconciles, before its pause.
// Completions of watchdogs that lost their race may land in later rounds;
// they are left out.
func checkRoundHooks(t *testing.T, all []string, rounds, width int) {
	t.Helper()
	var hist []string
	for _, l := range all {
		if !strings.HasPrefix(l, "wait_completed") || l == "wait_completed sleep(1000ms)" {
			hist = append(hist, l)
		}
	}
	start := 1 // after run_created
	for r := range rounds {
		pause := start + indexOf(hist[start:], "wait_created sleep(1000ms)")
		if pause < start {
			t.Fatalf("round %d has no pause after line %d", r, start)
		}
		var created, disposed []string
		for b := range width {
			created = append(created, "hook_created hook "+hookToken(r, b))
			disposed = append(disposed, "hook_disposed hook "+hookToken(r, b))
		}
		if got := hist[start : start+width]; !slices.Equal(got, created) {
			t.Errorf("round %d opens with %v, want its hooks created before the fan-out: %v", r, got, created)
		}
		if got := hist[pause-width : pause]; !slices.Equal(got, disposed) {
			t.Errorf("round %d ends with %v, want its hooks disposed before its pause: %v", r, got, disposed)
		}
		last := hist[pause-width-1]
		if !strings.HasPrefix(last, "step_completed reconcile(r="+fmt.Sprint(r)) {
			t.Errorf("round %d disposes its hooks after %q, want after its last reconcile", r, last)
		}
		for _, l := range hist[start+width : pause-width] {
			if strings.HasPrefix(l, "hook_") {
				t.Errorf("round %d: %q between the fan-out and the reconciles", r, l)
			}
		}
		start = pause + 2 // the pause's wait_completed
	}
}

// TestHookStormShape runs hook-storm through a clean engine in virtual time
// with the driver's schedule: hook i resumed i x 400 ms after hook 0
// appears, so hook 7 (2.8 s) straggles behind the 2.5 s watchdog.
func TestHookStormShape(t *testing.T) {
	env := Env{Scale: 1, Seed: 5}
	sc := HookStorm()
	s := newSim(t, sc, env)
	s.onHook = func(s *simRun, token string) {
		var r, b int
		if _, err := fmt.Sscanf(token, "r%d-b%d", &r, &b); err == nil {
			s.resume(hookStormOffset(r, b), token, hookPayload(r, b), token)
		}
	}
	in := sc.Input(env, 0)
	out := s.run(in)
	if err := sc.Check(mustMarshal(in), out); err != nil {
		t.Fatalf("Check rejected the simulated run: %v", err)
	}
	t.Logf("hook-storm: %s at time scale 1, %d events, %d replays", s.elapsed(), len(s.log), s.replays)
	hist := s.history(eventlog.HookReceived)
	checkRoundHooks(t, hist, 6, 8)
	if n := countPrefix(hist, "step_completed recover("); n != 6 {
		t.Errorf("%d branches took the timer path, want 6 (hook 7 of each round)", n)
	}
	if len(s.dropped) != 0 {
		t.Errorf("payloads sent to disposed hooks: %v", s.dropped)
	}
}
