// Package nodetest is for tests that need Node.js (node, and npm for an
// install): on a machine without it they skip, saying why, unless the
// environment sets STORMCTL_REQUIRE_NODE=1, when they fail instead. CI
// installs Node.js and sets it (.ci/run), so that no test of a Node path
// passes there by skipping.
package nodetest

import (
	"fmt"
	"os"
	"os/exec"
	"testing"
)

// Env is the environment variable that, set to "1", turns every skip of
// this package into a failure.
const Env = "STORMCTL_REQUIRE_NODE"

// Required reports whether Env asks that a test needing Node.js fail
// rather than skip.
func Required() bool { return os.Getenv(Env) == "1" }

// Need skips t unless every one of bins ("node", "npm") is on PATH; under
// Required it fails t instead.
func Need(t testing.TB, bins ...string) {
	t.Helper()
	for _, bin := range bins {
		if _, err := exec.LookPath(bin); err != nil {
			Skip(t, "needs %s: %v", bin, err)
			return
		}
	}
}

// Skip skips t, saying why (what the machine lacks for Node.js: node, npm,
// the registry npm installs from); under Required it fails t instead.
func Skip(t testing.TB, format string, args ...any) {
	t.Helper()
	why := fmt.Sprintf(format, args...)
	if Required() {
		t.Fatalf("%s=1, and this test cannot run: %s", Env, why)
	}
	t.Skipf("skipping: %s (set %s=1 to fail instead)", why, Env)
}
