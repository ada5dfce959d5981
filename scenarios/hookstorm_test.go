package scenarios

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stormctl/stormctl/engine"
	"github.com/stormctl/stormctl/eventlog"
)

func TestHookStormCheck(t *testing.T) {
	cases := append(commonStormCases(pathHook, pathStep, hookPayload),
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
	runStormCheckCases(t, HookStorm(), pathHook, hookPayload, cases)
}

func hookCreated(token string) eventlog.Event {
	return eventlog.Event{Type: eventlog.HookCreated, CorrelationID: "corr-" + token, Token: token}
}

func TestDriveHooks(t *testing.T) {
	log := []eventlog.Event{
		{Type: eventlog.RunCreated},
		hookCreated("r0-b0"), hookCreated("r0-b1"), hookCreated("r0-b2"),
		hookCreated("poke"), hookCreated("ctl-0"), // not a storm hook: never resumed
		{Type: eventlog.WaitCreated, CorrelationID: "w"},
		hookCreated("r1-b0"), hookCreated("r1-b1"),
	}
	tests := []struct {
		name      string
		resumeErr func(token string, attempt int) error
		want      []string // tokens resumed, once each
		wantErr   bool
	}{
		{name: "every hook once", want: []string{"r0-b0", "r0-b1", "r0-b2", "r1-b0", "r1-b1"}},
		{name: "retried until found", want: []string{"r0-b0", "r0-b1", "r0-b2", "r1-b0", "r1-b1"},
			resumeErr: func(token string, n int) error {
				if token == "r0-b1" && n < 3 {
					return fmt.Errorf("resume: %w", engine.ErrHookNotFound)
				}
				return nil
			}},
		{name: "disposed hooks are left alone", want: []string{"r0-b0", "r0-b2", "r1-b0", "r1-b1"},
			resumeErr: func(token string, _ int) error {
				if token == "r0-b1" {
					return engine.ErrHookDisposed
				}
				return nil
			}},
		{name: "another error fails the driver", wantErr: true,
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
			d := startDriver(t, driveHooks, h, Env{Scale: 0.01, Seed: 1})
			if tt.wantErr {
				if err := d.wait(t); err == nil {
					t.Fatal("driveHooks ended without the resume error")
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
				t.Fatalf("driveHooks = %v after cancel, want nil", err)
			}
			got := map[string]int{}
			for _, c := range h.resumed {
				got[c.token]++
				var r, b int
				fmt.Sscanf(c.token, "r%d-b%d", &r, &b)
				if c.dedup != c.token || c.payload != fmt.Sprintf("%q", hookPayload(r, b)) {
					t.Errorf("resume %+v: want dedup %s and payload %q", c, c.token, hookPayload(r, b))
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

func TestHookStormInput(t *testing.T) {
	got := HookStorm().Input(Env{Scale: 0.5, Seed: 9}, 0)
	if want := (stormInput{Rounds: 6, Width: 8, Scale: 0.5, Seed: 9}); got != want {
		t.Errorf("Input = %+v, want %+v", got, want)
	}
}
