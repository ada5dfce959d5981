package engine_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stormctl/stormctl/internal/engine"
	"github.com/stormctl/stormctl/internal/eventlog"
)

// claimProgram creates a forced hook on one token shared by the runs and
// returns what its first Next said: the payload, "claimed" (another run
// took the token), or "conflict" (the world refused the creation).
func claimProgram(c *engine.Ctx) (any, error) {
	h := c.ClaimHook("shared")
	v, err := c.Await(h.Next())
	var claimed *engine.HookForceClaimedError
	switch {
	case errors.As(err, &claimed):
		return "claimed", nil
	case errors.Is(err, engine.ErrHookConflict):
		return "conflict", nil
	case err != nil:
		return nil, err
	}
	var s string
	err = json.Unmarshal(v, &s)
	return s, err
}

// TestHookClaim: two runs of one world create a hook on one token, the
// second while the first waits on it (or after it ended); what each run returns is what the
// world's index and the engine's reading of its answers make of it
// (spec 8). The first run is resumed before or after the second's
// creation; the second always is after it.
func TestHookClaim(t *testing.T) {
	tests := []struct {
		name        string
		claim       engine.HookClaimPolicy
		resumeFirst bool // resume run 1 before run 2 creates its hook
		want1       string
		want2       string
	}{
		{"refuse", engine.HookClaimRefuse, false, "conflict-never-resumed", "conflict"},
		{"force", engine.HookClaimForce, false, "claimed", "p2"},
		{"force_after_payload", engine.HookClaimForce, true, "p1", "p2"},
		// Run 1 has ended: its token is free, forced or not.
		{"refuse_after_run_end", engine.HookClaimRefuse, true, "p1", "p2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
			defer cancel()
			policy, scheme := singleRunner(false)
			policy.HookClaim = tt.claim
			rt := engine.New(ctx, engine.Config{World: openLocal(ctx, t), Program: claimProgram, SharedTokens: true,
				Knobs: engine.Knobs{Scheme: scheme, Policy: policy}, Backoff: time.Millisecond})
			start := func(run string) {
				t.Helper()
				if _, err := rt.Start(ctx, run, nil); err != nil {
					t.Fatal(err)
				}
				waitFor(ctx, t, rt, run, func(e eventlog.Event) bool {
					return e.Type == eventlog.HookCreated || e.Type == eventlog.HookConflict
				})
			}
			resume := func(run, payload string) {
				t.Helper()
				if err := rt.ResumeHook(ctx, run, "shared", payload, payload); err != nil {
					t.Fatalf("resume %s: %v", run, err)
				}
			}
			start("run-1")
			if tt.resumeFirst {
				resume("run-1", "p1")
				awaitEnd(ctx, t, rt, "run-1", "run 1 did not end")
			}
			start("run-2")
			if tt.want2 == "p2" {
				resume("run-2", "p2")
			}
			awaitEnd(ctx, t, rt, "run-2", "run 2 did not end")
			if tt.want1 == "conflict-never-resumed" {
				// Run 1 keeps its token and waits: nothing took it. Its
				// log says so now (run 2's refused write has committed),
				// whether or not run 1 has replayed since.
				if got := output(ctx, t, rt, "run-1"); got != "" {
					t.Errorf("run 1 ended with %q, want it still waiting on its hook", got)
				}
				evs, err := rt.Log(ctx, "run-1")
				if err != nil {
					t.Fatal(err)
				}
				for _, e := range evs {
					if e.Type == eventlog.HookDisposed {
						t.Errorf("run 1's log holds a hook_disposed under refuse: %+v", e)
					}
				}
			} else {
				awaitEnd(ctx, t, rt, "run-1", "run 1 did not end")
				if got := output(ctx, t, rt, "run-1"); got != tt.want1 {
					t.Errorf("run 1 returned %q, want %q", got, tt.want1)
				}
			}
			if got := output(ctx, t, rt, "run-2"); got != tt.want2 {
				t.Errorf("run 2 returned %q, want %q", got, tt.want2)
			}
		})
	}
}

// waitFor polls runID's log until an event matches.
func waitFor(ctx context.Context, t *testing.T, rt *engine.Runtime, runID string, match func(eventlog.Event) bool) {
	t.Helper()
	for {
		evs, err := rt.Log(ctx, runID)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range evs {
			if match(e) {
				return
			}
		}
		select {
		case <-ctx.Done():
			t.Fatalf("run %s: no matching event", runID)
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// output returns the string a run completed with, "" while it runs.
func output(ctx context.Context, t *testing.T, rt *engine.Runtime, runID string) string {
	t.Helper()
	evs, err := rt.Log(ctx, runID)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range evs {
		switch e.Type {
		case eventlog.RunCompleted:
			raw, err := engine.Output(e)
			var s string
			if err == nil {
				err = json.Unmarshal(raw, &s)
			}
			if err != nil {
				t.Fatalf("run %s's output: %v", runID, err)
			}
			return s
		case eventlog.RunFailed:
			t.Fatalf("run %s failed: %+v", runID, engine.Failure(e))
		}
	}
	return ""
}

// TestHookClaimAfterBufferedPayload: a payload that landed before the
// takeover stays the victim's (core: "Deliveries that landed before this
// row are already buffered or delivered and stay valid"); the Next after it
// fails with the takeover.
func TestHookClaimAfterBufferedPayload(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	prog := func(c *engine.Ctx) (any, error) {
		h := c.ClaimHook("shared")
		if _, err := c.Await(c.Sleep(300 * time.Millisecond)); err != nil {
			return nil, err
		}
		var first string
		if err := c.AwaitInto(h.Next(), &first); err != nil {
			return nil, err
		}
		_, err := c.Await(h.Next())
		var claimed *engine.HookForceClaimedError
		if !errors.As(err, &claimed) {
			return nil, fmt.Errorf("second Next: %v, want a HookForceClaimedError", err)
		}
		return first + ", then claimed by " + claimed.By.RunID, nil
	}
	policy, scheme := singleRunner(false)
	policy.HookClaim = engine.HookClaimForce
	rt := engine.New(ctx, engine.Config{World: openLocal(ctx, t), Program: prog, SharedTokens: true,
		Knobs: engine.Knobs{Scheme: scheme, Policy: policy}, Backoff: time.Millisecond, TimerTick: 10 * time.Millisecond})
	hooked := func(e eventlog.Event) bool { return e.Type == eventlog.HookCreated }
	if _, err := rt.Start(ctx, "run-1", nil); err != nil {
		t.Fatal(err)
	}
	waitFor(ctx, t, rt, "run-1", hooked)
	if err := rt.ResumeHook(ctx, "run-1", "shared", "p1", "p1"); err != nil {
		t.Fatal(err)
	}
	if _, err := rt.Start(ctx, "run-2", nil); err != nil {
		t.Fatal(err)
	}
	waitFor(ctx, t, rt, "run-2", hooked)
	awaitEnd(ctx, t, rt, "run-1", "run 1 did not end")
	if got, want := output(ctx, t, rt, "run-1"), "p1, then claimed by run-2"; got != want {
		t.Errorf("run 1 returned %q, want %q", got, want)
	}
}
