package local

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stormctl/stormctl/internal/eventlog"
	"github.com/stormctl/stormctl/worlds"
	"github.com/stormctl/stormctl/worlds/worldtest"
)

// slotWorld opens a world on dir with a slot run.
func slotWorld(t *testing.T, dir, run string, seed uint64) *World {
	t.Helper()
	w, err := Open(t.Context(), worlds.Options{Dir: dir, Seed: seed})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = w.Close() })
	if run != "" {
		if err := w.CreateRun(t.Context(), eventlog.Run{ID: run, Scheme: eventlog.SchemeSlot}); err != nil {
			t.Fatal(err)
		}
	}
	return w
}

func wantHoleAt(t *testing.T, w *World, run string, slot int64) {
	t.Helper()
	var he *eventlog.HoleError
	if _, err := w.List(t.Context(), run, eventlog.Cursor{}, 0); !errors.As(err, &he) || he.Slot != slot {
		t.Fatalf("List = %v, want a hole at slot %d", err, slot)
	}
}

// markerSlot returns the event id a key's marker names, or "" without one.
func markerSlot(t *testing.T, w *World, run string, d eventlog.Draft) string {
	t.Helper()
	b, err := os.ReadFile(w.fs.keyFile(run, keyHash(d.Keys()[0])))
	if errors.Is(err, os.ErrNotExist) {
		return ""
	}
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(b), "\n")
	if len(lines) < 2 || lines[0] != d.Keys()[0] {
		t.Fatalf("marker of %s holds %q", d.Keys()[0], b)
	}
	return lines[1]
}

// TestSlotReserverDiedBeforeMarkers: a reserver that died after its table
// rename and before its marker files leaves a reservation whose keys the
// table alone holds: they stay taken until the slot is sealed, and the seal
// frees them.
func TestSlotReserverDiedBeforeMarkers(t *testing.T) {
	run := "wrun_reserver"
	w := slotWorld(t, t.TempDir(), run, 1)
	d := worldtest.Draft(eventlog.StepCompleted, "a")
	digest, err := draftsDigest([]eventlog.Draft{d})
	if err != nil {
		t.Fatal(err)
	}
	dead := slotTable{States: "r", Holds: []slotHold{{First: 1, Count: 1, ReservedAt: time.Now(), Digest: digest, Keys: []string{keyHash(d.Keys()[0])}}}}
	if err := w.writeTable(run, dead); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Append(t.Context(), run, []eventlog.Draft{d}); !errors.Is(err, eventlog.ErrConflict) {
		t.Fatalf("Append of a key only the table holds = %v, want a conflict", err)
	}
	worldtest.Append(t, w, run, worldtest.Draft(eventlog.StepCompleted, "b"))
	wantHoleAt(t, w, run, 1)
	if _, sealed, err := w.Seal(t.Context(), run, 1); !sealed || err != nil {
		t.Fatalf("Seal(1) = %v, %v", sealed, err)
	}
	if e := worldtest.Append(t, w, run, d)[0]; e.Seq != 3 || markerSlot(t, w, run, d) != eventlog.SlotID(3) {
		t.Fatalf("re-append after the seal landed at %d with marker %q, want slot 3", e.Seq, markerSlot(t, w, run, d))
	}
}

// TestSlotFillerDiedBeforeTable: a commit or a seal that wrote its event
// file and died before its table rename left a file readers never look at;
// the slot stays reserved, and whoever fills it overwrites the file.
func TestSlotFillerDiedBeforeTable(t *testing.T) {
	for _, fill := range []string{"commit", "seal"} {
		t.Run(fill, func(t *testing.T) {
			run := "wrun_filler"
			w := slotWorld(t, t.TempDir(), run, 1)
			d := worldtest.Draft(eventlog.StepCompleted, "a")
			r, err := w.Reserve(t.Context(), run, []eventlog.Draft{d})
			if err != nil {
				t.Fatal(err)
			}
			stale := eventlog.Event{RunID: run, ID: eventlog.SlotID(1), Seq: 1, Type: eventlog.StepFailed, CorrelationID: "stale", MintedAt: r.ReservedAt, CommittedAt: time.Now()}
			if err := w.writeEventFile(stale); err != nil {
				t.Fatal(err)
			}
			if p, err := w.List(t.Context(), run, eventlog.Cursor{}, 0); err != nil || len(p.Events) != 0 {
				t.Fatalf("List with only a leftover file = %d events, %v; want none", len(p.Events), err)
			}
			worldtest.Append(t, w, run, worldtest.Draft(eventlog.StepCompleted, "b"))
			wantHoleAt(t, w, run, 1)
			if evs, err := w.Dump(t.Context(), run); err != nil || len(evs) != 1 || evs[0].Seq != 2 {
				t.Fatalf("Dump = %v, %v; want slot 2 alone", evs, err)
			}
			want := eventlog.StepCompleted
			if fill == "commit" {
				if _, err := w.Commit(t.Context(), r); err != nil {
					t.Fatal(err)
				}
			} else {
				want = eventlog.Noop
				if _, sealed, err := w.Seal(t.Context(), run, 1); !sealed || err != nil {
					t.Fatalf("Seal(1) = %v, %v", sealed, err)
				}
			}
			for _, h := range []*World{w, slotWorld(t, w.Dir(), "", 2)} {
				p, err := h.List(t.Context(), run, eventlog.Cursor{}, 0)
				if err != nil || len(p.Events) != 2 || p.Events[0].Type != want {
					t.Fatalf("List after the %s = %v, %v; want %s at slot 1", fill, p.Events, err, want)
				}
			}
		})
	}
}

// TestSlotSealerDiedBeforeRelease: a sealer that died after its table
// rename and before removing the sealed reservation's markers left them
// listed in Release; the serializer's next holder removes them before it
// looks at a key, so the key is free, and the list is gone from the next
// table, so the marker of the key's next claim stays.
func TestSlotSealerDiedBeforeRelease(t *testing.T) {
	run := "wrun_sealer"
	w := slotWorld(t, t.TempDir(), run, 1)
	d := worldtest.Draft(eventlog.StepCompleted, "a")
	if _, err := w.Reserve(t.Context(), run, []eventlog.Draft{d}); err != nil {
		t.Fatal(err)
	}
	if _, sealed, err := w.Seal(t.Context(), run, 1); !sealed || err != nil {
		t.Fatalf("Seal(1) = %v, %v", sealed, err)
	}
	tbl, err := w.readTable(run)
	if err != nil || len(tbl.Release) != 1 || tbl.States != "n" || len(tbl.Holds) != 0 {
		t.Fatalf("table after the seal = %+v, %v; want slot 1 noop, its key in Release", tbl, err)
	}
	// The sealer's marker removal never happened.
	if _, err := w.fs.claimKeys(run, []marker{{key: d.Keys()[0], eventID: eventlog.SlotID(1)}}); err != nil {
		t.Fatal(err)
	}
	if e := worldtest.Append(t, w, run, d)[0]; e.Seq != 2 {
		t.Fatalf("re-append landed at %d, want 2", e.Seq)
	}
	worldtest.Append(t, w, run, worldtest.Draft(eventlog.StepCompleted, "b"))
	if got := markerSlot(t, w, run, d); got != eventlog.SlotID(2) {
		t.Fatalf("marker of the re-appended key names %q, want %s", got, eventlog.SlotID(2))
	}
	if tbl, err := w.readTable(run); err != nil || len(tbl.Release) != 0 {
		t.Fatalf("table = %+v, %v; want Release gone", tbl, err)
	}
}

// TestSlotReadersTakeNoLock: while a writer holds a slot run's serializer,
// readers on this and another handle still read, and this handle's writers
// wait (until their context ends).
func TestSlotReadersTakeNoLock(t *testing.T) {
	run := "wrun_nolock"
	w := slotWorld(t, t.TempDir(), run, 1)
	other := slotWorld(t, w.Dir(), "", 2)
	worldtest.Append(t, w, run, worldtest.Draft(eventlog.StepCompleted, "a"))
	unlock, err := w.locks.lock(t.Context(), run)
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()
	for i, h := range []*World{w, other} {
		if p, err := h.List(t.Context(), run, eventlog.Cursor{}, 0); err != nil || len(p.Events) != 1 {
			t.Fatalf("handle %d: List under a held serializer = %d events, %v", i, len(p.Events), err)
		}
		if evs, err := h.Dump(t.Context(), run); err != nil || len(evs) != 1 {
			t.Fatalf("handle %d: Dump under a held serializer = %d events, %v", i, len(evs), err)
		}
	}
	for name, op := range map[string]func(ctx context.Context) error{
		"Append": func(ctx context.Context) error {
			_, err := w.Append(ctx, run, []eventlog.Draft{worldtest.Draft(eventlog.StepCompleted, "b")})
			return err
		},
		"Seal": func(ctx context.Context) error { _, _, err := w.Seal(ctx, run, 1); return err },
	} {
		ctx, cancel := context.WithTimeout(t.Context(), 20*time.Millisecond)
		if err := op(ctx); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("%s under a held serializer = %v, want it to wait until its context ends", name, err)
		}
		cancel()
	}
}
