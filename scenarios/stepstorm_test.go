package scenarios

import (
	"context"
	"encoding/json"
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

var stepStormWant = stormWant{win: pathStep, won: settleWon}

func TestStepStormCheck(t *testing.T) {
	runStormCheckCases(t, StepStorm(), stepStormWant, pathHook,
		stormCheckCase{name: "settle result of a hook", mutate: func(o *StormOutput) {
			o.Rounds[1].Branches[0].Won = hookPayload(1, 0)
		}},
		stormCheckCase{name: "settle result with a path argument", mutate: func(o *StormOutput) {
			o.Rounds[1].Branches[0].Won = expect("settle", stepArgs{R: 1, B: 0, Path: pathStep})
		}},
	)
}

func TestStepStormInput(t *testing.T) {
	env := Env{Scale: 0.25, Seed: 42}
	got := StepStorm().Input(env, 3)
	if want := (stormInput{Rounds: 6, Width: 8, Scale: 0.25, Seed: 42}); got != want {
		t.Errorf("Input = %+v, want %+v", got, want)
	}
}

func TestSettleDelay(t *testing.T) {
	// The harness's buckets: base + ((r*3 + b*5) mod 5 - 2) x 250 ms. As
	// b*5 is 0 mod 5, a round's branches share the round's bucket.
	tests := []struct {
		r    int
		want time.Duration
	}{
		{0, 1700 * time.Millisecond},
		{1, 2450 * time.Millisecond},
		{2, 1950 * time.Millisecond},
		{3, 2700 * time.Millisecond},
		{4, 2200 * time.Millisecond},
		{5, 1700 * time.Millisecond},
	}
	for _, tt := range tests {
		for b := range 8 {
			if got := settleDelay(tt.r, b); got != tt.want {
				t.Errorf("settleDelay(%d, %d) = %s, want %s", tt.r, b, got, tt.want)
			}
		}
	}
	seen := map[time.Duration]bool{}
	for r := range 40 {
		for b := range 16 {
			d := settleDelay(r, b)
			formula := 2200*time.Millisecond + time.Duration((r*3+b*5)%5-2)*250*time.Millisecond
			if d != formula {
				t.Fatalf("settleDelay(%d, %d) = %s, the formula says %s", r, b, d, formula)
			}
			seen[d] = true
		}
	}
	buckets := slices.Sorted(func(yield func(time.Duration) bool) {
		for d := range seen {
			if !yield(d) {
				return
			}
		}
	})
	want := []time.Duration{1700 * time.Millisecond, 1950 * time.Millisecond, 2200 * time.Millisecond, 2450 * time.Millisecond, 2700 * time.Millisecond}
	if !slices.Equal(buckets, want) {
		t.Errorf("settle delays take %v, want the 5 buckets %v", buckets, want)
	}
}

func TestSettleStep(t *testing.T) {
	res, err := settleStep(mustMarshal(stepArgs{R: 3, B: 6, Ms: 2700}))
	if err != nil {
		t.Fatal(err)
	}
	if res.Result != "settle(r=3,b=6)" || res.Took != 2700*time.Millisecond {
		t.Errorf("settle = %q after %s, want settle(r=3,b=6) after 2.7s", res.Result, res.Took)
	}
	if len(res.Attrs) != 1 || res.Attrs["settle"] != "r3.b6" {
		t.Errorf("settle sets %v, want only settle=r3.b6", res.Attrs)
	}
	if _, err := settleStep(json.RawMessage(`[]`)); err == nil {
		t.Error("settle accepted arguments it cannot read")
	}
}

func TestPokeGap(t *testing.T) {
	tests := []struct {
		name     string
		sent     int
		min, max time.Duration
	}{
		{"first poke", 0, 750 * time.Millisecond, 1000 * time.Millisecond},
		{"63 delivered", 63, 750 * time.Millisecond, 1000 * time.Millisecond},
		{"64 delivered: 8x slower", 64, 6000 * time.Millisecond, 6250 * time.Millisecond},
		{"many delivered", 500, 6000 * time.Millisecond, 6250 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			spread := map[time.Duration]bool{}
			for k := range 200 {
				g := pokeGap(7, k, tt.sent)
				if g < tt.min || g > tt.max {
					t.Fatalf("pokeGap(7, %d, %d) = %s, want %s to %s", k, tt.sent, g, tt.min, tt.max)
				}
				if again := pokeGap(7, k, tt.sent); again != g {
					t.Fatalf("pokeGap(7, %d, %d) = %s, then %s", k, tt.sent, g, again)
				}
				spread[g] = true
			}
			if len(spread) < 50 {
				t.Errorf("only %d distinct gaps: the jitter does not spread the pokes", len(spread))
			}
		})
	}
}

// TestDrivePokeSlowsDown runs the poke driver past 64 pokes: every wait it
// asks for once 64 pokes were delivered is at least the decayed interval,
// every one before is shorter than half of it. The waits are recorded with
// the number of pokes delivered when each was asked for, and not spent.
func TestDrivePokeSlowsDown(t *testing.T) {
	type wait struct {
		d         time.Duration
		delivered int
	}
	h := newFakeHooks(nil)
	var mu sync.Mutex
	var waits []wait
	record := func(ctx context.Context, d time.Duration) error {
		h.mu.Lock()
		delivered := len(h.resumed)
		h.mu.Unlock()
		mu.Lock()
		waits = append(waits, wait{d, delivered})
		mu.Unlock()
		return ctx.Err()
	}
	d := startDriver(t, drivePoke, h, Env{Scale: 1, Seed: 3, Sleep: record})
	h.waitFor(t, "68 pokes", func(f *fakeHooks) bool { return len(f.resumed) >= pokeMax+4 })
	if err := d.stop(t); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	decayed := pokeInterval * pokeDecay
	for i, w := range waits {
		switch {
		case w.delivered != i:
			t.Fatalf("wait %d asked for with %d pokes delivered: want one wait before each poke", i, w.delivered)
		case w.delivered >= pokeMax && w.d < decayed:
			t.Errorf("wait %d after %d pokes is %s, want at least %s (8x after 64)", i, w.delivered, w.d, decayed)
		case w.delivered < pokeMax && w.d >= decayed/2:
			t.Errorf("wait %d after %d pokes is %s, want under %s before 64", i, w.delivered, w.d, decayed/2)
		}
	}
	if n := len(waits); n < pokeMax+4 {
		t.Fatalf("%d waits for %d pokes", n, pokeMax+4)
	}
}

// TestStepStormShape runs step-storm through a clean engine in virtual
// time: the output passes the check, each settle writes its attribute from
// inside (no attribute is a workflow decision), the poke hook lives from
// before the rounds to the end, and the buckets decide the stragglers.
func TestStepStormShape(t *testing.T) {
	env := Env{Scale: 1, Seed: 5}
	sc := StepStorm()
	s := newSim(t, sc, env)
	// The driver's cadence from the start, as drivePoke.
	at, sent := time.Duration(0), 0
	for k := range 400 {
		at += pokeGap(env.Seed, k, sent)
		sent++
		s.resume(at, pokeToken, map[string]int{"k": k}, fmt.Sprintf("poke-%d", k))
	}
	in := sc.Input(env, 0)
	out := s.run(in)
	if err := sc.Check(mustMarshal(in), out); err != nil {
		t.Fatalf("Check rejected the simulated run: %v", err)
	}
	t.Logf("step-storm: %s at time scale 1, %d events, %d replays", s.elapsed(), len(s.log), s.replays)

	var attrs []string
	for _, e := range s.log {
		if e.Type != eventlog.AttrSet {
			continue
		}
		if !strings.HasPrefix(e.Dedup, engine.StepAttrDedup) {
			t.Errorf("attr_set %s is a workflow decision; the settle step writes it", e.Payload)
		}
		attrs = append(attrs, string(e.Payload))
	}
	if len(attrs) != 48 || !slices.Contains(attrs, `{"key":"settle","value":"r5.b7"}`) {
		t.Errorf("%d attr_set events (%v), want one settle=r<r>.b<b> per branch, 48", len(attrs), attrs)
	}

	hist := s.history(eventlog.AttrSet, eventlog.HookReceived)
	if hist[1] != "hook_created hook poke" {
		t.Errorf("the poke hook is not the first decision: %v", hist[:3])
	}
	n := len(hist)
	if hist[n-3] != "wait_completed sleep(1000ms)" || hist[n-2] != "hook_disposed hook poke" || !strings.HasPrefix(hist[n-1], "run_completed") {
		t.Errorf("the run does not end with its pause, the poke's disposal and its completion: %v", hist[n-3:])
	}
	if countPrefix(hist, "hook_created") != 1 {
		t.Errorf("%d hooks created, want the poke only", countPrefix(hist, "hook_created"))
	}

	var o StormOutput
	if err := json.Unmarshal(out, &o); err != nil {
		t.Fatal(err)
	}
	// Without latencies the settle wins below the watchdog, so only round
	// 3's bucket (2.7 s) straggles.
	for r, round := range o.Rounds {
		stragglers := 0
		for _, br := range round.Branches {
			if br.Path == pathTimer {
				stragglers++
			}
		}
		if want := map[bool]int{true: 8, false: 0}[settleDelay(r, 0) > watchdog]; stragglers != want {
			t.Errorf("round %d (settle %s): %d stragglers, want %d", r, settleDelay(r, 0), stragglers, want)
		}
	}
	if pokes := countPrefix(s.history(), "hook_received hook poke"); pokes < 15 {
		t.Errorf("%d pokes over the run, want one every 0.75-1s", pokes)
	}
}

func TestDrivePoke(t *testing.T) {
	tests := []struct {
		name      string
		resumeErr func(token string, attempt int) error
		wantErr   bool
		pokes     int    // pokes to wait for before stopping
		first     string // the first poke's dedup, when it matters
	}{
		{name: "pokes keep coming", pokes: 3},
		{name: "hook not created yet is no error", pokes: 3, resumeErr: failFirst(2, fmt.Errorf("resume: %w", engine.ErrHookNotFound))},
		{name: "an unavailable store gets the same poke again", pokes: 3, first: "poke-0", resumeErr: failFirst(3, unavailable())},
		{name: "a disposed hook ends the driver", resumeErr: failAlways(engine.ErrHookDisposed)},
		{name: "another error fails the driver", wantErr: true, resumeErr: failAlways(errors.New("boom"))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newFakeHooks(nil)
			h.resumeErr = tt.resumeErr
			d := startDriver(t, drivePoke, h, Env{Scale: 0.001, Seed: 1})
			defer func() {
				if tt.first != "" && (len(h.resumed) == 0 || h.resumed[0].dedup != tt.first) {
					t.Errorf("first poke delivered %+v, want %s", h.resumed, tt.first)
				}
			}()
			if tt.pokes == 0 {
				if err := d.wait(t); (err != nil) != tt.wantErr {
					t.Fatalf("drivePoke = %v, want error: %v", err, tt.wantErr)
				}
				return
			}
			h.waitFor(t, fmt.Sprintf("%d pokes", tt.pokes), func(f *fakeHooks) bool { return len(f.resumed) >= tt.pokes })
			if err := d.stop(t); err != nil {
				t.Fatalf("drivePoke = %v after cancel, want nil", err)
			}
			seen := map[string]bool{}
			for _, c := range h.resumed {
				if c.token != "poke" || seen[c.dedup] {
					t.Errorf("resume %+v: want token poke and a fresh dedup", c)
				}
				seen[c.dedup] = true
			}
		})
	}
}
