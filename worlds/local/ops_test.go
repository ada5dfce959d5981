package local_test

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stormctl/stormctl/eventlog"
	"github.com/stormctl/stormctl/worlds"
	"github.com/stormctl/stormctl/worlds/local"
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

// TestReset removes the world's contents, leaves its directory and its
// neighbours alone, and leaves a usable empty world.
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
		newRun(t, w, run, s)
		mustAppend(t, w, run, false, 0, step(eventlog.StepCompleted, "a"))
		listAll(t, w, run) // fill the cache
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
	if got := names(t, dir); !slices.Equal(got, []string{"events", "keys", "locks", "runs", "tmp"}) {
		t.Fatalf("after Reset the directory holds %v", got)
	}
	for _, s := range schemes {
		run := "wrun_" + string(s)
		if _, err := w.List(t.Context(), run, eventlog.Cursor{}, 0); !errors.Is(err, eventlog.ErrNoRun) {
			t.Fatalf("List of a reset run = %v, want ErrNoRun", err)
		}
		newRun(t, w, run, s)
		mustAppend(t, w, run, true, 0, step(eventlog.StepCompleted, "a"))
		if n := len(listAll(t, w, run)); n != 1 {
			t.Fatalf("%s run after Reset holds %d events, want 1", s, n)
		}
	}
}

func TestCommitTimes(t *testing.T) {
	for _, s := range schemes {
		t.Run(string(s), func(t *testing.T) {
			w := open(t, t.TempDir(), 1, nil)
			run := "wrun_times"
			newRun(t, w, run, s)
			mustAppend(t, w, run, false, 0, step(eventlog.StepStarted, "a"), step(eventlog.StepCompleted, "a"))
			mustAppend(t, w, run, true, 2, step(eventlog.StepCreated, "b"))
			log := listAll(t, w, run)
			cts, err := w.CommitTimes(t.Context(), run)
			if err != nil {
				t.Fatal(err)
			}
			if len(cts) != len(log) {
				t.Fatalf("%d commit times for %d events", len(cts), len(log))
			}
			for i, ct := range cts {
				e := log[i]
				if ct.EventID != e.ID || ct.Seq != e.Seq || ct.Source != "world" || !ct.At.Equal(e.CommittedAt) || ct.At.Before(e.MintedAt) {
					t.Fatalf("commit time %d is %+v for event %s@%d minted %v committed %v", i, ct, e.ID, e.Seq, e.MintedAt, e.CommittedAt)
				}
				if s == eventlog.SchemeSeq && i > 0 && ct.At.Before(cts[i-1].At) {
					t.Fatalf("seq %d committed at %v, before seq %d at %v", ct.Seq, ct.At, cts[i-1].Seq, cts[i-1].At)
				}
			}
		})
	}
}
