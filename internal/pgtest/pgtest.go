// Package pgtest gives tests a throw-away PostgreSQL: the embedded cluster
// stormctl starts by default, skipped with the reason where no PostgreSQL
// binaries are installed.
package pgtest

import (
	"context"
	"errors"
	"log/slog"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/stormctl/stormctl/worlds/postgres"
)

// Cluster starts an embedded cluster (track_commit_timestamp=on) for t,
// stopped when t ends, and returns its URL; without PostgreSQL binaries it
// skips t with the reason.
func Cluster(t testing.TB) string {
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

// Connect opens a connection to url, closed when t ends.
func Connect(t testing.TB, url string) *pgx.Conn {
	t.Helper()
	conn, err := pgx.Connect(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

// Exec runs sql on conn, failing t on an error.
func Exec(t testing.TB, conn *pgx.Conn, sql string, args ...any) {
	t.Helper()
	if _, err := conn.Exec(t.Context(), sql, args...); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

// CreateEventsTable creates workflow.workflow_events shaped like a
// Workflow DevKit world-postgres table, as another program would, and
// returns the insert its rows go in by: $1 id, $2 type, $3 correlation id,
// $4 run id.
func CreateEventsTable(t testing.TB, conn *pgx.Conn) (insert string) {
	t.Helper()
	Exec(t, conn, `CREATE SCHEMA workflow`)
	Exec(t, conn, `CREATE TABLE workflow.workflow_events(id varchar PRIMARY KEY, type varchar NOT NULL,
		correlation_id varchar, created_at timestamptz NOT NULL DEFAULT now(), run_id varchar NOT NULL, payload jsonb)`)
	return `INSERT INTO workflow.workflow_events(id, type, correlation_id, run_id) VALUES ($1, $2, $3, $4)`
}
