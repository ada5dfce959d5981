package scenarios

import (
	"context"
	"encoding/json"
	"errors"
	"maps"
	"sync"
	"testing"
	"time"

	"github.com/stormctl/stormctl/internal/engine"
	"github.com/stormctl/stormctl/internal/eventlog"
)

func TestRegistry(t *testing.T) {
	seen := map[string]bool{}
	for _, sc := range Registry() {
		if sc.Name == "" || seen[sc.Name] {
			t.Errorf("scenario name %q is empty or registered twice", sc.Name)
		}
		seen[sc.Name] = true
		if sc.Program == nil || sc.Input == nil || sc.Drive == nil || sc.Check == nil || len(sc.Steps) == 0 {
			t.Errorf("scenario %s is missing a part: %+v", sc.Name, sc)
		}
		got, err := Lookup(sc.Name)
		if err != nil || got.Name != sc.Name {
			t.Errorf("Lookup(%q) = %q, %v", sc.Name, got.Name, err)
		}
	}
	for _, name := range []string{"step-storm", "hook-storm", "blocked-branch", "wake-loop", "control"} {
		if !seen[name] {
			t.Errorf("scenario %s is not registered", name)
		}
	}
	if _, err := Lookup("hail-storm"); err == nil {
		t.Error("Lookup of an unknown scenario succeeded")
	}
}

// wantStep is the one correct outcome of a scenario's step: its result names
// its arguments (wake-loop's drain pads it), settle also sets its attribute.
func wantStep(scenario, name string, a stepArgs) engine.StepOutcome {
	out := engine.StepOutcome{Result: expect(name, a), Took: time.Duration(a.Ms) * time.Millisecond}
	switch {
	case scenario == "wake-loop" && name == "drain":
		out.Result = drainResult(a.R)
	case name == "settle":
		out.Attrs = map[string]string{"settle": settleAttr(a.R, a.B)}
	}
	return out
}

func TestPureSteps(t *testing.T) {
	for _, sc := range Registry() {
		for name, step := range sc.Steps {
			for _, args := range []stepArgs{{R: 2, B: 5, Path: pathTimer, Ms: 123}, {R: 4, Ms: 50}} {
				want := wantStep(sc.Name, name, args)
				res, err := step(mustMarshal(args))
				if err != nil || res.Result != want.Result || res.Took != want.Took || !maps.Equal(res.Attrs, want.Attrs) {
					t.Errorf("%s/%s(%+v) = %+v, %v; want %+v", sc.Name, name, args, res, err, want)
				}
				if again, _ := step(mustMarshal(args)); again.Result != res.Result {
					t.Errorf("%s/%s is not a function of its arguments: %v, then %v", sc.Name, name, res.Result, again.Result)
				}
			}
			if _, err := step(json.RawMessage(`"not args"`)); err == nil {
				t.Errorf("%s/%s accepted arguments it cannot read", sc.Name, name)
			}
		}
	}
}

func TestJitter(t *testing.T) {
	tests := []struct {
		name   string
		spread time.Duration
	}{
		{"poke spread", pokeJitter / 2},
		{"burst spread", burstJitter / 2},
		{"control resume spread", controlResumeSpread / 2},
		{"one millisecond", time.Millisecond},
		{"no spread", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			values := map[time.Duration]bool{}
			for seed := range uint64(20) {
				for r := range 6 {
					for b := range 8 {
						j := jitter(tt.spread, seed, r, b)
						if j < -tt.spread || j > tt.spread {
							t.Fatalf("jitter(%s, %d, %d, %d) = %s, outside ±%s", tt.spread, seed, r, b, j, tt.spread)
						}
						if again := jitter(tt.spread, seed, r, b); again != j {
							t.Fatalf("jitter(%s, %d, %d, %d) = %s, then %s", tt.spread, seed, r, b, j, again)
						}
						values[j] = true
					}
				}
			}
			// 960 draws over the range: both signs and many values, or the
			// per-branch jitter does not spread the branches.
			if want := min(int(2*tt.spread.Milliseconds()+1), 50); len(values) < want {
				t.Errorf("only %d distinct values in ±%s, want at least %d", len(values), tt.spread, want)
			}
			if tt.spread > 0 && (!has(values, func(d time.Duration) bool { return d < 0 }) || !has(values, func(d time.Duration) bool { return d > 0 })) {
				t.Errorf("jitter in ±%s never took one of the signs: %v", tt.spread, values)
			}
		})
	}
	if jitter(pokeJitter, 1, 0, 1) == jitter(pokeJitter, 1, 1, 0) && jitter(pokeJitter, 2, 0, 1) == jitter(pokeJitter, 2, 1, 0) {
		t.Error("jitter ignores the order of its keys")
	}
}

func has(m map[time.Duration]bool, pred func(time.Duration) bool) bool {
	for d := range m {
		if pred(d) {
			return true
		}
	}
	return false
}

func TestEnvDur(t *testing.T) {
	if got := (Env{Scale: 0.1}).Dur(2500 * time.Millisecond); got != 250*time.Millisecond {
		t.Errorf("Dur = %s, want 250ms", got)
	}
	if got := (stormInput{Scale: 2}).dur(watchdog); got != 5*time.Second {
		t.Errorf("dur = %s, want 5s", got)
	}
}

// fakeHooks records what a driver does; resumeErr decides each resume's
// answer (nil: accept).
type fakeHooks struct {
	mu        sync.Mutex
	log       []eventlog.Event
	logCalls  int
	resumed   []resumeCall
	resumeErr func(token string, attempt int) error
	// onResume, when set, runs (under the fake's lock) for every accepted
	// resume.
	onResume func()
	attempts map[string]int
	changed  chan struct{}
}

type resumeCall struct {
	token, dedup, payload string
}

// failFirst is a fakeHooks.resumeErr under which the first n resumes of
// every hook fail with err and the later ones are accepted.
func failFirst(n int, err error) func(token string, attempt int) error {
	return func(_ string, attempt int) error {
		if attempt < n {
			return err
		}
		return nil
	}
}

// failAlways is a fakeHooks.resumeErr under which every resume fails with
// err.
func failAlways(err error) func(token string, attempt int) error {
	return func(string, int) error { return err }
}

// unavailable is the error of a store that cannot be reached.
func unavailable() error { return eventlog.Unavailable("test", errors.New("connection refused")) }

func newFakeHooks(log []eventlog.Event) *fakeHooks {
	return &fakeHooks{log: log, attempts: map[string]int{}, changed: make(chan struct{}, 1)}
}

func (f *fakeHooks) notify() {
	select {
	case f.changed <- struct{}{}:
	default:
	}
}

func (f *fakeHooks) ResumeHook(_ context.Context, _, token string, payload any, dedup string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	defer f.notify()
	n := f.attempts[token]
	f.attempts[token] = n + 1
	if f.resumeErr != nil {
		if err := f.resumeErr(token, n); err != nil {
			return err
		}
	}
	p, _ := json.Marshal(payload)
	f.resumed = append(f.resumed, resumeCall{token: token, dedup: dedup, payload: string(p)})
	if f.onResume != nil {
		f.onResume()
	}
	return nil
}

// setLog replaces the log the driver reads.
func (f *fakeHooks) setLog(log []eventlog.Event) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.log = log
}

func (f *fakeHooks) Log(context.Context, string) ([]eventlog.Event, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	defer f.notify()
	f.logCalls++
	return append([]eventlog.Event(nil), f.log...), nil
}

// waitFor blocks until cond holds (checked whenever the driver touches the
// fake) or the test's deadline budget runs out.
func (f *fakeHooks) waitFor(t *testing.T, what string, cond func(f *fakeHooks) bool) {
	t.Helper()
	deadline := time.After(20 * time.Second)
	for {
		f.mu.Lock()
		ok := cond(f)
		f.mu.Unlock()
		if ok {
			return
		}
		select {
		case <-f.changed:
		case <-deadline:
			t.Fatalf("driver never got to: %s", what)
		}
	}
}

// runningDriver is a scenario driver running in the background.
type runningDriver struct {
	cancel context.CancelFunc
	done   chan error
}

func startDriver(t *testing.T, d func(context.Context, Hooks, string, Env) error, h Hooks, env Env) *runningDriver {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	r := &runningDriver{cancel: cancel, done: make(chan error, 1)}
	go func() { r.done <- d(ctx, h, "run-1", env) }()
	t.Cleanup(func() { _ = r.stop(t) })
	return r
}

// wait returns the driver's error once it ends on its own.
func (r *runningDriver) wait(t *testing.T) error {
	t.Helper()
	select {
	case err, ok := <-r.done:
		if ok {
			close(r.done)
		}
		return err
	case <-time.After(20 * time.Second):
		t.Fatal("the driver did not end")
		return nil
	}
}

// stop cancels the driver and returns its error.
func (r *runningDriver) stop(t *testing.T) error {
	t.Helper()
	r.cancel()
	return r.wait(t)
}
