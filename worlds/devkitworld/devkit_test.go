package devkitworld_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/oklog/ulid/v2"
	"go.uber.org/goleak"

	"github.com/stormctl/stormctl/internal/base/nodetest"
	"github.com/stormctl/stormctl/internal/eventlog"
	"github.com/stormctl/stormctl/worlds"
	"github.com/stormctl/stormctl/worlds/devkitworld"
	"github.com/stormctl/stormctl/worlds/devkitworld/sidecar"
	"github.com/stormctl/stormctl/worlds/postgres"
	"github.com/stormctl/stormctl/worlds/worldtest"
)

// One host (one sidecar, one devkit-postgres cluster) serves every test of
// the package, as it serves every cell of a storm; TestMain stops it.
var (
	hostOnce sync.Once
	host     *devkitworld.Host
)

func TestMain(m *testing.M) {
	code := m.Run()
	if host != nil {
		if err := host.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "stop the devkit host:", err)
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

// open opens a fresh devkit world of kind k for t, closed when t ends; it
// skips t with the reason where node and npm, or (devkit-postgres) the
// PostgreSQL binaries, are missing. The first call installs the published
// packages into the user's cache (npm), once per lock.
func open(t *testing.T, k devkitworld.Kind) *devkitworld.World {
	t.Helper()
	return openWith(t, k, worlds.Options{Dir: t.TempDir()})
}

// openWith is open with the suite's options.
func openWith(t *testing.T, k devkitworld.Kind, opts worlds.Options) *devkitworld.World {
	t.Helper()
	nodetest.Need(t, "node", "npm")
	hostOnce.Do(func() { host = devkitworld.NewHost(devkitworld.Config{Logger: slog.New(slog.DiscardHandler)}) })
	w, err := devkitworld.Open(t.Context(), host, k, opts)
	switch {
	case errors.Is(err, postgres.ErrNoPostgres):
		t.Skipf("skipping: %v", err)
	case errors.Is(err, devkitworld.ErrNoNode):
		nodetest.Skip(t, "%v", err)
	case err != nil:
		t.Fatalf("open devkit-%s: %v", k, err)
	}
	t.Cleanup(func() {
		if err := w.Close(); err != nil {
			t.Error(err)
		}
	})
	return w
}

// TestConformance runs the parts of the conformance suite the packages can
// do (the suite skips, with the reasons their entries give, the rest).
func TestConformance(t *testing.T) {
	reg := &worlds.Registry{}
	devkitworld.Register(reg, nil) // entries only: the worlds open through open
	for _, k := range []devkitworld.Kind{devkitworld.Local, devkitworld.Postgres} {
		entry, err := reg.Lookup("devkit-" + string(k))
		if err != nil {
			t.Fatal(err)
		}
		t.Run(string(k), func(t *testing.T) {
			worldtest.Exercise(t, entry, func(t *testing.T, opts worlds.Options) worlds.World { return openWith(t, k, opts) })
		})
	}
}

// TestCheckout runs a world from a checkout-shaped directory (Config.Dir,
// --devkit-dir) whose packages are links to the published ones: the
// sidecar imports them from there, and the package mints the ids.
func TestCheckout(t *testing.T) {
	open(t, devkitworld.Local) // the published packages, installed
	cache, err := os.UserCacheDir()
	if err != nil {
		t.Skipf("skipping: no cache directory: %v", err)
	}
	l, err := sidecar.Install(t.Context(), cache, nil)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "packages"), 0o755); err != nil {
		t.Fatal(err)
	}
	for name, target := range map[string]string{"world-local": l.Local, "world-postgres": l.Postgres} {
		if err := os.Symlink(target, filepath.Join(dir, "packages", name)); err != nil {
			t.Fatal(err)
		}
	}
	h := devkitworld.NewHost(devkitworld.Config{Dir: dir, CacheDir: t.TempDir(), Logger: slog.New(slog.DiscardHandler)})
	t.Cleanup(func() {
		if err := h.Stop(); err != nil {
			t.Error(err)
		}
	})
	versions, err := h.Versions(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if versions["@workflow/world-local"] == "" || versions["@workflow/world-postgres"] == "" {
		t.Fatalf("the checkout's sidecar reports versions %v", versions)
	}
	w, err := devkitworld.Open(t.Context(), h, devkitworld.Local, worlds.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	run := "wrun_" + ulid.Make().String()
	if err := w.CreateRun(t.Context(), eventlog.Run{ID: run, Scheme: eventlog.SchemeULID}); err != nil {
		t.Fatal(err)
	}
	written, err := w.Append(t.Context(), run, []eventlog.Draft{{Type: eventlog.RunCreated, Payload: json.RawMessage(`{"n":1}`)},
		{Type: eventlog.StepCreated, CorrelationID: "step_1", Payload: json.RawMessage(`{"name":"a","args":1}`)}})
	if err != nil {
		t.Fatal(err)
	}
	p, err := w.List(t.Context(), run, eventlog.Cursor{}, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Events) != 2 || p.Events[0].ID != written[0].ID || p.Events[1].ID != written[1].ID || !strings.HasPrefix(written[0].ID, eventlog.LocalPrefix) {
		t.Fatalf("wrote %v, read %v: want the package's two evnt_ ids back in order", written, p.Events)
	}
}
