package devkit_test

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"sync"
	"testing"

	"go.uber.org/goleak"

	"github.com/stormctl/stormctl/eventlog"
	"github.com/stormctl/stormctl/worlds"
	"github.com/stormctl/stormctl/worlds/devkit"
	"github.com/stormctl/stormctl/worlds/postgres"
	"github.com/stormctl/stormctl/worlds/worldtest"
)

// One host (one sidecar, one devkit-postgres cluster) serves every test of
// the package, as it serves every cell of a storm; TestMain stops it.
var (
	hostOnce sync.Once
	host     *devkit.Host
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
func open(t *testing.T, k devkit.Kind) *devkit.World {
	t.Helper()
	for _, bin := range []string{"node", "npm"} {
		if _, err := exec.LookPath(bin); err != nil {
			t.Skipf("skipping: the devkit worlds need %s: %v", bin, err)
		}
	}
	hostOnce.Do(func() { host = devkit.NewHost(devkit.Config{Logger: slog.New(slog.DiscardHandler)}) })
	w, err := devkit.Open(t.Context(), host, k, worlds.Options{Dir: t.TempDir()})
	switch {
	case errors.Is(err, postgres.ErrNoPostgres), errors.Is(err, devkit.ErrNoNode):
		t.Skipf("skipping: %v", err)
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
// do (the suite skips, with the world's reasons, the rest).
func TestConformance(t *testing.T) {
	for _, k := range []devkit.Kind{devkit.Local, devkit.Postgres} {
		t.Run(string(k), func(t *testing.T) {
			worldtest.Exercise(t, eventlog.SchemeULID, func(t *testing.T) worlds.World { return open(t, k) })
		})
	}
}
