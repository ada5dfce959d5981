package scenarios

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/stormctl/stormctl/internal/eventlog"
)

var hookClaimWant = stormWant{win: pathHook, won: hookPayload, lost: []string{pathClaimed, pathConflict}}

func TestHookClaimCheck(t *testing.T) {
	lostPaths := func(win string) [][]string { return [][]string{{pathClaimed, win}, {pathConflict, pathTimer}} }
	runStormCheckCases(t, HookClaim(), hookClaimWant, pathStep,
		stormCheckCase{name: "claimed and conflict paths", paths: lostPaths, ok: true},
		stormCheckCase{name: "a claimed path with a payload", paths: lostPaths, mutate: func(o *StormOutput) {
			o.Rounds[0].Branches[0].Won = hookPayload(0, 0)
		}},
		stormCheckCase{name: "a conflict path that recovered", paths: lostPaths, mutate: func(o *StormOutput) {
			o.Rounds[1].Branches[0].Recover = expect("recover", stepArgs{R: 1, B: 0})
		}},
		stormCheckCase{name: "a claimed path finalized as the hook's", paths: lostPaths, mutate: func(o *StormOutput) {
			o.Rounds[0].Branches[0].Finalize = expect("finalize", stepArgs{R: 0, B: 0, Path: pathHook})
		}},
		stormCheckCase{name: "a payload of another branch", mutate: func(o *StormOutput) {
			o.Rounds[1].Branches[0].Won = hookPayload(1, 1)
		}},
	)
}

func TestParseClaimToken(t *testing.T) {
	tests := []struct {
		token string
		r, b  int
		ok    bool
	}{
		{"claim-r0-b0", 0, 0, true},
		{"claim-r5-b3", 5, 3, true},
		{"r0-b0", 0, 0, false},
		{"claim-r0-b0x", 0, 0, false},
		{"claim-r01-b0", 0, 0, false},
		{"poke", 0, 0, false},
	}
	for _, tt := range tests {
		r, b, ok := parseClaimToken(tt.token)
		if ok != tt.ok || (ok && (r != tt.r || b != tt.b)) {
			t.Errorf("parseClaimToken(%q) = %d, %d, %v; want %d, %d, %v", tt.token, r, b, ok, tt.r, tt.b, tt.ok)
		}
	}
}

// TestDriveClaimHooks: the driver resumes each claim hook its run's log
// holds once, b x 400 ms (scaled) after the round's first hook appeared,
// and never a token its log answered with a hook_conflict.
func TestDriveClaimHooks(t *testing.T) {
	log := []eventlog.Event{
		{Type: eventlog.RunCreated},
		hookCreated(claimToken(0, 1)), hookCreated(claimToken(0, 0)),
		{Type: eventlog.HookConflict, CorrelationID: "corr-x", Token: ""},
		hookCreated("r0-b2"), // not a claim hook
		hookCreated(claimToken(1, 0)),
	}
	h := newFakeHooks(log)
	var times resumeTimes
	times.hook(h)
	const scale = 0.01
	d := startDriver(t, func(ctx context.Context, h Hooks, runID string, env Env) error {
		return driveClaimHooks(ctx, h, runID, env)
	}, h, Env{Scale: scale, Seed: 1})
	want := []string{claimToken(0, 0), claimToken(0, 1), claimToken(1, 0)}
	polls := 0
	h.waitFor(t, "resume every claim hook", func(f *fakeHooks) bool {
		polls = f.logCalls
		return len(f.resumed) >= len(want)
	})
	// A few more polls of the same log must not resume anything again.
	h.waitFor(t, "poll again", func(f *fakeHooks) bool { return f.logCalls >= polls+3 })
	if err := d.stop(t); err != nil {
		t.Fatalf("driver = %v after cancel, want nil", err)
	}
	var got []string
	for _, c := range h.resumed {
		got = append(got, c.token)
		r, b := mustClaim(t, c.token)
		if c.dedup != c.token || c.payload != fmt.Sprintf("%q", hookPayload(r, b)) {
			t.Errorf("resume %+v: want dedup %s and payload %q", c, c.token, hookPayload(r, b))
		}
	}
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Fatalf("resumed %v, want %v once each", got, want)
	}
	// Branch 1 of round 0 waits its offset after the round's first hook.
	if gap := times.at[claimToken(0, 1)].Sub(times.at[claimToken(0, 0)]); gap < time.Duration(float64(hookStagger)*scale/2) {
		t.Errorf("branch 1 resumed %s after branch 0, want about %s", gap, time.Duration(float64(hookStagger)*scale))
	}
}

func mustClaim(t *testing.T, token string) (int, int) {
	t.Helper()
	r, b, ok := parseClaimToken(token)
	if !ok {
		t.Fatalf("not a claim token: %q", token)
	}
	return r, b
}
