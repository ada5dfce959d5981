package pgtest

import (
	"bufio"
	"encoding/hex"
	"encoding/json"
	"os"
	"testing"

	"github.com/jackc/pgx/v5"
)

// worldPostgresDDL creates workflow.workflow_runs and
// workflow.workflow_events with the columns @workflow/world-postgres 4.x
// gives them (its drizzle schema; the run's status a varchar here, an
// enum there), and the unique index on entity-creating events.
var worldPostgresDDL = []string{
	`CREATE SCHEMA workflow`,
	`CREATE TABLE workflow.workflow_runs (id varchar PRIMARY KEY, output jsonb, output_cbor bytea,
		deployment_id varchar NOT NULL, status varchar NOT NULL, name varchar NOT NULL, spec_version integer,
		execution_context jsonb, execution_context_cbor bytea, input jsonb, input_cbor bytea, error text, error_cbor bytea,
		created_at timestamp NOT NULL DEFAULT now(), updated_at timestamp NOT NULL DEFAULT now(),
		completed_at timestamp, started_at timestamp, expired_at timestamp)`,
	`CREATE TABLE workflow.workflow_events (id varchar PRIMARY KEY, type varchar NOT NULL, correlation_id varchar,
		created_at timestamp NOT NULL DEFAULT now(), run_id varchar NOT NULL, payload jsonb, payload_cbor bytea, spec_version integer)`,
	`CREATE UNIQUE INDEX workflow_events_entity_creation_unique ON workflow.workflow_events (run_id, correlation_id, type)
		WHERE type IN ('step_created', 'hook_created', 'wait_created')`,
}

// worldPostgresRow is a line of a world-postgres fixture: a run (Name
// set) or an event (ID set), its payload_cbor in hex.
type worldPostgresRow struct {
	Run        string  `json:"run"`
	Name       string  `json:"name"`
	Deployment string  `json:"deployment"`
	Status     string  `json:"status"`
	ID         string  `json:"id"`
	Type       string  `json:"type"`
	Corr       *string `json:"corr"`
	CreatedAt  string  `json:"created_at"`
	CBOR       *string `json:"cbor"`
}

// LoadWorldPostgres creates the tables of @workflow/world-postgres in the
// database conn is on and inserts the rows of the JSON-lines fixture at
// path, in the file's order, each in a transaction of its own. A line is a
// run ({"run","name","deployment","status"}) or an event ({"run","id",
// "type","corr","created_at","cbor"}, cbor the payload_cbor in hex or
// null), as `psql -c "select json_build_object(...)"` dumps them.
func LoadWorldPostgres(t testing.TB, conn *pgx.Conn, path string) {
	t.Helper()
	for _, sql := range worldPostgresDDL {
		Exec(t, conn, sql)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for n := 1; sc.Scan(); n++ {
		var r worldPostgresRow
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("%s:%d: %v", path, n, err)
		}
		if r.ID == "" {
			Exec(t, conn, `INSERT INTO workflow.workflow_runs (id, deployment_id, status, name) VALUES ($1, $2, $3, $4)`,
				r.Run, r.Deployment, r.Status, r.Name)
			continue
		}
		var data []byte
		if r.CBOR != nil {
			if data, err = hex.DecodeString(*r.CBOR); err != nil {
				t.Fatalf("%s:%d: cbor: %v", path, n, err)
			}
		}
		Exec(t, conn, `INSERT INTO workflow.workflow_events (id, type, correlation_id, created_at, run_id, payload_cbor)
			VALUES ($1, $2, $3, $4::timestamp, $5, $6)`, r.ID, r.Type, r.Corr, r.CreatedAt, r.Run, data)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
}
