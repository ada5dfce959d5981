package devkitengine_test

import (
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/stormctl/stormctl/internal/devkit/devkitengine"
	"github.com/stormctl/stormctl/worlds"
	"github.com/stormctl/stormctl/worlds/devkitvercel"
	"github.com/stormctl/stormctl/worlds/devkitworld"
)

// TestRuntimeEndpointsOnVercel: a small storm of the published runtime on
// devkit-vercel (world-vercel's storage, world-local's queue) completes its
// control runs, and every endpoint of the backend the package called
// during it is one the emulation implements (nothing answered by
// guesswork: a 501 would also have stopped the storm), the runtime's reads
// of a run and of a hook by its token among them. The list is logged.
func TestRuntimeEndpointsOnVercel(t *testing.T) {
	needs(t)
	t.Setenv("TMPDIR", t.TempDir())
	h := devkitvercel.NewHost(devkitworld.Config{Logger: slog.New(slog.DiscardHandler)})
	t.Cleanup(func() {
		if err := h.Stop(); err != nil {
			t.Error(err)
		}
	})
	reg := &worlds.Registry{}
	reg.Register(devkitvercel.Entry(h))
	_, sum := stormControl(t, reg, devkitvercel.Name)
	if c := sum.Cells[0]; c.Runs != 2 || c.Completed != 2 {
		t.Errorf("cell %s: %s, want 2 completed (the control is clean under the real runtime)", c.Key(), c.Compact())
	}
	called := map[string]bool{}
	for _, c := range h.Calls() {
		t.Logf("%-50s %6d requests", c.Pattern, c.Count)
		called[c.Pattern] = true
		if !c.Implemented {
			t.Errorf("the package called %s, which the emulation does not implement: %s", c.Pattern, c.Line)
		}
	}
	for _, want := range []string{
		"POST /api/v4/runs/{runId}/events/{eventType}", "GET /api/v4/runs/{runId}/events",
		"GET /api/v2/runs/{runId}", "GET /api/v2/hooks/by-token",
	} {
		if !called[want] {
			t.Errorf("the storm never called %s", want)
		}
	}
}

// TestBetaRefusedOnVercel: the beta channel on devkit-vercel is refused
// in one line before anything installs.
func TestBetaRefusedOnVercel(t *testing.T) {
	_, err := devkitengine.Prepare(t.Context(), t.TempDir(), devkitengine.Beta, devkitworld.Vercel, nil)
	if !errors.Is(err, devkitengine.ErrChannelWorld) || strings.Contains(err.Error(), "\n") {
		t.Fatalf("Prepare(beta, vercel) = %v, want one line matching ErrChannelWorld", err)
	}
	for _, k := range []devkitworld.Kind{devkitworld.Local, devkitworld.Postgres} {
		if err := devkitengine.CheckPair(devkitengine.Beta, k); err != nil {
			t.Errorf("CheckPair(beta, %s) = %v, want nil", k, err)
		}
	}
	if err := devkitengine.CheckPair(devkitengine.Stable, devkitworld.Vercel); err != nil {
		t.Errorf("CheckPair(stable, vercel) = %v, want nil", err)
	}
}
