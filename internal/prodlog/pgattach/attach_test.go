package pgattach_test

import (
	"errors"
	"testing"
	"time"

	"github.com/stormctl/stormctl/forensics"
	"github.com/stormctl/stormctl/internal/eventlog"
	"github.com/stormctl/stormctl/internal/prodlog"
	"github.com/stormctl/stormctl/internal/prodlog/pgattach"
	"github.com/stormctl/stormctl/worlds/postgres/pgtest"
)

// TestAttachSeesCommitOrder writes a world-postgres events table from two
// connections whose transactions commit out of id order, then attaches.
func TestAttachSeesCommitOrder(t *testing.T) {
	url := pgtest.Cluster(t)
	ctx := t.Context()
	a, b := pgtest.Connect(t, url), pgtest.Connect(t, url)
	insert := pgtest.CreateEventsTable(t, a)
	// Run r1: step_created minted first (smaller id) but committed last, as
	// a hook_received minted after it overtakes it.
	pgtest.Exec(t, a, `BEGIN`)
	pgtest.Exec(t, a, insert, "wevt_01J00000000000000000000001", "step_created", "s1", "wrun_r1")
	pgtest.Exec(t, b, insert, "wevt_01J00000000000000000000002", "hook_received", "h1", "wrun_r1")
	time.Sleep(20 * time.Millisecond) // a visible delta between the two commits
	pgtest.Exec(t, a, `COMMIT`)
	pgtest.Exec(t, b, insert, "wevt_01J00000000000000000000003", "step_completed", "s1", "wrun_r1")
	// Run r2: in order.
	for i, typ := range []string{"run_created", "step_created", "step_completed"} {
		pgtest.Exec(t, b, insert, "wevt_01J0000000000000000000001"+string(rune('0'+i)), typ, "c", "wrun_r2")
	}
	var before int
	if err := a.QueryRow(ctx, `SELECT count(*) FROM workflow.workflow_events`).Scan(&before); err != nil {
		t.Fatal(err)
	}

	got := map[string]forensics.CommitOrder{}
	info, err := pgattach.Read(ctx, pgattach.Options{URL: url}, func(r pgattach.Run) error {
		got[r.ID] = forensics.AnalyzeCommitOrder(r.Events, false)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if !info.CommitTimestamp || info.HasSeq {
		t.Fatalf("info = %+v, want commit timestamps and no seq column", info)
	}
	r1, r2 := got["wrun_r1"], got["wrun_r2"]
	if r1.Events != 3 || r1.InvertedPairs != 1 || r1.Displaced != 2 || r1.WithoutCommitTS != 0 {
		t.Errorf("r1 = %+v, want 3 events, 1 inverted pair, 2 displaced", r1)
	}
	p := r1.Pairs[forensics.TypePair{Overtaking: eventlog.HookReceived, Overtaken: eventlog.StepCreated}]
	if p.Count != 1 || p.MaxDelta < 20*time.Millisecond {
		t.Errorf("hook_received over step_created = %+v, want one pair at least 20ms apart", p)
	}
	if r2.InvertedPairs != 0 || r2.Displaced != 0 {
		t.Errorf("r2 = %+v, want no inversion", r2)
	}

	// --run narrows, and nothing was written.
	runs := 0
	if _, err := pgattach.Read(ctx, pgattach.Options{URL: url, RunID: "wrun_r2"}, func(r pgattach.Run) error {
		runs++
		if r.ID != "wrun_r2" {
			t.Errorf("read run %s, want only wrun_r2", r.ID)
		}
		return nil
	}); err != nil || runs != 1 {
		t.Fatalf("Read(--run) = %v after %d runs", err, runs)
	}
	var after int
	if err := a.QueryRow(ctx, `SELECT count(*) FROM workflow.workflow_events`).Scan(&after); err != nil || after != before {
		t.Fatalf("rows %d before, %d after (%v)", before, after, err)
	}
}

func TestAttachErrors(t *testing.T) {
	url := pgtest.Cluster(t)
	tests := []struct {
		name string
		o    pgattach.Options
		want error
	}{
		{"missing table", pgattach.Options{URL: url, Schema: "nowhere"}, prodlog.ErrNoTable},
		{"unreachable server", pgattach.Options{URL: "postgres://postgres@127.0.0.1:1/postgres?connect_timeout=2"}, eventlog.ErrUnavailable},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := pgattach.Read(t.Context(), tt.o, func(pgattach.Run) error { return nil })
			if !errors.Is(err, tt.want) {
				t.Fatalf("Read = %v, want %v", err, tt.want)
			}
		})
	}
}
