// Package pgtest gives tests a throw-away PostgreSQL: the embedded cluster
// stormctl starts by default, skipped with the reason where no PostgreSQL
// binaries are installed.
package pgtest

import (
	"context"
	"errors"
	"log/slog"
	"strconv"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/stormctl/stormctl/internal/eventlog"
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

// LoadEvents creates <schema>.workflow_events shaped like a Workflow DevKit
// world-postgres table, but with no key on id (a slot id repeats across
// runs, and a broken store may hold a position twice), with a seq column
// when any row gives a seq; then it inserts the rows of fixture, each in a
// transaction of its own, in order, so that commit order is line order.
// A fixture line is `run id type [seq]`; '#' starts a comment; an id @N
// stands for eventlog.SlotID(N).
func LoadEvents(t testing.TB, conn *pgx.Conn, schema, fixture string) {
	t.Helper()
	type row struct {
		run, id, typ string
		seq          *int64
	}
	var rows []row
	hasSeq := false
	for i, line := range strings.Split(fixture, "\n") {
		line, _, _ = strings.Cut(line, "#")
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		if len(f) < 3 || len(f) > 4 {
			t.Fatalf("fixture line %d: %q: want run id type [seq]", i+1, line)
		}
		r := row{run: f[0], id: f[1], typ: f[2]}
		if n, ok := strings.CutPrefix(r.id, "@"); ok {
			pos, err := strconv.ParseInt(n, 10, 64)
			if err != nil {
				t.Fatalf("fixture line %d: %q: %v", i+1, line, err)
			}
			r.id = eventlog.SlotID(pos)
		}
		if len(f) == 4 {
			seq, err := strconv.ParseInt(f[3], 10, 64)
			if err != nil {
				t.Fatalf("fixture line %d: %q: %v", i+1, line, err)
			}
			r.seq, hasSeq = &seq, true
		}
		rows = append(rows, r)
	}
	table := pgx.Identifier{schema, "workflow_events"}.Sanitize()
	Exec(t, conn, "CREATE SCHEMA "+pgx.Identifier{schema}.Sanitize())
	seq := ""
	if hasSeq {
		seq = ", seq bigint"
	}
	Exec(t, conn, `CREATE TABLE `+table+`(id varchar NOT NULL, type varchar NOT NULL, correlation_id varchar,
		created_at timestamptz NOT NULL DEFAULT now(), run_id varchar NOT NULL, payload jsonb`+seq+`)`)
	for _, r := range rows {
		if hasSeq {
			Exec(t, conn, `INSERT INTO `+table+`(id, type, run_id, seq) VALUES ($1, $2, $3, $4)`, r.id, r.typ, r.run, r.seq)
		} else {
			Exec(t, conn, `INSERT INTO `+table+`(id, type, run_id) VALUES ($1, $2, $3)`, r.id, r.typ, r.run)
		}
	}
}
