package pgattach_test

import (
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stormctl/stormctl/eventlog"
	"github.com/stormctl/stormctl/forensics"
	"github.com/stormctl/stormctl/pgattach"
	"github.com/stormctl/stormctl/worlds/postgres"
)

// cluster starts a throw-away PostgreSQL (track_commit_timestamp=on) or
// skips with the reason.
func cluster(t *testing.T) string {
	t.Helper()
	c, err := postgres.StartEmbedded(t.Context(), slog.New(slog.DiscardHandler))
	if errors.Is(err, postgres.ErrNoPostgres) {
		t.Skipf("skipping: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := c.Stop(); err != nil {
			t.Error(err)
		}
	})
	return c.URL()
}

func exec(t *testing.T, conn *pgx.Conn, sql string, args ...any) {
	t.Helper()
	if _, err := conn.Exec(t.Context(), sql, args...); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

// TestAttachSeesCommitOrder writes a world-postgres events table from two
// connections whose transactions commit out of id order, then attaches.
func TestAttachSeesCommitOrder(t *testing.T) {
	url := cluster(t)
	ctx := t.Context()
	a, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close(context.Background())
	b, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close(context.Background())
	exec(t, a, `CREATE SCHEMA workflow`)
	exec(t, a, `CREATE TABLE workflow.workflow_events(id varchar PRIMARY KEY, type varchar NOT NULL,
		correlation_id varchar, created_at timestamptz NOT NULL DEFAULT now(), run_id varchar NOT NULL, payload jsonb)`)
	insert := `INSERT INTO workflow.workflow_events(id, type, correlation_id, run_id) VALUES ($1, $2, $3, $4)`
	// Run r1: step_created minted first (smaller id) but committed last, as
	// a hook_received minted after it overtakes it.
	exec(t, a, `BEGIN`)
	exec(t, a, insert, "wevt_01J00000000000000000000001", "step_created", "s1", "wrun_r1")
	exec(t, b, insert, "wevt_01J00000000000000000000002", "hook_received", "h1", "wrun_r1")
	time.Sleep(20 * time.Millisecond) // a visible delta between the two commits
	exec(t, a, `COMMIT`)
	exec(t, b, insert, "wevt_01J00000000000000000000003", "step_completed", "s1", "wrun_r1")
	// Run r2: in order.
	for i, typ := range []string{"run_created", "step_created", "step_completed"} {
		exec(t, b, insert, "wevt_01J0000000000000000000001"+string(rune('0'+i)), typ, "c", "wrun_r2")
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
	url := cluster(t)
	tests := []struct {
		name string
		o    pgattach.Options
		want error
	}{
		{"missing table", pgattach.Options{URL: url, Schema: "nowhere"}, pgattach.ErrNoTable},
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
