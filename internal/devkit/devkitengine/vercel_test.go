package devkitengine_test

import (
	"errors"
	"log/slog"
	"maps"
	"strings"
	"testing"

	"github.com/stormctl/stormctl/internal/devkit/devkitengine"
	"github.com/stormctl/stormctl/internal/storm/stormdir"
	"github.com/stormctl/stormctl/worlds"
	"github.com/stormctl/stormctl/worlds/devkitvercel"
	"github.com/stormctl/stormctl/worlds/devkitworld"
)

// TestRuntimeEndpointsOnVercel: a small storm of the published runtime on
// devkit-vercel (world-vercel's storage, world-local's queue), on each
// channel, completes its control runs, each stamped with its channel's
// spec version, and every endpoint of the backend the package called
// during it is one the emulation implements (nothing answered by
// guesswork: a 501, of a route or of a frame field, would also have
// stopped the storm), the runtime's reads of a run and of a hook by its
// token among them. The list is logged.
func TestRuntimeEndpointsOnVercel(t *testing.T) {
	for _, tt := range []struct {
		channel devkitengine.Channel
		spec    int
		want    []string
	}{
		{devkitengine.Stable, 3, []string{"POST /api/v4/runs/{runId}/events/{eventType}", "GET /api/v4/runs/{runId}/events",
			"GET /api/v2/runs/{runId}", "GET /api/v2/hooks/by-token"}},
		{devkitengine.Beta, 7, []string{"POST /api/v4/runs/{runId}/events/{eventType}", "GET /api/v4/runs/{runId}/events",
			"GET /api/v2/runs/{runId}", "GET /api/v2/hooks/by-token"}},
	} {
		t.Run(string(tt.channel), func(t *testing.T) {
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
			_, sum := stormControl(t, reg, devkitvercel.Name, func(c *stormdir.Config) { c.DevkitChannel = string(tt.channel) })
			c := sum.Cells[0]
			if c.Runs != 2 || c.Completed != 2 {
				t.Errorf("cell %s: %s, want 2 completed (the control is clean under the real runtime)", c.Key(), c.Compact())
			}
			if !maps.Equal(c.SpecVersions, map[int]int{tt.spec: 2}) {
				t.Errorf("cell %s: runs per spec version %v, want both under spec %d", c.Key(), c.SpecVersions, tt.spec)
			}
			called := map[string]bool{}
			for _, c := range h.Calls() {
				t.Logf("%-50s %6d requests", c.Pattern, c.Count)
				called[c.Pattern] = true
				if !c.Implemented {
					t.Errorf("the package called %s, which the emulation does not implement: %s", c.Pattern, c.Line)
				}
			}
			for _, want := range tt.want {
				if !called[want] {
					t.Errorf("the storm never called %s", want)
				}
			}
		})
	}
}

// TestBetaOnVercel: every devkit world kind has a kit on both channels,
// devkit-vercel's beta (world-vercel 5.0.0-beta.50 against the backend's
// slot contract) among them, pinning the packages its kit runs; a kind
// without one (a package world on beta, which CheckPackage refuses first)
// is refused in one line matching ErrChannelWorld.
func TestBetaOnVercel(t *testing.T) {
	for _, ch := range devkitengine.Channels() {
		for _, k := range []devkitworld.Kind{devkitworld.Local, devkitworld.Postgres, devkitworld.Vercel} {
			if err := devkitengine.CheckPair(ch, k); err != nil {
				t.Errorf("CheckPair(%s, %s) = %v, want nil", ch, k, err)
			}
		}
	}
	pins, err := devkitengine.Pins(devkitengine.Beta, devkitworld.Vercel)
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{"@workflow/core": "5.0.0-beta.55", "@workflow/world-vercel": "5.0.0-beta.50", "@workflow/world-local": "5.0.0-beta.46"} {
		if pins[name] != want {
			t.Errorf("beta on vercel pins %s %q, want %q", name, pins[name], want)
		}
	}
	err = devkitengine.CheckPair(devkitengine.Beta, devkitworld.ThirdParty)
	if !errors.Is(err, devkitengine.ErrChannelWorld) || strings.Contains(err.Error(), "\n") {
		t.Fatalf("CheckPair(beta, package) = %v, want one line matching ErrChannelWorld", err)
	}
}
