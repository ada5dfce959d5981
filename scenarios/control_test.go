package scenarios

import (
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stormctl/stormctl/internal/engine"
	"github.com/stormctl/stormctl/internal/eventlog"
)

// controlLedger is the one correct output of a control run of n iterations,
// the last of them woken when woken is set.
func controlLedger(n int, woken bool) []ControlIteration {
	out := make([]ControlIteration, n)
	for i := range out {
		out[i] = ControlIteration{I: i, Path: pathTimer, Sync: expect("sync", stepArgs{R: i})}
	}
	if woken {
		last := &out[n-1]
		last.Path, last.Payload, last.Drain = pathHook, controlPayload, expect("drain", stepArgs{R: n - 1})
	}
	return out
}

func TestControlCheck(t *testing.T) {
	in := mustMarshal(controlInput{Iterations: 8, Scale: 1})
	tests := []struct {
		name   string
		n      int  // iterations in the ledger (default 4)
		timers bool // no wake: every iteration on the timer path
		mutate func(its []ControlIteration) []ControlIteration
		ok     bool
	}{
		{name: "woken in iteration 3", ok: true},
		{name: "woken in the first iteration", n: 1, ok: true},
		{name: "woken in the last iteration", n: 8, ok: true},
		{name: "never woken: 8 timer iterations", n: 8, timers: true, ok: true},

		{name: "wrong sync", mutate: func(its []ControlIteration) []ControlIteration {
			its[1].Sync = "sync(r=1,b=1)"
			return its
		}},
		{name: "syncs of two iterations swapped", mutate: func(its []ControlIteration) []ControlIteration {
			its[0].Sync, its[1].Sync = its[1].Sync, its[0].Sync
			return its
		}},
		{name: "sync missing", mutate: func(its []ControlIteration) []ControlIteration {
			its[2].Sync = ""
			return its
		}},
		{name: "drain of another iteration", mutate: func(its []ControlIteration) []ControlIteration {
			its[3].Drain = expect("drain", stepArgs{R: 2})
			return its
		}},
		{name: "wake without drain", mutate: func(its []ControlIteration) []ControlIteration {
			its[3].Drain = ""
			return its
		}},
		{name: "drain on the timer path", mutate: func(its []ControlIteration) []ControlIteration {
			its[1].Drain = expect("drain", stepArgs{R: 1})
			return its
		}},
		{name: "wrong payload", mutate: func(its []ControlIteration) []ControlIteration {
			its[3].Payload = "ctl(i=3)"
			return its
		}},
		{name: "wake without payload", mutate: func(its []ControlIteration) []ControlIteration {
			its[3].Payload = ""
			return its
		}},
		{name: "payload on the timer path", mutate: func(its []ControlIteration) []ControlIteration {
			its[1].Payload = controlPayload
			return its
		}},
		{name: "the run went on after a wake", mutate: func(its []ControlIteration) []ControlIteration {
			return append(its, ControlIteration{I: 4, Path: pathTimer, Sync: expect("sync", stepArgs{R: 4})})
		}},
		{name: "two wakes", mutate: func(its []ControlIteration) []ControlIteration {
			return append(its, controlLedger(5, true)[4])
		}},
		{name: "ended on the timer path before 8 iterations", timers: true},
		{name: "9 iterations", n: 8, timers: true, mutate: func(its []ControlIteration) []ControlIteration {
			return append(its, ControlIteration{I: 8, Path: pathTimer, Sync: expect("sync", stepArgs{R: 8})})
		}},
		{name: "woken in a 9th iteration", n: 9, ok: false},
		{name: "unknown path", mutate: func(its []ControlIteration) []ControlIteration {
			its[1].Path = pathStep
			return its
		}},
		{name: "no path", mutate: func(its []ControlIteration) []ControlIteration {
			its[1].Path = ""
			return its
		}},
		{name: "iterations swapped", mutate: func(its []ControlIteration) []ControlIteration {
			its[0], its[2] = its[2], its[0]
			return its
		}},
		{name: "no iterations", mutate: func([]ControlIteration) []ControlIteration { return nil }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := tt.n
			if n == 0 {
				n = 4
			}
			its := controlLedger(n, !tt.timers)
			if tt.mutate != nil {
				its = tt.mutate(its)
			}
			out := mustMarshal(its)
			err := Control().Check(in, out)
			switch {
			case tt.ok && err != nil:
				t.Errorf("Check rejected a correct ledger: %v\n%s", err, out)
			case !tt.ok && err == nil:
				t.Errorf("Check accepted a wrong ledger:\n%s", out)
			}
		})
	}
	for name, io := range map[string][2]json.RawMessage{
		"output not JSON": {in, json.RawMessage(`[{"i":0`)},
		"output object":   {in, json.RawMessage(`{"i":0}`)},
		"input not JSON":  {json.RawMessage(`{`), mustMarshal(controlLedger(4, true))},
		"input for fewer": {mustMarshal(controlInput{Iterations: 3}), mustMarshal(controlLedger(4, true))},
	} {
		t.Run(name, func(t *testing.T) {
			if err := Control().Check(io[0], io[1]); err == nil {
				t.Errorf("Check accepted input %s with output %s", io[0], io[1])
			}
		})
	}
}

// waitCreated is the wait_created the engine writes for a sleep of d that
// fires at resumeAt.
func waitCreated(corr string, d time.Duration, resumeAt time.Time) eventlog.Event {
	p := mustMarshal(map[string]any{"durationMs": d.Milliseconds(), "resumeAt": resumeAt})
	return eventlog.Event{Type: eventlog.WaitCreated, CorrelationID: corr, Payload: p}
}

func waitCompleted(corr string) eventlog.Event {
	return eventlog.Event{Type: eventlog.WaitCompleted, CorrelationID: corr}
}

func TestControlClear(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	race := func(corr string, untilFire time.Duration) eventlog.Event {
		return waitCreated(corr, controlSleep, now.Add(untilFire))
	}
	sync := eventlog.Event{Type: eventlog.StepCreated, CorrelationID: "s"}
	tests := []struct {
		name    string
		log     []eventlog.Event
		factMax time.Duration // the latency profile's longest fact window
		scale   float64
		want    bool
	}{
		{name: "no sleep yet", log: []eventlog.Event{hookCreated("ctl"), sync}, want: true},
		{name: "race sleep far from its timer", log: []eventlog.Event{race("w1", 3*time.Second)}, want: true},
		{name: "race sleep just outside the clearance (1s)", log: []eventlog.Event{race("w1", 1001*time.Millisecond)}, want: true},
		{name: "race sleep at the clearance", log: []eventlog.Event{race("w1", time.Second)}},
		{name: "race sleep within the clearance", log: []eventlog.Event{race("w1", 400*time.Millisecond)}},
		{name: "race sleep elapsed, not completed yet", log: []eventlog.Event{race("w1", -200*time.Millisecond)}},
		{name: "race sleep elapsed long ago, not completed yet", log: []eventlog.Event{race("w1", -3*time.Second)}},
		{name: "race sleep completed", log: []eventlog.Event{race("w1", -time.Second), waitCompleted("w1")}, want: true},
		{name: "completed late, then the next race sleep far", want: true,
			log: []eventlog.Event{race("w1", -3*time.Second), waitCompleted("w1"), sync, race("w2", 4*time.Second)}},
		{name: "completed, then the next race sleep near its timer",
			log: []eventlog.Event{race("w1", -6*time.Second), waitCompleted("w1"), sync, race("w2", 500*time.Millisecond)}},
		{name: "timer path's sleeps near their timers are no race", want: true,
			log: []eventlog.Event{race("w1", -time.Second), waitCompleted("w1"),
				waitCreated("a", controlWaitA, now.Add(10*time.Millisecond)), waitCreated("b", controlWaitB, now.Add(-time.Millisecond))}},
		{name: "fact window widens the clearance", factMax: 1500 * time.Millisecond,
			log: []eventlog.Event{race("w1", 2500*time.Millisecond)}},
		{name: "fact window within the clearance", factMax: 400 * time.Millisecond, want: true,
			log: []eventlog.Event{race("w1", 1500*time.Millisecond)}},
		{name: "unreadable wait", log: []eventlog.Event{{Type: eventlog.WaitCreated, CorrelationID: "w1", Payload: json.RawMessage(`{"durationMs":"five"}`)}}},
		{name: "wait without its duration (devkit) near its timer counts as the race's", log: []eventlog.Event{{Type: eventlog.WaitCreated, CorrelationID: "w1",
			Payload: json.RawMessage(`{"resumeAt":"` + now.Add(400*time.Millisecond).Format(time.RFC3339Nano) + `"}`)}}},
		{name: "wait without its duration (devkit) far from its timer", want: true, log: []eventlog.Event{{Type: eventlog.WaitCreated, CorrelationID: "w1",
			Payload: json.RawMessage(`{"resumeAt":"` + now.Add(3*time.Second).Format(time.RFC3339Nano) + `"}`)}}},
		{name: "scaled race sleep clear", scale: 0.1, want: true,
			log: []eventlog.Event{waitCreated("w1", 500*time.Millisecond, now.Add(150*time.Millisecond))}},
		{name: "scaled race sleep near", scale: 0.1,
			log: []eventlog.Event{waitCreated("w1", 500*time.Millisecond, now.Add(50*time.Millisecond))}},
		{name: "scaled: an unscaled 5s sleep is no race", scale: 0.1, want: true,
			log: []eventlog.Event{waitCreated("w1", controlSleep, now.Add(50*time.Millisecond))}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			scale := tt.scale
			if scale == 0 {
				scale = 1
			}
			if got := controlClear(tt.log, Env{Scale: scale, MaxFactDelay: tt.factMax}, now); got != tt.want {
				t.Errorf("controlClear = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestControlResumeDelay(t *testing.T) {
	seen := map[time.Duration]bool{}
	for seed := range uint64(5) {
		for i := range 40 {
			run := fmt.Sprintf("wrun_%02d", i)
			d := controlResumeDelay(seed, run)
			if d < 15*time.Second || d > 25*time.Second {
				t.Fatalf("controlResumeDelay(%d, %s) = %s, want 15s to 25s", seed, run, d)
			}
			if again := controlResumeDelay(seed, run); again != d {
				t.Fatalf("controlResumeDelay(%d, %s) = %s, then %s", seed, run, d, again)
			}
			seen[d] = true
		}
	}
	if len(seen) < 150 {
		t.Errorf("only %d distinct delays over 200 runs: runs do not sweep the window", len(seen))
	}
}

func TestDriveControl(t *testing.T) {
	// At scale 0.001 the driver first looks 15-25 ms in, then every 0.25 ms.
	env := Env{Scale: 0.001, Seed: 4, MaxFactDelay: time.Hour}
	raceD := env.Dur(controlSleep)
	pending := []eventlog.Event{{Type: eventlog.RunCreated}, hookCreated("ctl"),
		waitCreated("w1", raceD, time.Now().Add(-time.Second))} // elapsed, not completed
	tests := []struct {
		name      string
		resumeErr func(token string, attempt int) error
		wantErr   bool
		resumes   int
	}{
		{name: "resumed once when clear", resumes: 1},
		{name: "hook not found: looks again", resumes: 1, resumeErr: failFirst(2, engine.ErrHookNotFound)},
		{name: "an unavailable store: tried again", resumes: 1, resumeErr: failFirst(2, unavailable())},
		{name: "a disposed hook ends the driver", resumeErr: failAlways(engine.ErrHookDisposed)},
		{name: "another error fails the driver", wantErr: true, resumeErr: failAlways(errors.New("boom"))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newFakeHooks(pending)
			h.resumeErr = tt.resumeErr
			d := startDriver(t, driveControl, h, env)
			// While the race sleep is pending the driver only looks.
			h.waitFor(t, "look at the log 20 times", func(f *fakeHooks) bool { return f.logCalls >= 20 })
			h.mu.Lock()
			if len(h.attempts) != 0 {
				t.Errorf("resumed %v while the race sleep was pending", h.attempts)
			}
			h.mu.Unlock()
			h.setLog(append(pending[:len(pending):len(pending)], waitCompleted("w1")))
			err := d.wait(t) // the driver ends on its own once it resumed
			if (err != nil) != tt.wantErr {
				t.Fatalf("driveControl = %v, want error: %v", err, tt.wantErr)
			}
			if len(h.resumed) != tt.resumes {
				t.Fatalf("resumed %v, want %d resumes", h.resumed, tt.resumes)
			}
			want := resumeCall{token: controlToken, dedup: controlToken, payload: fmt.Sprintf("%q", controlPayload)}
			if tt.resumes > 0 && h.resumed[0] != want {
				t.Errorf("resumed %+v, want %+v", h.resumed[0], want)
			}
		})
	}
}

// simControl runs control in virtual time; resume says whether a driver
// model (driveControl's timing and controlClear) resumes the hook.
func simControl(t *testing.T, env Env, runID string, resume bool) (*simRun, []ControlIteration, time.Time) {
	t.Helper()
	sc := Control()
	s := newSim(t, sc, env)
	s.runID = runID
	s.waitTick = time.Second // completions up to 1 s late, as the engine's timer wake-ups
	var resumedAt time.Time
	var poll func(s *simRun)
	poll = func(s *simRun) {
		if !controlClear(s.log, env, s.now) {
			s.after(env.Dur(250*time.Millisecond), poll)
			return
		}
		resumedAt = s.now
		s.resume(0, controlToken, controlPayload, controlToken)
	}
	if resume {
		s.after(env.Dur(controlResumeDelay(env.Seed, runID)), poll)
	}
	in := sc.Input(env, 0)
	out := s.run(in)
	if err := sc.Check(mustMarshal(in), out); err != nil {
		t.Fatalf("Check rejected the simulated run: %v\n%s", err, out)
	}
	var its []ControlIteration
	if err := json.Unmarshal(out, &its); err != nil {
		t.Fatal(err)
	}
	return s, its, resumedAt
}

// TestControlShape runs control through a clean engine in virtual time, the
// driver resuming it as driveControl does: the hook_received never lands
// within the clearance of a pending race sleep, and the run ends in a wake.
func TestControlShape(t *testing.T) {
	env := Env{Scale: 1, Seed: 2, MaxFactDelay: 300 * time.Millisecond}
	for i := range 12 {
		runID := fmt.Sprintf("wrun_%02d", i)
		s, its, resumedAt := simControl(t, env, runID, true)
		if last := its[len(its)-1]; last.Path != pathHook {
			t.Errorf("%s: resumed at +%s but never woken: %+v", runID, resumedAt.Sub(s.start), its)
		}
		// No race sleep pending within the clearance when the payload lands.
		at := s.at[slicesIndexType(s.log, eventlog.HookReceived)]
		if !controlClear(s.log[:slicesIndexType(s.log, eventlog.HookReceived)], env, at) {
			t.Errorf("%s: the payload landed at +%s, within the clearance of a race sleep", runID, at.Sub(s.start))
		}
		if i == 0 {
			t.Logf("control: resumed at +%s, woken in iteration %d, done at +%s (time scale 1)", resumedAt.Sub(s.start), len(its)-1, s.elapsed())
		}
		hist := s.history()
		if countPrefix(hist, "hook_created") != 1 || countPrefix(hist, "hook_received") != 1 || hist[len(hist)-2] != "hook_disposed hook ctl" {
			t.Errorf("%s: want one hook, created once, resumed once, disposed at the end: %v", runID, hist)
		}
	}
	s, its, _ := simControl(t, env, "wrun_never", false)
	if len(its) != controlIterations || its[len(its)-1].Path != pathTimer {
		t.Errorf("unresumed control: %+v, want %d timer iterations", its, controlIterations)
	}
	if n := countPrefix(s.history(), "wait_created sleep("); n != 3*controlIterations {
		t.Errorf("%d sleeps, want 3 per timer iteration (the race's and two in parallel)", n)
	}
	t.Logf("control without a wake: done at +%s (time scale 1)", s.elapsed())
}

func slicesIndexType(log []eventlog.Event, typ eventlog.Type) int {
	for i, e := range log {
		if e.Type == typ {
			return i
		}
	}
	return -1
}
