package local_test

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stormctl/stormctl/internal/eventlog"
	"github.com/stormctl/stormctl/worlds/worldtest"
)

func TestCreateRunRejects(t *testing.T) {
	w := open(t, t.TempDir(), 1, nil)
	worldtest.NewRun(t, w, eventlog.Run{ID: "wrun_taken", Scheme: eventlog.SchemeSeq})
	tests := []struct {
		name string
		run  eventlog.Run
		want error // a sentinel the error must match, or nil for any error
	}{
		{"empty id", eventlog.Run{Scheme: eventlog.SchemeSeq}, nil},
		{"path in id", eventlog.Run{ID: "../escape", Scheme: eventlog.SchemeSeq}, nil},
		{"slash in id", eventlog.Run{ID: "a/b", Scheme: eventlog.SchemeULID}, nil},
		{"sequence scheme", eventlog.Run{ID: "wrun_a", Scheme: eventlog.SchemeSequence}, nil},
		{"no scheme", eventlog.Run{ID: "wrun_b"}, nil},
		{"unknown fence basis", eventlog.Run{ID: "wrun_c", Scheme: eventlog.SchemeSeq, FenceBasis: "steps"}, nil},
		{"existing run", eventlog.Run{ID: "wrun_taken", Scheme: eventlog.SchemeULID}, eventlog.ErrConflict},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := w.CreateRun(t.Context(), tt.run)
			if err == nil || tt.want != nil && !errors.Is(err, tt.want) {
				t.Fatalf("CreateRun(%+v) = %v, want an error (matching %v)", tt.run, err, tt.want)
			}
		})
	}
	for _, p := range []string{filepath.Join(w.Dir(), "escape.json"), filepath.Join(filepath.Dir(w.Dir()), "escape.json")} {
		if _, err := os.Stat(p); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("a run id escaped the layout: %s: %v", p, err)
		}
	}
}

// TestUnusableStoreIsUnavailable: when a layout directory is replaced by a
// file the store is unusable, and every operation says so with
// eventlog.ErrUnavailable.
func TestUnusableStoreIsUnavailable(t *testing.T) {
	for _, s := range schemes {
		for _, sub := range []string{"events", "tmp"} {
			t.Run(string(s)+"/"+sub, func(t *testing.T) {
				run := "wrun_broken"
				dir, w := openRun(t, s, run)
				worldtest.Append(t, w, run, worldtest.Draft(eventlog.StepCompleted, "before"))
				p := filepath.Join(dir, sub)
				if err := os.RemoveAll(p); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(p, []byte("not a directory"), 0o644); err != nil {
					t.Fatal(err)
				}
				_, aerr := w.Append(t.Context(), run, []eventlog.Draft{worldtest.Draft(eventlog.StepCompleted, "after")})
				// The slot scheme's failed Append reserved slot 2 before its
				// commit failed on the missing events/: the hole counts.
				expected := int64(1)
				if s == eventlog.SchemeSlot && sub == "events" {
					expected = 2
				}
				_, ferr := w.AppendFenced(t.Context(), run, expected, []eventlog.Draft{worldtest.Draft(eventlog.StepCreated, "after")})
				for name, err := range map[string]error{"Append": aerr, "AppendFenced": ferr} {
					if !errors.Is(err, eventlog.ErrUnavailable) {
						t.Errorf("%s = %v, want an error matching %v", name, err, eventlog.ErrUnavailable)
					}
				}
				if sub == "events" {
					if _, err := w.List(t.Context(), run, eventlog.Cursor{}, 0); !errors.Is(err, eventlog.ErrUnavailable) {
						t.Errorf("List = %v, want an error matching %v", err, eventlog.ErrUnavailable)
					}
				}
			})
		}
	}
}

// TestDensityViolationsAreLoud: damage to a seq run's files fails the next
// read with the typed density error instead of returning a wrong log.
func TestDensityViolationsAreLoud(t *testing.T) {
	tests := []struct {
		name   string
		damage func(t *testing.T, dir, run string, evs []eventlog.Event)
		want   error
	}{
		{"missing middle event", func(t *testing.T, dir, run string, evs []eventlog.Event) {
			remove(t, eventPath(dir, run, evs[1].ID))
		}, eventlog.ErrGap},
		{"missing last event", func(t *testing.T, dir, run string, evs []eventlog.Event) {
			remove(t, eventPath(dir, run, evs[2].ID))
		}, eventlog.ErrGap},
		{"position twice", func(t *testing.T, dir, run string, evs []eventlog.Event) {
			twin := evs[1]
			twin.ID = "evnt_01J00000000000000000000000"
			writeEvent(t, dir, twin)
		}, eventlog.ErrDuplicate},
		{"unpositioned event", func(t *testing.T, dir, run string, evs []eventlog.Event) {
			stray := evs[1]
			stray.ID, stray.Seq = "evnt_01J00000000000000000000000", 0
			writeEvent(t, dir, stray)
		}, eventlog.ErrGap},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			run := "wrun_damaged"
			fresh := damaged(t, eventlog.SchemeSeq, run, tt.damage)
			if _, err := fresh.List(t.Context(), run, eventlog.Cursor{}, 0); !errors.Is(err, tt.want) {
				t.Fatalf("List = %v, want an error matching %v", err, tt.want)
			}
		})
	}
}

func eventPath(dir, run, id string) string {
	return filepath.Join(dir, "events", run, run+"-"+id+".json")
}

func remove(t *testing.T, path string) {
	t.Helper()
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
}

func writeEvent(t *testing.T, dir string, e eventlog.Event) {
	t.Helper()
	b, err := json.Marshal(e)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(eventPath(dir, e.RunID, e.ID), b, 0o644); err != nil {
		t.Fatal(err)
	}
}
