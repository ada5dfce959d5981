package scenarios

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/stormctl/stormctl/eventlog"
)

// controlLedger is the one correct output of a control run whose
// iteration i took paths[i].
func controlLedger(paths ...string) []ControlIteration {
	out := make([]ControlIteration, len(paths))
	for i, p := range paths {
		out[i] = ControlIteration{I: i, Path: p, Tick: expect("tick", stepArgs{R: i})}
		if p == pathHook {
			out[i].Payload = controlPayload(i)
		} else {
			out[i].Late = expect("late", stepArgs{R: i})
		}
	}
	return out
}

func TestControlCheck(t *testing.T) {
	in := mustMarshal(controlInput{Iterations: 4, Scale: 1})
	// What the driver does: even iterations resumed, odd ones left to the timer.
	driven := []string{pathHook, pathTimer, pathHook, pathTimer}
	tests := []struct {
		name   string
		paths  []string
		mutate func(its []ControlIteration) []ControlIteration
		ok     bool
	}{
		{name: "correct ledger", ok: true},
		{name: "every hook lost to the timer", paths: []string{pathTimer, pathTimer, pathTimer, pathTimer}, ok: true},
		{name: "every iteration resumed", paths: []string{pathHook, pathHook, pathHook, pathHook}, ok: true},

		{name: "wrong tick", mutate: func(its []ControlIteration) []ControlIteration {
			its[1].Tick = "tick(r=1,b=1)"
			return its
		}},
		{name: "ticks of two iterations swapped", mutate: func(its []ControlIteration) []ControlIteration {
			its[0].Tick, its[1].Tick = its[1].Tick, its[0].Tick
			return its
		}},
		{name: "late of another iteration", mutate: func(its []ControlIteration) []ControlIteration {
			its[1].Late = expect("late", stepArgs{R: 3})
			return its
		}},
		{name: "timer path without late", mutate: func(its []ControlIteration) []ControlIteration {
			its[3].Late = ""
			return its
		}},
		{name: "late on the hook path", mutate: func(its []ControlIteration) []ControlIteration {
			its[0].Late = expect("late", stepArgs{R: 0})
			return its
		}},
		{name: "wrong payload", mutate: func(its []ControlIteration) []ControlIteration {
			its[2].Payload = "ctl(i=?)"
			return its
		}},
		{name: "payload of another iteration", mutate: func(its []ControlIteration) []ControlIteration {
			its[2].Payload = controlPayload(0)
			return its
		}},
		{name: "hook path without payload", mutate: func(its []ControlIteration) []ControlIteration {
			its[0].Payload = ""
			return its
		}},
		{name: "payload on the timer path", mutate: func(its []ControlIteration) []ControlIteration {
			its[1].Payload = controlPayload(1)
			return its
		}},
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
		{name: "an iteration missing", mutate: func(its []ControlIteration) []ControlIteration { return its[:3] }},
		{name: "an extra iteration", mutate: func(its []ControlIteration) []ControlIteration {
			return append(its, controlLedger(pathHook, pathTimer, pathHook, pathTimer, pathHook)[4])
		}},
		{name: "no iterations", mutate: func([]ControlIteration) []ControlIteration { return nil }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			paths := driven
			if tt.paths != nil {
				paths = tt.paths
			}
			its := controlLedger(paths...)
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
		"input not JSON":  {json.RawMessage(`{`), mustMarshal(controlLedger(driven...))},
		"input for more":  {mustMarshal(controlInput{Iterations: 5}), mustMarshal(controlLedger(driven...))},
	} {
		t.Run(name, func(t *testing.T) {
			if err := Control().Check(io[0], io[1]); err == nil {
				t.Errorf("Check accepted input %s with output %s", io[0], io[1])
			}
		})
	}
}

// waitCreated is the wait_created the control program writes for a sleep of
// d that fires at resumeAt.
func waitCreated(d time.Duration, resumeAt time.Time) eventlog.Event {
	p := mustMarshal(map[string]any{"durationMs": d.Milliseconds(), "resumeAt": resumeAt})
	return eventlog.Event{Type: eventlog.WaitCreated, CorrelationID: "w", Payload: p}
}

func TestControlResumeTime(t *testing.T) {
	const d = 10 * time.Second
	stepCreated := eventlog.Event{Type: eventlog.StepCreated, CorrelationID: "s"}
	tests := []struct {
		name      string
		untilFire time.Duration // resumeAt - now when the driver looks
		factMax   time.Duration // the latency profile's longest fact window
		noWait    bool          // the log holds no wait_created after the hook yet
		badWait   bool          // the wait's payload is unreadable
		want      string        // "40%": 40% into the sleep; "now"; "none": let the timer win; "later": look again
	}{
		{name: "seen as the sleep starts", untilFire: d, want: "40%"},
		{name: "seen before 40%", untilFire: 7 * time.Second, want: "40%"},
		{name: "seen after 40%, still clear", untilFire: 3 * time.Second, want: "now"},
		{name: "seen after the clear point", untilFire: 1 * time.Second, want: "none"},
		{name: "seen after the timer fired", untilFire: -time.Second, want: "none"},
		{name: "fact window widens the clearance", untilFire: d, factMax: 4 * time.Second, want: "none"},
		{name: "fact window within the clearance", untilFire: d, factMax: 2500 * time.Millisecond, want: "40%"},
		{name: "fact window pushes a late look out", untilFire: 5 * time.Second, factMax: 3 * time.Second, want: "none"},
		{name: "sleep not in the log yet", noWait: true, want: "later"},
		{name: "unreadable wait", badWait: true, want: "later"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := Env{Scale: 1, MaxFactDelay: tt.factMax}
			clear := max(d/5, 2*tt.factMax)
			before := time.Now()
			resumeAt := before.Add(tt.untilFire).Round(0)
			after := []eventlog.Event{stepCreated}
			switch {
			case tt.badWait:
				after = append(after, eventlog.Event{Type: eventlog.WaitCreated, Payload: json.RawMessage(`{"durationMs":"ten"}`)})
			case !tt.noWait:
				after = append(after, waitCreated(d, resumeAt), waitCreated(d/2, resumeAt.Add(-d/2)))
			}
			got, ok := controlResumeTime(after, env)
			now := time.Now()
			if !got.IsZero() && resumeAt.Sub(got) < clear {
				t.Fatalf("resume at %s before the timer, within the clearance %s", resumeAt.Sub(got), clear)
			}
			var fail string
			switch tt.want {
			case "40%":
				if !ok || !got.Equal(resumeAt.Add(-d*6/10)) {
					fail = "40% into the sleep"
				}
			case "now":
				if !ok || got.Before(before) || got.After(now) {
					fail = "now"
				}
			case "none":
				if !ok || !got.IsZero() {
					fail = "no resume (zero, true)"
				}
			case "later":
				if ok || !got.IsZero() {
					fail = "look again later (zero, false)"
				}
			}
			if fail != "" {
				t.Errorf("controlResumeTime = %v, %v (timer at +%s); want %s", got.Sub(before), ok, tt.untilFire, fail)
			}
		})
	}
}

func TestDriveControl(t *testing.T) {
	now := time.Now()
	// At scale 0.01 the driver polls every 2.5ms: it sees every sleep well
	// before 40% of it (0.8s) has passed.
	const d = 2 * time.Second
	log := []eventlog.Event{
		{Type: eventlog.RunCreated},
		// Iteration 2's sleep is nearly over: too late to stay clear.
		hookCreated("ctl-2"), waitCreated(d, now.Add(100*time.Millisecond)),
		// Odd iterations are left to the timer.
		hookCreated("ctl-1"), waitCreated(d, now.Add(d)),
		// Iteration 0 is resumed 40% into its sleep.
		hookCreated("ctl-0"), {Type: eventlog.StepCreated}, waitCreated(d, now.Add(d)),
		// Iteration 4's sleep is not in the log yet (the program creates a
		// hook's sleep before the next hook, so it can only be the last).
		hookCreated("ctl-4"),
	}
	h := newFakeHooks(log)
	drv := startDriver(t, driveControl, h, Env{Scale: 0.01})
	polls := 0
	h.waitFor(t, "resume ctl-0", func(f *fakeHooks) bool {
		polls = f.logCalls
		return len(f.resumed) > 0
	})
	h.waitFor(t, "poll again", func(f *fakeHooks) bool { return f.logCalls >= polls+3 })
	if err := drv.stop(t); err != nil {
		t.Fatalf("driveControl = %v after cancel, want nil", err)
	}
	want := resumeCall{token: "ctl-0", dedup: "ctl-0", payload: fmt.Sprintf("%q", controlPayload(0))}
	if len(h.resumed) != 1 || h.resumed[0] != want {
		t.Errorf("driver resumed %+v, want only %+v", h.resumed, want)
	}
}
