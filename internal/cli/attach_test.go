package cli_test

import (
	"encoding/json"
	neturl "net/url"
	"strings"
	"testing"
	"time"

	"github.com/stormctl/stormctl/internal/cli"
	"github.com/stormctl/stormctl/worlds/postgres/pgtest"
)

// withURL is url changed by edit.
func withURL(t *testing.T, url string, edit func(*neturl.URL)) string {
	t.Helper()
	u, err := neturl.Parse(url)
	if err != nil {
		t.Fatal(err)
	}
	edit(u)
	return u.String()
}

// TestForensicsAttach runs `stormctl forensics --pg-url` as a user would on
// an events table another program wrote (a step_created committed after a
// hook_received minted later overtook it), in JSON and as a table, and
// checks that the database is as it was; then the bad inputs, each one line
// and its exit code.
func TestForensicsAttach(t *testing.T) {
	url := pgtest.Cluster(t)
	conn, other := pgtest.Connect(t, url), pgtest.Connect(t, url)
	insert := pgtest.CreateEventsTable(t, conn)
	pgtest.Exec(t, conn, `BEGIN`)
	pgtest.Exec(t, conn, insert, "wevt_01J00000000000000000000001", "step_created", "s1", "wrun_r1")
	pgtest.Exec(t, other, insert, "wevt_01J00000000000000000000002", "hook_received", "h1", "wrun_r1")
	time.Sleep(10 * time.Millisecond)
	pgtest.Exec(t, conn, `COMMIT`)
	pgtest.Exec(t, other, insert, "wevt_01J00000000000000000000003", "run_created", "", "wrun_r2")
	// Not a Workflow DevKit table: a schema of someone else's.
	pgtest.Exec(t, conn, `CREATE SCHEMA theirs`)
	pgtest.Exec(t, conn, `CREATE TABLE theirs.workflow_events(x int)`)

	state := func() string {
		var s string
		err := conn.QueryRow(t.Context(), `SELECT (SELECT count(*) FROM workflow.workflow_events)::text || '/' ||
			(SELECT count(*) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname IN ('workflow', 'theirs'))::text || '/' ||
			(SELECT count(*) FROM pg_namespace)::text`).Scan(&s)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	before := state()

	code, stdout, stderr := run(t.Context(), "forensics", "--pg-url", url, "--format", "json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var rep struct {
		Totals struct {
			Runs          int `json:"runs"`
			Events        int `json:"events"`
			InvertedPairs int `json:"inverted_pairs"`
		} `json:"totals"`
		Pairs []struct {
			Overtaking string `json:"overtaking"`
			Overtaken  string `json:"overtaken"`
			Count      int    `json:"count"`
		} `json:"pairs"`
		Windows map[string]struct {
			N int `json:"n"`
		} `json:"windows"`
		Runs []struct {
			RunID         string `json:"run_id"`
			Events        int    `json:"events"`
			Displaced     int    `json:"displaced"`
			InvertedPairs int    `json:"inverted_pairs"`
		} `json:"runs"`
	}
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
		t.Fatalf("--format json: %v\n%s", err, stdout)
	}
	if rep.Totals.Runs != 2 || rep.Totals.Events != 3 || rep.Totals.InvertedPairs != 1 || len(rep.Runs) != 2 {
		t.Fatalf("totals %+v, %d runs: want 2 runs, 3 events, 1 inverted pair\n%s", rep.Totals, len(rep.Runs), stdout)
	}
	if r := rep.Runs[0]; r.RunID != "wrun_r1" || r.Events != 2 || r.Displaced != 2 || r.InvertedPairs != 1 {
		t.Errorf("first run %+v: want wrun_r1 with 2 events, 2 displaced, 1 inverted pair", r)
	}
	if len(rep.Pairs) != 1 || rep.Pairs[0].Overtaking != "hook_received" || rep.Pairs[0].Overtaken != "step_created" {
		t.Errorf("pairs %+v: want hook_received over step_created", rep.Pairs)
	}
	if rep.Windows["step_created"].N != 1 || rep.Windows["hook_received"].N != 1 {
		t.Errorf("windows %+v: want one window per type", rep.Windows)
	}

	code, stdout, stderr = run(t.Context(), "forensics", "--pg-url", url, "--run", "wrun_r1")
	if code != 0 || !strings.Contains(stdout, "wrun_r1") || strings.Contains(stdout, "wrun_r2") ||
		!strings.Contains(stdout, "hook_received") {
		t.Errorf("--run wrun_r1: exit %d, want a table of wrun_r1 alone with its pair:\n%s%s", code, stdout, stderr)
	}
	if after := state(); after != before {
		t.Errorf("rows/relations/schemas %s before, %s after: the forensics wrote", before, after)
	}

	for _, tt := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"unreachable", []string{"--pg-url", "postgres://postgres@127.0.0.1:1/postgres?connect_timeout=2"}, cli.ExitInfra, "connect"},
		{"no such database", []string{"--pg-url", withURL(t, url, func(u *neturl.URL) { u.Path = "/nowhere" })}, cli.ExitInfra, `database "nowhere" does not exist`},
		{"wrong password", []string{"--pg-url", withURL(t, url, func(u *neturl.URL) { u.User = neturl.UserPassword(u.User.Username(), "wrong") })}, cli.ExitInfra, "password authentication failed"},
		{"missing table", []string{"--pg-url", url, "--schema", "nowhere"}, cli.ExitUsage, "--schema"},
		{"someone else's table", []string{"--pg-url", url, "--schema", "theirs"}, cli.ExitUsage, "not a Workflow DevKit events table"},
		{"bad --since", []string{"--pg-url", url, "--since", "yesterday"}, cli.ExitUsage, "--since"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			code, _, stderr := run(t.Context(), append([]string{"forensics"}, tt.args...)...)
			lines := strings.Split(strings.TrimSpace(stderr), "\n")
			if code != tt.code || !strings.Contains(stderr, tt.want) || len(lines) != 1 {
				t.Errorf("exit %d, want %d; stderr (want one line with %q):\n%s", code, tt.code, tt.want, stderr)
			}
		})
	}
	if after := state(); after != before {
		t.Errorf("rows/relations/schemas %s before, %s after the bad inputs", before, after)
	}
}
