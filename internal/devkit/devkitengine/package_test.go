package devkitengine_test

import (
	"errors"
	"log/slog"
	"os"
	"strings"
	"testing"

	"github.com/stormctl/stormctl/internal/devkit/devkitengine"
	"github.com/stormctl/stormctl/internal/history"
	"github.com/stormctl/stormctl/internal/storm/stormdir"
	"github.com/stormctl/stormctl/worlds"
	"github.com/stormctl/stormctl/worlds/pkgworld"
)

// packageRegistry registers the package world ref (installed into the
// user's cache on first use), served by a sidecar stopped with the test.
func packageRegistry(t *testing.T, ref string) *worlds.Registry {
	t.Helper()
	r, err := pkgworld.Parse(ref)
	if err != nil {
		t.Fatal(err)
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		t.Fatal(err)
	}
	in, err := pkgworld.Install(t.Context(), cache, r, nil)
	skipOnPrerequisite(t, err)
	if err != nil {
		t.Fatal(err)
	}
	w, err := pkgworld.Open(t.Context(), in, pkgworld.Options{CacheDir: cache, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := w.Stop(); err != nil {
			t.Error(err)
		}
	})
	spec, err := w.Spec(t.Context())
	skipOnPrerequisite(t, err)
	if err != nil {
		t.Fatal(err)
	}
	reg := &worlds.Registry{}
	reg.Register(w.Entry(ref, spec))
	return reg
}

// TestStormDevkitEngineOnPackages: the published runtime hosts a World
// package named package:…: a third-party package whose queue delivers
// over HTTP (the starter) on its own storage with world-local's
// in-process queue, and an upstream world-local at a pinned version on
// its own queue, loaded from the package's directory. Every control run
// ends with a terminal event the runtime wrote (what it became is the
// package's business: the starter's duplicate wait_created corrupts one
// now and then), none stuck or lost to the host, and storm.json says which
// package and queue ran them.
func TestStormDevkitEngineOnPackages(t *testing.T) {
	needs(t)
	for _, tt := range []struct {
		ref, pkg, version, queue string
	}{
		{"package:@workflow-worlds/starter@0.2.1", "@workflow-worlds/starter", "0.2.1", "world-local 4.4.1 (composed: the package's queue delivers over HTTP)"},
		{"package:@workflow/world-local@4.4.1", "@workflow/world-local", "4.4.1", "world-local (its own, in process)"},
	} {
		t.Run(tt.pkg, func(t *testing.T) {
			t.Setenv("TMPDIR", t.TempDir())
			reg := packageRegistry(t, tt.ref)
			cfg, sum := stormControl(t, reg, tt.ref)
			if c := sum.Cells[0]; c.Runs != 2 || c.Completed+c.Corrupted+c.Failed != 2 {
				t.Fatalf("cell %s: %s, want 2 runs the runtime ended (completed, corrupted or failed)", c.Key(), c.Compact())
			}
			d, err := stormdir.Open(cfg.Out)
			if err != nil {
				t.Fatal(err)
			}
			rt, ok := d.Meta.RuntimeOf(history.NewCellKey(tt.ref, "control", "main"))
			if !ok || rt.Engine != devkitengine.Name || rt.Versions[tt.pkg] != tt.version || rt.Queue != tt.queue ||
				!strings.Contains(rt.Source, "world: the package in ") {
				t.Errorf("storm.json's runtime: %+v, %v; want the devkit engine running %s %s, queue %q", rt, ok, tt.pkg, tt.version, tt.queue)
			}
		})
	}
}

// TestCheckPackage: the pairs the published runtime cannot host are
// refused with the reason; the rest pass.
func TestCheckPackage(t *testing.T) {
	two, three, seven := 2, 3, 7
	for _, tt := range []struct {
		name     string
		ch       devkitengine.Channel
		checkout string
		spec     *int
		want     string // "" for no refusal
	}{
		{name: "spec 2 on stable", ch: devkitengine.Stable, spec: &two},
		{name: "spec 3 on stable", ch: devkitengine.Stable, spec: &three},
		{name: "no spec exported", ch: devkitengine.Stable},
		{name: "beta channel", ch: devkitengine.Beta, spec: &two, want: "--devkit-channel beta"},
		{name: "a checkout", ch: devkitengine.Stable, checkout: "../workflow", spec: &two, want: "--devkit-dir ../workflow"},
		{name: "a newer contract", ch: devkitengine.Stable, spec: &seven, want: "specVersion 7, newer than the stable runtime's"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := devkitengine.CheckPackage(tt.ch, tt.checkout, tt.spec)
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("CheckPackage = %v, want nil", err)
			case tt.want != "" && (!errors.Is(err, devkitengine.ErrPackagePair) || !strings.Contains(err.Error(), tt.want)):
				t.Fatalf("CheckPackage = %v, want ErrPackagePair naming %q", err, tt.want)
			}
		})
	}
}
