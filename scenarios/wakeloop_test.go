package scenarios

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stormctl/stormctl/internal/engine"
	"github.com/stormctl/stormctl/internal/eventlog"
)

func hb() WakeRace                  { return WakeRace{Winner: causeHeartbeat} }
func wk(n int, fresh bool) WakeRace { return WakeRace{Winner: causeWake, N: n, Fresh: fresh} }
func mustLedger(t *testing.T, in wakeLoopInput, races ...WakeRace) WakeLoopOutput {
	t.Helper()
	out, err := wakeLoopLedger(in, races)
	if err != nil {
		t.Fatalf("wakeLoopLedger: %v", err)
	}
	return out
}

func TestWakeLoopLedger(t *testing.T) {
	// 3 fresh wakes: cycle 4 (a wake) drains "more", so cycle 5 continues
	// without a race; heartbeats are re-armed only after a heartbeat win.
	in := wakeLoopInput{Wakes: 3, MaxCycles: 20, Scale: 1}
	out := mustLedger(t, in, hb(), wk(1, false), wk(2, true), hb(), wk(5, true), wk(6, false), wk(7, true))
	var causes []string
	for _, c := range out.Cycles {
		causes = append(causes, c.Cause)
	}
	want := []string{causeStart, causeHeartbeat, causeWake, causeHeartbeat, causeWake, causeContinue, causeWake}
	if !slices.Equal(causes, want) {
		t.Errorf("causes %v, want %v", causes, want)
	}
	var arms []string
	for _, r := range out.Races {
		arms = append(arms, r.Arm)
	}
	wantArms := []string{"verify(r=1,b=0,heartbeat)", "verify(r=2,b=0,heartbeat)", "", "", "verify(r=4,b=0,heartbeat)", "", ""}
	if !slices.Equal(arms, wantArms) {
		t.Errorf("arms %q, want %q", arms, wantArms)
	}
	if out.Fresh != 3 || out.Stale != 2 || out.Heartbeats != 2 {
		t.Errorf("counts %d fresh, %d stale, %d heartbeats; want 3, 2, 2", out.Fresh, out.Stale, out.Heartbeats)
	}
	// The cycle cap: heartbeats only, 6 cycles at most.
	capped := mustLedger(t, wakeLoopInput{Wakes: 3, MaxCycles: 6}, hb(), hb(), hb(), hb())
	if len(capped.Cycles) != 6 || capped.Cycles[5].Cause != causeContinue {
		t.Errorf("capped run: %d cycles, last %+v; want 6 ending in a continue", len(capped.Cycles), capped.Cycles[len(capped.Cycles)-1])
	}
}

func TestDrainResult(t *testing.T) {
	for i := range 12 {
		res := drainResult(i)
		if len(res) != drainBytes || !strings.HasPrefix(res, expect("drain", stepArgs{R: i})) {
			t.Errorf("drainResult(%d) is %d bytes starting %.20q", i, len(res), res)
		}
		if want := i%5 == 4; drainMore(res) != want {
			t.Errorf("drainResult(%d) asks for more: %v, want %v", i, drainMore(res), want)
		}
	}
	if drainDigest(drainResult(3)) == drainDigest(drainResult(3)[:100]) {
		t.Error("the digest does not see a truncated drain")
	}
	if got := drainDelay(1); got != 950*time.Millisecond {
		t.Errorf("drainDelay(1) = %s, want 950ms (600 + 7 x 50)", got)
	}
}

func TestWakeLoopCheck(t *testing.T) {
	in := wakeLoopInput{Wakes: 3, MaxCycles: 20, Scale: 1}
	base := []WakeRace{hb(), wk(1, false), wk(2, true), hb(), wk(5, true), wk(6, false), wk(7, true)}
	tests := []struct {
		name   string
		in     wakeLoopInput // default in
		races  []WakeRace    // default base
		mutate func(o *WakeLoopOutput)
		ok     bool
	}{
		{name: "correct ledger", ok: true},
		{name: "fresh wakes only", races: []WakeRace{wk(1, true), wk(2, true), wk(3, true)}, ok: true},
		{name: "stopped by the cycle cap", in: wakeLoopInput{Wakes: 3, MaxCycles: 6}, races: []WakeRace{hb(), hb(), hb(), hb()}, ok: true},
		{name: "numbers with gaps (undelivered sends)", races: []WakeRace{wk(4, true), hb(), wk(9, false), wk(10, true), wk(30, true)}, ok: true},

		// Step results.
		{name: "drain of another cycle", mutate: func(o *WakeLoopOutput) { o.Cycles[2].Drain = drainDigest(drainResult(3)) }},
		{name: "drain truncated", mutate: func(o *WakeLoopOutput) { o.Cycles[2].Drain = drainDigest(drainResult(2)[:100]) }},
		{name: "verify before and after swapped", mutate: func(o *WakeLoopOutput) {
			c := &o.Cycles[1]
			c.Before, c.After = c.After, c.Before
		}},
		{name: "sync of another cycle", mutate: func(o *WakeLoopOutput) { o.Cycles[1].Sync = expect("sync", stepArgs{R: 2}) }},
		{name: "verify missing", mutate: func(o *WakeLoopOutput) { o.Cycles[0].Before = "" }},

		// Cycles.
		{name: "a heartbeat cycle recorded as a wake", mutate: func(o *WakeLoopOutput) { o.Cycles[1].Cause = causeWake }},
		{name: "cycle index off", mutate: func(o *WakeLoopOutput) { o.Cycles[3].I = 4 }},
		{name: "cycles swapped", mutate: func(o *WakeLoopOutput) { o.Cycles[1], o.Cycles[2] = o.Cycles[2], o.Cycles[1] }},
		{name: "the continue cycle missing", mutate: func(o *WakeLoopOutput) {
			o.Cycles = slices.Delete(o.Cycles, 5, 6)
			o.Cycles[5].I = 5
		}},
		{name: "an extra cycle", mutate: func(o *WakeLoopOutput) {
			i := len(o.Cycles)
			o.Cycles = append(o.Cycles, WakeCycle{I: i, Cause: causeContinue, Before: expect("verify", stepArgs{R: i, Path: "before"}),
				Drain: drainDigest(drainResult(i)), After: expect("verify", stepArgs{R: i, Path: "after"}), Sync: expect("sync", stepArgs{R: i})})
		}},

		// Races.
		{name: "wakes delivered out of order", mutate: func(o *WakeLoopOutput) { o.Races[2].N, o.Races[4].N = o.Races[4].N, o.Races[2].N }},
		{name: "a wake delivered twice", mutate: func(o *WakeLoopOutput) { o.Races[2].N = o.Races[1].N }},
		{name: "a wake without a number", mutate: func(o *WakeLoopOutput) { o.Races[1].N = 0 }},
		{name: "arm missing", mutate: func(o *WakeLoopOutput) { o.Races[1].Arm = "" }},
		{name: "arm on a carried heartbeat", mutate: func(o *WakeLoopOutput) { o.Races[2].Arm = expect("verify", stepArgs{R: 2, Path: "heartbeat"}) }},
		{name: "arm of another cycle", mutate: func(o *WakeLoopOutput) { o.Races[0].Arm = expect("verify", stepArgs{R: 0, Path: "heartbeat"}) }},
		{name: "a stale wake recorded as fresh", mutate: func(o *WakeLoopOutput) { o.Races[1].Fresh = true }},
		{name: "a number on a heartbeat", mutate: func(o *WakeLoopOutput) { o.Races[0].N = 1 }},
		{name: "unknown winner", mutate: func(o *WakeLoopOutput) { o.Races[0].Winner = "step" }},

		// Counts and the stop rule.
		{name: "fresh count off", mutate: func(o *WakeLoopOutput) { o.Fresh-- }},
		{name: "stale count off", mutate: func(o *WakeLoopOutput) { o.Stale++ }},
		{name: "heartbeats off", mutate: func(o *WakeLoopOutput) { o.Heartbeats = 0 }},
		{name: "a race after the stop rule", mutate: func(o *WakeLoopOutput) { o.Races = append(o.Races, wk(8, false)) }},
		{name: "ended before the stop rule", mutate: func(o *WakeLoopOutput) {
			o.Races = o.Races[:len(o.Races)-1]
			o.Cycles = o.Cycles[:len(o.Cycles)-1]
			o.Fresh--
		}},
		{name: "only the start cycle", mutate: func(o *WakeLoopOutput) {
			*o = WakeLoopOutput{Cycles: o.Cycles[:1]}
		}},
		{name: "nothing", mutate: func(o *WakeLoopOutput) { *o = WakeLoopOutput{} }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tin, races := in, base
			if tt.in.Wakes != 0 {
				tin = tt.in
			}
			if tt.races != nil {
				races = tt.races
			}
			out := mustLedger(t, tin, races...)
			if tt.mutate != nil {
				tt.mutate(&out)
			}
			raw := mustMarshal(out)
			err := WakeLoop().Check(mustMarshal(tin), raw)
			switch {
			case tt.ok && err != nil:
				t.Errorf("Check rejected a correct ledger: %v\n%s", err, raw)
			case !tt.ok && err == nil:
				t.Errorf("Check accepted a wrong ledger:\n%s", raw)
			}
		})
	}
	good := mustMarshal(mustLedger(t, in, base...))
	for name, io := range map[string][2]json.RawMessage{
		"output not JSON":        {mustMarshal(in), json.RawMessage(`{"cycles":[`)},
		"output a list":          {mustMarshal(in), json.RawMessage(`[]`)},
		"input not JSON":         {json.RawMessage(`{`), good},
		"input for more wakes":   {mustMarshal(wakeLoopInput{Wakes: 4, MaxCycles: 20}), good},
		"input for fewer cycles": {mustMarshal(wakeLoopInput{Wakes: 3, MaxCycles: 5}), good},
	} {
		t.Run(name, func(t *testing.T) {
			if err := WakeLoop().Check(io[0], io[1]); err == nil {
				t.Errorf("Check accepted input %s with output %s", io[0], io[1])
			}
		})
	}
}

func TestWakePlan(t *testing.T) {
	const moves = 20000
	a, b, other := newWakePlan(7, "wrun_01"), newWakePlan(7, "wrun_01"), newWakePlan(7, "wrun_02")
	differ := false
	var sends, fresh, bursts, idles int
	for i := range moves {
		ma, mb, mo := a.next(), b.next(), other.next()
		if !slices.Equal(ma.Fresh, mb.Fresh) || ma.Idle != mb.Idle || ma.Gap != mb.Gap {
			t.Fatalf("move %d: %+v, then %+v from the same seed and run", i, ma, mb)
		}
		if !slices.Equal(ma.Fresh, mo.Fresh) || ma.Gap != mo.Gap {
			differ = true
		}
		switch {
		case len(ma.Fresh) != 1 && len(ma.Fresh) != wakeBurstSize:
			t.Fatalf("move %d sends %d payloads, want 1 or a burst of %d", i, len(ma.Fresh), wakeBurstSize)
		case ma.Idle && (ma.Gap < 3200*time.Millisecond || ma.Gap >= 4800*time.Millisecond):
			t.Fatalf("move %d idles %s, want 4s ±20%%", i, ma.Gap)
		case !ma.Idle && (ma.Gap < wakeGapMin || ma.Gap >= wakeGapMax):
			t.Fatalf("move %d waits %s, want %s to %s", i, ma.Gap, wakeGapMin, wakeGapMax)
		}
		sends += len(ma.Fresh)
		for _, f := range ma.Fresh {
			if f {
				fresh++
			}
		}
		if len(ma.Fresh) > 1 {
			bursts++
		}
		if ma.Idle {
			idles++
		}
	}
	if !differ {
		t.Error("two runs of one storm draw the same moves")
	}
	for _, r := range []struct {
		name      string
		got, want float64
	}{
		{"fresh share of payloads", float64(fresh) / float64(sends), wakeFreshRatio},
		{"burst share of sends", float64(bursts) / moves, wakeBurstRatio},
		{"idle share of gaps", float64(idles) / moves, wakeIdleRatio},
	} {
		if r.got < r.want-0.02 || r.got > r.want+0.02 {
			t.Errorf("%s %.3f, want %.2f", r.name, r.got, r.want)
		}
	}
}

func TestDriveWakeLoop(t *testing.T) {
	env := Env{Scale: 0.001, Seed: 9}
	// What the driver must send: its plan's payloads, numbered from 1.
	plan := newWakePlan(env.Seed, "run-1")
	var want []WakePayload
	for len(want) < 30 {
		for _, f := range plan.next().Fresh {
			want = append(want, WakePayload{N: len(want) + 1, Fresh: f})
		}
	}
	tests := []struct {
		name      string
		resumeErr func(token string, attempt int) error
		wantErr   bool
		sends     int // payloads to wait for before stopping; 0: the driver ends itself
	}{
		{name: "sends its plan", sends: 30},
		{name: "waits for the hook", sends: 30, resumeErr: failFirst(3, fmt.Errorf("resume: %w", engine.ErrHookNotFound))},
		{name: "a disposed hook ends the driver", resumeErr: func(_ string, n int) error {
			if n >= 5 {
				return engine.ErrHookDisposed
			}
			return nil
		}},
		{name: "another error fails the driver", wantErr: true, resumeErr: failAlways(errors.New("boom"))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newFakeHooks(nil)
			h.resumeErr = tt.resumeErr
			d := startDriver(t, driveWakeLoop, h, env)
			var err error
			if tt.sends > 0 {
				h.waitFor(t, fmt.Sprintf("%d wakes", tt.sends), func(f *fakeHooks) bool { return len(f.resumed) >= tt.sends })
				err = d.stop(t)
			} else {
				err = d.wait(t)
			}
			if (err != nil) != tt.wantErr {
				t.Fatalf("driveWakeLoop = %v, want error: %v", err, tt.wantErr)
			}
			for i, c := range h.resumed {
				if i >= len(want) {
					break
				}
				w := resumeCall{token: wakeToken, dedup: fmt.Sprintf("wake-%d", i+1), payload: string(mustMarshal(want[i]))}
				if c != w {
					t.Fatalf("send %d: %+v, want %+v (the plan's, numbered in order)", i+1, c, w)
				}
			}
		})
	}
}

// simWakeLoop runs wake-loop in virtual time with the driver's plan for
// runID sending from when the wake hook appears (none if !send).
func simWakeLoop(t *testing.T, in wakeLoopInput, runID string, send bool) (*simRun, WakeLoopOutput) {
	t.Helper()
	env := Env{Scale: 1, Seed: 3}
	sc := WakeLoop()
	s := newSim(t, sc, env)
	s.runID = runID
	s.waitTick = time.Second
	s.onHook = func(s *simRun, token string) {
		if token != wakeToken || !send {
			return
		}
		plan, at, n := newWakePlan(env.Seed, runID), time.Duration(0), 0
		for at < 10*time.Minute {
			move := plan.next()
			for _, f := range move.Fresh {
				n++
				s.resume(at, wakeToken, WakePayload{N: n, Fresh: f}, fmt.Sprintf("wake-%d", n))
			}
			at += move.Gap
		}
	}
	raw := s.run(in)
	if err := sc.Check(mustMarshal(in), raw); err != nil {
		t.Fatalf("Check rejected the simulated run: %v", err)
	}
	var out WakeLoopOutput
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatal(err)
	}
	return s, out
}

// TestWakeLoopShape runs wake-loop through a clean engine in virtual time
// with the driver's plan: it stops after 12 fresh wakes, never reads the
// abort hook and disposes of both hooks at the end.
func TestWakeLoopShape(t *testing.T) {
	in := WakeLoop().Input(Env{Scale: 1}, 0).(wakeLoopInput)
	for i := range 4 {
		runID := fmt.Sprintf("wrun_%02d", i)
		s, out := simWakeLoop(t, in, runID, true)
		if out.Fresh != wakeLoopWakes {
			t.Errorf("%s: %d fresh wakes, want %d", runID, out.Fresh, wakeLoopWakes)
		}
		t.Logf("wake-loop %s: %s at time scale 1: %d cycles, %d heartbeats, %d stale; %d events", runID, s.elapsed(),
			len(out.Cycles), out.Heartbeats, out.Stale, len(s.log))
		hist := s.history(eventlog.HookReceived)
		if !slices.Equal(hist[1:3], []string{"hook_created hook abort", "hook_created hook wake"}) {
			t.Errorf("%s: opens with %v, want the abort and wake hooks", runID, hist[1:3])
		}
		n := len(hist)
		if !slices.Equal(hist[n-3:n-1], []string{"hook_disposed hook wake", "hook_disposed hook abort"}) {
			t.Errorf("%s: ends with %v, want both hooks disposed", runID, hist[n-3:])
		}
		if c := countPrefix(s.history(), "hook_received hook abort"); c != 0 {
			t.Errorf("%s: the abort hook received %d payloads", runID, c)
		}
	}
	// Without wakes the heartbeats alone run it to the cycle cap.
	s, out := simWakeLoop(t, wakeLoopInput{Wakes: wakeLoopWakes, MaxCycles: 12, Scale: 1}, "wrun_quiet", false)
	if len(out.Cycles) != 12 || out.Fresh != 0 || out.Heartbeats == 0 {
		t.Errorf("quiet run: %d cycles, %d fresh, %d heartbeats; want the cap of 12 by heartbeats", len(out.Cycles), out.Fresh, out.Heartbeats)
	}
	t.Logf("wake-loop without wakes, capped at 12 cycles: %s", s.elapsed())
}
