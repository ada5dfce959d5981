package local_test

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stormctl/stormctl/internal/eventlog"
	"github.com/stormctl/stormctl/worlds"
	"github.com/stormctl/stormctl/worlds/local"
	"github.com/stormctl/stormctl/worlds/worldtest"
)

func TestRegister(t *testing.T) {
	var r worlds.Registry
	local.Register(&r)
	e, err := r.Lookup("local")
	if err != nil {
		t.Fatal(err)
	}
	if e.Description == "" || !slices.Equal(e.Schemes, []string{"ulid", "seq", "slot"}) {
		t.Fatalf("entry %+v: want a description and schemes [ulid seq slot]", e)
	}
	w, err := e.Open(t.Context(), worlds.Options{Dir: t.TempDir(), Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if _, ok := w.(worlds.Resetter); !ok {
		t.Error("the local world is not a worlds.Resetter")
	}
	if _, ok := w.(worlds.Slotter); !ok {
		t.Error("the local world is not a worlds.Slotter")
	}
	if _, err := e.Open(t.Context(), worlds.Options{}); err == nil {
		t.Error("Open without a directory succeeded")
	}
}

// TestReset removes the world's contents and leaves its directory and its
// neighbours alone (the conformance suite checks that the runs are gone and
// the world usable).
func TestReset(t *testing.T) {
	parent := t.TempDir()
	dir := filepath.Join(parent, "world")
	neighbour := filepath.Join(parent, "keep.txt")
	if err := os.WriteFile(neighbour, []byte("not the world's"), 0o644); err != nil {
		t.Fatal(err)
	}
	w := open(t, dir, 1, nil)
	for _, s := range schemes {
		run := "wrun_" + string(s)
		worldtest.NewRun(t, w, eventlog.Run{ID: run, Scheme: s})
		worldtest.Append(t, w, run, worldtest.Draft(eventlog.StepCompleted, "a"))
		worldtest.ListAll(t, w, run) // fill the cache
	}
	if err := os.WriteFile(filepath.Join(dir, "stray"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := w.Reset(t.Context()); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(neighbour); err != nil {
		t.Fatalf("Reset touched a file outside the world: %v", err)
	}
	if got := names(t, dir); !slices.Equal(got, []string{"events", "keys", "locks", "runs", "tmp", "tokens"}) {
		t.Fatalf("after Reset the directory holds %v", got)
	}
}
