package devkitvercel_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/stormctl/stormctl/internal/base/nodetest"
	"github.com/stormctl/stormctl/internal/engines/builtinengines"
	"github.com/stormctl/stormctl/internal/storm"
	"github.com/stormctl/stormctl/internal/storm/stormdir"
	"github.com/stormctl/stormctl/worlds"
	"github.com/stormctl/stormctl/worlds/devkitvercel"
	"github.com/stormctl/stormctl/worlds/devkitworld"
	"github.com/stormctl/stormctl/worlds/vercel/backend"
	"github.com/stormctl/stormctl/worlds/worldtest"
)

// One host (one sidecar, one backend server) serves every test of the
// package, as it serves every cell of a storm; TestMain stops it.
var (
	hostOnce sync.Once
	host     *devkitvercel.Host
)

func TestMain(m *testing.M) {
	code := m.Run()
	if host != nil {
		if err := host.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "stop the devkit-vercel host:", err)
			code = 1
		}
	}
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			code = 1
		}
	}
	os.Exit(code)
}

// shared is the tests' host, made the first time; it skips t where node
// or npm is missing.
func shared(t *testing.T) *devkitvercel.Host {
	t.Helper()
	nodetest.Need(t, "node", "npm")
	hostOnce.Do(func() { host = devkitvercel.NewHost(devkitworld.Config{Logger: slog.New(slog.DiscardHandler)}) })
	return host
}

// open opens a fresh world for t, closed when t ends.
func open(t *testing.T, opts worlds.Options) worlds.World {
	t.Helper()
	w, err := devkitvercel.Open(t.Context(), shared(t), opts)
	switch {
	case errors.Is(err, devkitworld.ErrNoNode):
		nodetest.Skip(t, "%v", err)
	case err != nil:
		t.Fatalf("open devkit-vercel: %v", err)
	}
	t.Cleanup(func() {
		if err := w.Close(); err != nil {
			t.Error(err)
		}
	})
	return w
}

// TestConformance runs the parts of the conformance suite the package and
// its backend can do (the suite skips, with the entry's reasons, the rest).
func TestConformance(t *testing.T) {
	worldtest.Exercise(t, devkitvercel.Entry(nil), open)
}

// TestEndpointsCalled runs a small storm of the model engine's scenarios
// on devkit-vercel and lists every endpoint the package called: each must
// be one the emulation implements (a 501 would have stopped the storm
// too), and the events' create and list must be among them.
func TestEndpointsCalled(t *testing.T) {
	h := devkitvercel.NewHost(devkitworld.Config{Logger: slog.New(slog.DiscardHandler)})
	shared(t) // skips without node
	t.Cleanup(func() {
		if err := h.Stop(); err != nil {
			t.Error(err)
		}
	})
	var reg worlds.Registry
	reg.Register(devkitvercel.Entry(h))
	t.Setenv("TMPDIR", t.TempDir())
	cfg := stormdir.Config{Worlds: []string{devkitvercel.Name}, Scenarios: []string{"step-storm", "hook-storm", "control"},
		Conditions: []string{"main"}, Runs: 2, TimeScale: 0.1, Timeout: 60 * time.Second, Seed: 7,
		Out: filepath.Join(t.TempDir(), "storm")}
	p, err := storm.NewPlan(cfg.Defaults(), &reg, builtinengines.Engines())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	if _, err := storm.Run(ctx, p, storm.Deps{Worlds: &reg, Version: "test"}); err != nil {
		t.Fatalf("storm: %v", err)
	}
	called := map[string]bool{}
	for _, c := range h.Calls() {
		t.Logf("%-50s %6d requests", c.Pattern, c.Count)
		called[c.Pattern] = true
		if !c.Implemented {
			t.Errorf("the package called %s, which the emulation does not implement: %s", c.Pattern, c.Line)
		}
	}
	for _, want := range []string{"POST /api/v4/runs/{runId}/events/{eventType}", "GET /api/v4/runs/{runId}/events"} {
		if !called[want] {
			t.Errorf("the storm never called %s", want)
		}
	}
}

// TestNotImplemented: a request the emulation does not serve is answered
// 501 with a line naming its method and path; the world's SelfCheck then
// fails with that line, as infrastructure (ErrNotImplemented, a
// prerequisite: exit 3).
func TestNotImplemented(t *testing.T) {
	w := open(t, worlds.Options{}).(*devkitvercel.World)
	if err := w.SelfCheck(); err != nil {
		t.Fatalf("SelfCheck before any such request: %v", err)
	}
	resp, err := http.Get(w.BackendURL() + "/api/v2/runs/wrun_x/steps")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	line := backend.NotImplemented("GET", "/api/v2/runs/wrun_x/steps")
	if resp.StatusCode != http.StatusNotImplemented || !strings.Contains(string(b), line) {
		t.Fatalf("answered %d %s, want 501 with %q", resp.StatusCode, b, line)
	}
	err = w.SelfCheck()
	if !errors.Is(err, devkitvercel.ErrNotImplemented) || !errors.Is(err, worlds.ErrPrerequisite) || !strings.Contains(err.Error(), line) {
		t.Fatalf("SelfCheck = %v, want ErrNotImplemented naming %q", err, line)
	}
}
