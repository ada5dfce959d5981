package scenarios

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stormctl/stormctl/engine"
)

func settleWon(r, b int) string { return expect("settle", stepArgs{R: r, B: b}) }

func TestStepStormCheck(t *testing.T) {
	cases := append(commonStormCases(pathStep, pathHook, settleWon),
		stormCheckCase{name: "settle result of a hook", mutate: func(o *StormOutput) {
			o.Rounds[1].Branches[0].Won = hookPayload(1, 0)
		}},
		stormCheckCase{name: "settle result with a path argument", mutate: func(o *StormOutput) {
			o.Rounds[1].Branches[0].Won = expect("settle", stepArgs{R: 1, B: 0, Path: pathStep})
		}},
	)
	runStormCheckCases(t, StepStorm(), pathStep, settleWon, cases)
}

func TestStepStormInput(t *testing.T) {
	env := Env{Scale: 0.25, Seed: 42}
	got := StepStorm().Input(env, 3)
	if want := (stormInput{Rounds: 6, Width: 8, Scale: 0.25, Seed: 42}); got != want {
		t.Errorf("Input = %+v, want %+v", got, want)
	}
}

func TestDrivePoke(t *testing.T) {
	tests := []struct {
		name      string
		resumeErr func(token string, attempt int) error
		wantErr   bool
		pokes     int // pokes to wait for before stopping
	}{
		{name: "pokes keep coming", pokes: 3},
		{name: "hook not created yet is no error", pokes: 3, resumeErr: func(_ string, n int) error {
			if n < 2 {
				return fmt.Errorf("resume: %w", engine.ErrHookNotFound)
			}
			return nil
		}},
		{name: "a disposed hook ends the driver", resumeErr: func(string, int) error { return engine.ErrHookDisposed }},
		{name: "another error fails the driver", wantErr: true, resumeErr: func(string, int) error { return errors.New("boom") }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newFakeHooks(nil)
			h.resumeErr = tt.resumeErr
			d := startDriver(t, drivePoke, h, Env{Scale: 0.001, Seed: 1})
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
