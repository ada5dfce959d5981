package devkitvercel_test

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"sync"
	"testing"

	"go.uber.org/goleak"

	"github.com/stormctl/stormctl/worlds"
	"github.com/stormctl/stormctl/worlds/devkit"
	"github.com/stormctl/stormctl/worlds/devkitvercel"
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
	for _, bin := range []string{"node", "npm"} {
		if _, err := exec.LookPath(bin); err != nil {
			t.Skipf("skipping: devkit-vercel needs %s: %v", bin, err)
		}
	}
	hostOnce.Do(func() { host = devkitvercel.NewHost(devkit.Config{Logger: slog.New(slog.DiscardHandler)}) })
	return host
}

// open opens a fresh world for t, closed when t ends.
func open(t *testing.T, opts worlds.Options) worlds.World {
	t.Helper()
	w, err := devkitvercel.Open(t.Context(), shared(t), opts)
	switch {
	case errors.Is(err, devkit.ErrNoNode):
		t.Skipf("skipping: %v", err)
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
