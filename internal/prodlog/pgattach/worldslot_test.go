package pgattach_test

import (
	"testing"

	"github.com/stormctl/stormctl/internal/eventlog"
	"github.com/stormctl/stormctl/internal/prodlog/pgattach"
	"github.com/stormctl/stormctl/worlds/postgres"
	"github.com/stormctl/stormctl/worlds/postgres/pgtest"
)

// TestAttachSkipsReservations attaches to stormctl's own postgres world
// holding a slot run with a reservation not yet committed: the reserved row
// is a slot taken, not an event, and must not be read as one.
func TestAttachSkipsReservations(t *testing.T) {
	url := pgtest.Cluster(t)
	ctx := t.Context()
	w, err := postgres.Open(ctx, postgres.Config{URL: url, Schema: "attach_slot"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	const run = "wrun_slot1"
	if err := w.CreateRun(ctx, eventlog.Run{ID: run, Scheme: eventlog.SchemeSlot}); err != nil {
		t.Fatal(err)
	}
	d := func(typ eventlog.Type, corr string) []eventlog.Draft {
		return []eventlog.Draft{{Type: typ, CorrelationID: corr}}
	}
	if _, err := w.Append(ctx, run, d(eventlog.RunCreated, "")); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Reserve(ctx, run, d(eventlog.StepCreated, "pending")); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Append(ctx, run, d(eventlog.HookReceived, "h")); err != nil {
		t.Fatal(err)
	}
	var got []string
	if _, err := pgattach.Read(ctx, pgattach.Options{URL: url, Schema: postgres.SchemaPrefix + "attach_slot", RunID: run}, func(r pgattach.Run) error {
		for _, e := range r.Events {
			got = append(got, e.ID)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 {
		t.Fatalf("attach read %d events %v, want the 2 committed ones (the reservation is not an event)", len(got), got)
	}
	for _, id := range got {
		if id == eventlog.SlotID(2) {
			t.Fatalf("attach read the reserved slot 2 as an event: %v", got)
		}
	}
}
