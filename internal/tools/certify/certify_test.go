package certify_test

import (
	"errors"
	"log/slog"
	"os"
	"strings"
	"testing"

	"github.com/stormctl/stormctl/internal/base/nodetest"
	"github.com/stormctl/stormctl/internal/tools/certify"
	"github.com/stormctl/stormctl/worlds"
	"github.com/stormctl/stormctl/worlds/pkgworld"
)

// TestWorldLocalDuplicateCreations certifies the published
// @workflow/world-local 4.4.1 under contention, through the sidecar: its
// writers at once create the same step more than once. Nothing is
// injected: the duplicates come from the package's own check-then-write
// under concurrent requests, and the check must find one and name it.
func TestWorldLocalDuplicateCreations(t *testing.T) {
	if testing.Short() {
		t.Skip("installs and runs a published package")
	}
	nodetest.Need(t, "node", "npm")
	ref, err := pkgworld.Parse("package:@workflow/world-local@4.4.1")
	if err != nil {
		t.Fatal(err)
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		t.Fatal(err)
	}
	in, err := pkgworld.Install(t.Context(), cache, ref, nil)
	if errors.Is(err, worlds.ErrPrerequisite) {
		nodetest.Skip(t, "%v", err) // node, npm or the registry
	}
	if err != nil {
		t.Fatal(err)
	}
	w, err := pkgworld.Open(t.Context(), in, pkgworld.Options{CacheDir: cache, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = w.Stop() })
	spec, err := w.Spec(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	load := certify.DefaultLoad()
	load.Rounds = 2
	results := certify.Contend(t.Context(), w.Entry("package:@workflow/world-local@4.4.1", spec), load, nil)
	var unique certify.Result
	for _, r := range results {
		if r.Name == certify.CheckUnique {
			unique = r
		}
		if r.Verdict == certify.Unknown {
			t.Errorf("%s is UNKNOWN: %s", r.Name, r.Detail)
		}
	}
	if unique.Verdict != certify.Fail {
		t.Fatalf("%s = %s (%s), want FAIL: world-local 4.4.1 creates a step once per writer", certify.CheckUnique, unique.Verdict, unique.Detail)
	}
	for _, want := range []string{"run wrun_", "correlation id step_", "step_created events (evnt_"} {
		if !strings.Contains(unique.Detail, want) {
			t.Errorf("counterexample %q does not name %q", unique.Detail, want)
		}
	}
	t.Logf("counterexample: %s", unique.Detail)
}
