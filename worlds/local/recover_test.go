package local

import (
	"os"
	"testing"

	"github.com/stormctl/stormctl/internal/eventlog"
	"github.com/stormctl/stormctl/worlds"
	"github.com/stormctl/stormctl/worlds/worldtest"
)

// TestAbandonedBatchIsRolledBack stages what a writer that died mid-batch
// leaves (an intent in the counter, claimed keys, event files above the
// committed count) and checks that readers ignore it and the next writer
// removes it before reusing its positions and keys.
func TestAbandonedBatchIsRolledBack(t *testing.T) {
	w, err := Open(t.Context(), worlds.Options{Dir: t.TempDir(), Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	run := "wrun_crash"
	if err := w.CreateRun(t.Context(), eventlog.Run{ID: run, Scheme: eventlog.SchemeSeq}); err != nil {
		t.Fatal(err)
	}
	d := worldtest.Draft
	if _, err := w.Append(t.Context(), run, []eventlog.Draft{d(eventlog.StepStarted, "a"), d(eventlog.StepCompleted, "a")}); err != nil {
		t.Fatal(err)
	}

	// The dead writer's batch: two events at seqs 3 and 4, keys claimed, no commit.
	dead := []eventlog.Event{w.newEvent(run, d(eventlog.StepCreated, "b")), w.newEvent(run, d(eventlog.StepCreated, "c"))}
	ms, err := markersOf(run, dead)
	if err != nil {
		t.Fatal(err)
	}
	staged := counter{Committed: 2, Pending: &intent{EventIDs: []string{dead[0].ID, dead[1].ID}}}
	for _, m := range ms {
		staged.Pending.KeyHash = append(staged.Pending.KeyHash, keyHash(m.key))
	}
	if err := w.writeCounter(run, staged); err != nil {
		t.Fatal(err)
	}
	if _, err := w.fs.claimKeys(run, ms); err != nil {
		t.Fatal(err)
	}
	if err := w.writeEvents(run, 2, dead); err != nil {
		t.Fatal(err)
	}

	p, err := w.List(t.Context(), run, eventlog.Cursor{}, 0)
	if err != nil || len(p.Events) != 2 {
		t.Fatalf("List with a batch in flight = %d events, %v; want the 2 committed", len(p.Events), err)
	}
	evs, err := w.Append(t.Context(), run, []eventlog.Draft{d(eventlog.StepCreated, "b")})
	if err != nil {
		t.Fatalf("Append reusing the dead batch's key: %v", err)
	}
	if evs[0].Seq != 3 {
		t.Fatalf("Append after recovery landed at seq %d, want 3", evs[0].Seq)
	}
	for _, e := range dead {
		if _, err := os.Stat(w.fs.eventFile(run, e.ID)); !os.IsNotExist(err) {
			t.Fatalf("dead event %s still on disk: %v", e.ID, err)
		}
	}
	p, err = w.List(t.Context(), run, eventlog.Cursor{}, 0)
	if err != nil || len(p.Events) != 3 {
		t.Fatalf("List after recovery = %d events, %v; want 3", len(p.Events), err)
	}
	c, err := w.readCounter(run)
	if err != nil || c.Pending != nil || c.Committed != 3 {
		t.Fatalf("counter after recovery = %+v, %v", c, err)
	}
}
