package cli_test

import (
	"bytes"
	neturl "net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/stormctl/stormctl/internal/cli"
	"github.com/stormctl/stormctl/internal/storm/stormdir"
	"github.com/stormctl/stormctl/worlds/postgres/pgtest"
)

// dropLastRun removes the last line of dir's runs.jsonl, as if the storm
// had been stopped before that run finished: --resume runs it again.
func dropLastRun(t *testing.T, dir string) {
	t.Helper()
	path := filepath.Join(dir, stormdir.FileRuns)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	b = bytes.TrimSuffix(b, []byte("\n"))
	writeFile(t, path, b[:bytes.LastIndexByte(b, '\n')+1])
}

// keptSchemas counts the schemas postgres worlds left on conn's server.
func keptSchemas(t *testing.T, conn *pgx.Conn) int {
	t.Helper()
	var n int
	if err := conn.QueryRow(t.Context(), `SELECT count(*) FROM pg_namespace WHERE nspname LIKE 'stormctl\_%'`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestResumeKeepsItsServer: a storm begun with --pg-url is resumed on
// that server, never silently on the embedded cluster. Its storm.json
// holds the URL without the password; without the password the resume
// refuses, naming the flag to give; a URL of another database is refused;
// given again, the resume runs there (its --keep schema is on the server).
// A URL without a password (the password in PGPASSWORD) is used as stored.
func TestResumeKeepsItsServer(t *testing.T) {
	url := pgtest.Cluster(t)
	conn := pgtest.Connect(t, url)
	u, err := neturl.Parse(url)
	if err != nil {
		t.Fatal(err)
	}
	password, _ := u.User.Password()
	open := *u
	open.User = neturl.User(u.User.Username())
	other := *u
	other.Path = "/elsewhere"
	ctx := t.Context()
	stormRun := func(t *testing.T, args ...string) (int, string) {
		t.Helper()
		base := []string{"storm", "--world", "postgres", "--scenario", "control", "--condition", "main", "--runs", "2", "--time-scale", "0.1"}
		code, _, stderr := run(ctx, append(base, args...)...)
		return code, stderr
	}
	begin := func(t *testing.T, pgURL string) string {
		t.Helper()
		dir := filepath.Join(t.TempDir(), "storm")
		if code, stderr := stormRun(t, "--pg-url", pgURL, "--out", dir); code != 0 {
			t.Fatalf("storm: exit %d: %s", code, stderr)
		}
		dropLastRun(t, dir)
		return dir
	}
	resumed := func(t *testing.T, dir string, before int) {
		t.Helper()
		runs, err := openStorm(t, dir).Runs()
		if err != nil || len(runs) != 2 {
			t.Fatalf("after the resume runs.jsonl holds %d runs (%v), want 2", len(runs), err)
		}
		if n := keptSchemas(t, conn); n != before+1 {
			t.Errorf("the server holds %d kept schemas, want %d: the resumed run did not run there", n, before+1)
		}
	}

	t.Run("a password", func(t *testing.T) {
		dir := begin(t, url)
		meta, err := os.ReadFile(filepath.Join(dir, stormdir.FileStorm))
		if err != nil {
			t.Fatal(err)
		}
		redacted := strings.Replace(url, ":"+password+"@", ":xxxxx@", 1)
		if bytes.Contains(meta, []byte(password)) || !bytes.Contains(meta, []byte(`"value": "`+redacted+`"`)) {
			t.Fatalf("storm.json should hold %s, never the password:\n%s", redacted, meta)
		}
		before := keptSchemas(t, conn)

		code, _, stderr := run(ctx, "storm", "--resume", dir)
		want := "stormctl: --resume " + dir + ": the storm ran on --pg-url " + redacted + ", which needs its password: give --pg-url again\n"
		if code != cli.ExitUsage || stderr != want {
			t.Fatalf("resume without --pg-url: exit %d, stderr\n%s\nwant exit 2 and\n%s", code, stderr, want)
		}
		code, _, stderr = run(ctx, "storm", "--resume", dir, "--pg-url", other.String())
		if code != cli.ExitUsage || !strings.Contains(stderr, "--pg-url "+strings.Replace(other.String(), password, "xxxxx", 1)+" differs from the storm's "+redacted) {
			t.Fatalf("resume on another database: exit %d: %s", code, stderr)
		}
		if code, _, stderr := run(ctx, "storm", "--resume", dir, "--pg-url", url, "--keep"); code != 0 {
			t.Fatalf("resume with --pg-url: exit %d: %s", code, stderr)
		}
		resumed(t, dir, before)
	})

	t.Run("no password", func(t *testing.T) {
		t.Setenv("PGPASSWORD", password)
		dir := begin(t, open.String())
		before := keptSchemas(t, conn)
		code, _, stderr := run(ctx, "storm", "--resume", dir, "--keep")
		if code != 0 {
			t.Fatalf("resume: exit %d: %s", code, stderr)
		}
		resumed(t, dir, before)
		m, err := stormdir.ReadMeta(dir)
		if err != nil {
			t.Fatal(err)
		}
		if i := slices.IndexFunc(m.Endpoints, func(e stormdir.Endpoint) bool { return e.Flag == "pg-url" }); i < 0 || m.Endpoints[i].Value != open.String() || m.Endpoints[i].Secret {
			t.Errorf("the resumed storm.json's endpoints %+v: want pg-url %s, no secret", m.Endpoints, open.String())
		}
	})
}
