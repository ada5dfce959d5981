package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oklog/ulid/v2"

	"github.com/stormctl/stormctl/internal/eventlog"
	"github.com/stormctl/stormctl/worlds"
	"github.com/stormctl/stormctl/worlds/postgres"
	"github.com/stormctl/stormctl/worlds/postgres/pgtest"
	"github.com/stormctl/stormctl/worlds/worldtest"
)

// cluster is the package's one embedded cluster.
var cluster pgtest.Shared

func TestMain(m *testing.M) {
	if os.Getenv(crashHelperEnv) != "" {
		os.Exit(m.Run()) // a helper process: TestCrashHelper starts its own cluster
	}
	os.Exit(cluster.Main(m))
}

// openWorld opens a World on the package's cluster (cfg.URL unless set) and
// closes it when t ends, checking that its schema is gone unless cfg.Keep.
func openWorld(t *testing.T, cfg postgres.Config) *postgres.World {
	t.Helper()
	if cfg.URL == "" {
		cfg.URL = cluster.URL(t)
	}
	if cfg.PoolSize == 0 {
		cfg.PoolSize = 10
	}
	w, err := postgres.Open(t.Context(), cfg)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() {
		if err := w.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
		if !cfg.Keep && schemaExists(t, cfg.URL, w.Schema()) {
			t.Errorf("schema %s is still there after Close", w.Schema())
		}
	})
	return w
}

// admin opens a plain pool for looking at (and preparing) the database.
func admin(t *testing.T, url string) *pgxpool.Pool {
	t.Helper()
	p, err := pgxpool.New(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	return p
}

func schemaExists(t *testing.T, url, name string) bool {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var ok bool
	if err := conn.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = $1)`, name).Scan(&ok); err != nil {
		t.Fatal(err)
	}
	return ok
}

func TestConformance(t *testing.T) {
	url := cluster.URL(t)
	src := func(context.Context) (postgres.Config, error) { return postgres.Config{URL: url, PoolSize: 10}, nil }
	worldtest.Exercise(t, postgres.Entry(src), nil)
}

// TestRegister: the registry's postgres entry, fed by EmbeddedSource, opens
// Worlds on one cluster it starts on first use, each in its own schema that
// Close drops; the source's stop removes the cluster.
func TestRegister(t *testing.T) {
	cluster.URL(t)
	src, stop := postgres.EmbeddedSource(nil, postgres.Config{PoolSize: 4})
	t.Cleanup(func() { _ = stop() })
	var r worlds.Registry
	postgres.Register(&r, src)
	e, err := r.Lookup(postgres.Name)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"ulid", "seq", "sequence", "slot"}; !slices.Equal(e.Schemes, want) {
		t.Fatalf("Schemes = %v, want %v", e.Schemes, want)
	}
	var opened []*postgres.World
	for i := range 2 {
		w, err := e.Open(t.Context(), worlds.Options{Latency: worldtest.Latency(t, "fixed:1ms"), Seed: uint64(i)})
		if err != nil {
			t.Fatal(err)
		}
		opened = append(opened, w.(*postgres.World))
		run := worldtest.NewRun(t, w, eventlog.Run{Scheme: eventlog.SchemeSeq})
		if _, err := w.Append(t.Context(), run, []eventlog.Draft{worldtest.Draft(eventlog.StepCompleted, "a")}); err != nil {
			t.Fatal(err)
		}
	}
	cfg, err := src(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if cfg.URL == cluster.URL(t) || cfg.PoolSize != 4 {
		t.Fatalf("source config %+v: want the source's own cluster and pool size 4", cfg)
	}
	if opened[0].Schema() == opened[1].Schema() {
		t.Fatalf("two worlds share schema %s", opened[0].Schema())
	}
	for _, w := range opened {
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		if schemaExists(t, cfg.URL, w.Schema()) {
			t.Fatalf("schema %s survived Close", w.Schema())
		}
	}
	if _, err := opened[0].Append(t.Context(), "wrun_x", []eventlog.Draft{worldtest.Draft(eventlog.StepCompleted, "b")}); err == nil {
		t.Fatal("Append on a closed world succeeded")
	}
	pc, err := pgx.ParseConfig(cfg.URL)
	if err != nil {
		t.Fatal(err)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if listening(int(pc.Port)) {
		t.Fatalf("the source's cluster still listens on port %d after stop", pc.Port)
	}
	if err := stop(); err != nil {
		t.Fatalf("a second stop: %v", err)
	}
}

// TestOwnSchemaOnly runs against the machine's own PostgreSQL service (port
// 5432, database test): the World creates exactly one schema, puts its tables
// there and nowhere else, and Close leaves the database as it found it.
func TestOwnSchemaOnly(t *testing.T) {
	var url string
	var conn *pgx.Conn
	var tried []string
	for _, u := range []string{"postgres://postgres@127.0.0.1:5432/test?sslmode=disable", "postgres://root@127.0.0.1:5432/test?sslmode=disable"} {
		ctx, cancel := context.WithTimeout(t.Context(), 3*time.Second)
		c, err := pgx.Connect(ctx, u)
		cancel()
		if err == nil {
			url, conn = u, c
			break
		}
		tried = append(tried, err.Error())
	}
	if conn == nil {
		fmt.Println("TestOwnSchemaOnly: skipped: no PostgreSQL service at 127.0.0.1:5432/test:", strings.Join(tried, "; "))
		t.Skipf("no PostgreSQL service at 127.0.0.1:5432/test: %s", strings.Join(tried, "; "))
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	objects := func() []string {
		rows, err := conn.Query(t.Context(), `SELECT n.nspname || '.' || coalesce(c.relname, '') FROM pg_namespace n
			LEFT JOIN pg_class c ON c.relnamespace = n.oid ORDER BY 1`)
		if err != nil {
			t.Fatal(err)
		}
		out, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	before := objects()

	w, err := postgres.Open(t.Context(), postgres.Config{URL: url, PoolSize: 4})
	if err != nil {
		t.Fatalf("Open on %s: %v", url, err)
	}
	t.Cleanup(func() { _ = w.Close() })
	run := worldtest.NewRun(t, w, eventlog.Run{Scheme: eventlog.SchemeSeq})
	if _, err := w.Append(t.Context(), run, []eventlog.Draft{worldtest.Draft(eventlog.StepCompleted, "a")}); err != nil {
		t.Fatal(err)
	}
	if _, err := w.CommitTimes(t.Context(), run); w.CommitTimestamps() == errors.Is(err, postgres.ErrNoCommitTimestamps) {
		t.Errorf("CommitTimes = %v with track_commit_timestamp %v", err, w.CommitTimestamps())
	}
	var added []string
	for _, o := range objects() {
		if !slices.Contains(before, o) {
			added = append(added, o)
		}
	}
	for _, o := range added {
		// pg_toast holds the TOAST tables PostgreSQL makes for the world's own
		// tables; they go with them (checked below with everything else).
		if !strings.HasPrefix(o, w.Schema()+".") && !strings.HasPrefix(o, "pg_toast.") {
			t.Errorf("the world created %s outside its schema %s", o, w.Schema())
		}
	}
	if !slices.Contains(added, w.Schema()+".workflow_events") || !slices.Contains(added, w.Schema()+".workflow_runs") {
		t.Errorf("new objects %v lack the world's tables", added)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if after := objects(); !slices.Equal(after, before) {
		t.Fatalf("the database changed: before %d objects, after %d", len(before), len(after))
	}
}

// TestForeignSchemaIsRefused: a schema that exists (someone else's, or
// another live World's) is refused with ErrSchemaTaken and left untouched.
func TestForeignSchemaIsRefused(t *testing.T) {
	url := cluster.URL(t)
	db := admin(t, url)
	foreign := "stormctl_foreign_" + strings.ToLower(ulid.Make().String()[16:])
	for _, stmt := range []string{
		"CREATE SCHEMA " + foreign,
		"CREATE TABLE " + foreign + ".workflow_events (id varchar PRIMARY KEY)",
		"INSERT INTO " + foreign + ".workflow_events VALUES ('precious')",
	} {
		if _, err := db.Exec(t.Context(), stmt); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() { _, _ = db.Exec(context.Background(), "DROP SCHEMA "+foreign+" CASCADE") })
	live := openWorld(t, postgres.Config{})
	liveRun := worldtest.NewRun(t, live, eventlog.Run{Scheme: eventlog.SchemeSeq})

	for _, name := range []string{foreign, strings.TrimPrefix(foreign, postgres.SchemaPrefix), live.Schema()} {
		w, err := postgres.Open(t.Context(), postgres.Config{URL: url, Schema: name})
		if err == nil {
			_ = w.Close()
			t.Fatalf("Open(schema %s) succeeded", name)
		}
		if !errors.Is(err, postgres.ErrSchemaTaken) {
			t.Fatalf("Open(schema %s) = %v, want ErrSchemaTaken", name, err)
		}
	}
	var id string
	if err := db.QueryRow(t.Context(), "SELECT id FROM "+foreign+".workflow_events").Scan(&id); err != nil || id != "precious" {
		t.Fatalf("the foreign schema's row: %q, %v", id, err)
	}
	if _, err := live.Append(t.Context(), liveRun, []eventlog.Draft{worldtest.Draft(eventlog.StepCompleted, "still")}); err != nil {
		t.Fatalf("the live world broke: %v", err)
	}
}

// TestUnreachableIsUnavailable: a server that cannot be used is
// eventlog.ErrUnavailable at its first answer, whatever the reason: the
// error carries that answer (a refused connection, the server's SQLSTATE),
// never a timeout, so Open gave up on what the server said rather than
// after waiting for a connect timeout. An Open still running after the
// watchdog fails the test as hung.
func TestUnreachableIsUnavailable(t *testing.T) {
	tests := []struct {
		name  string
		url   func(t *testing.T) string
		cause func(error) bool
	}{
		{"refused", func(*testing.T) string { return "postgres://postgres@127.0.0.1:1/postgres?sslmode=disable" }, worldtest.Refused},
		{"wrong password", func(t *testing.T) string {
			return fmt.Sprintf("postgres://postgres:wrong@127.0.0.1:%d/postgres?sslmode=disable", cluster.Cluster(t).Port())
		}, sqlState("28P01")}, // invalid_password
		{"no database", func(t *testing.T) string { return strings.Replace(cluster.URL(t), "/postgres?", "/no_such_db?", 1) },
			sqlState("3D000")}, // invalid_catalog_name
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			url := tt.url(t)
			err := worldtest.Unavailable(t, "Open", func(ctx context.Context) error {
				w, err := postgres.Open(ctx, postgres.Config{URL: url})
				if err == nil {
					_ = w.Close()
				}
				return err
			}, tt.cause)
			if strings.Contains(err.Error(), "wrong") {
				t.Fatalf("the error shows the password: %v", err)
			}
		})
	}
}

// sqlState matches an error carrying a server error with the given code.
func sqlState(code string) func(error) bool {
	return func(err error) bool {
		var pe *pgconn.PgError
		return errors.As(err, &pe) && pe.Code == code
	}
}

func TestConfigRejectsBadSchemaNames(t *testing.T) {
	for _, name := range []string{"Workflow", "a-b", "stormctl_", strings.Repeat("x", 60), "x;drop"} {
		_, err := postgres.Open(t.Context(), postgres.Config{URL: "postgres://127.0.0.1:1/x", Schema: name})
		if err == nil || errors.Is(err, eventlog.ErrUnavailable) {
			t.Errorf("Open(schema %q) = %v, want a configuration error before connecting", name, err)
		}
	}
	if _, err := postgres.Open(t.Context(), postgres.Config{}); err == nil || !strings.Contains(err.Error(), "URL") {
		t.Errorf("Open without URL = %v, want an error naming the URL", err)
	}
}

// TestKeep: Keep leaves the schema and its data after Close (the
// conformance suite checks Reset).
func TestKeep(t *testing.T) {
	url := cluster.URL(t)
	w := openWorld(t, postgres.Config{Keep: true})
	db := admin(t, url)
	t.Cleanup(func() { _, _ = db.Exec(context.Background(), "DROP SCHEMA IF EXISTS "+w.Schema()+" CASCADE") })
	run := worldtest.NewRun(t, w, eventlog.Run{Scheme: eventlog.SchemeSequence})
	worldtest.Append(t, w, run, worldtest.Draft(eventlog.StepCompleted, "a"))
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	var n int
	if err := db.QueryRow(t.Context(), "SELECT count(*) FROM "+w.Schema()+".workflow_events").Scan(&n); err != nil || n != 1 {
		t.Fatalf("kept schema holds %d events (%v), want 1", n, err)
	}
	if kept := w.Kept(); !strings.Contains(kept, "schema "+w.Schema()+" in database ") {
		t.Errorf("Kept() = %q, want it to name schema %s and its database", kept, w.Schema())
	}
}

// TestKept: Kept names a schema only where Close leaves one that outlives
// stormctl: with Keep, on a server that is not an embedded cluster (which
// goes at exit with every schema in it).
func TestKept(t *testing.T) {
	tests := []struct {
		name     string
		cfg      postgres.Config
		wantKept bool
	}{
		{"no Keep", postgres.Config{}, false},
		{"Keep on the embedded cluster", postgres.Config{Keep: true, Cluster: cluster.Cluster(t)}, false},
		{"Keep on a given server", postgres.Config{Keep: true}, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w := openWorld(t, tc.cfg)
			if tc.cfg.Keep {
				db := admin(t, cluster.URL(t))
				t.Cleanup(func() { _, _ = db.Exec(context.Background(), "DROP SCHEMA IF EXISTS "+w.Schema()+" CASCADE") })
			}
			if kept := w.Kept(); (kept != "") != tc.wantKept || (tc.wantKept && !strings.Contains(kept, w.Schema())) {
				t.Errorf("Kept() = %q, want a line naming %s: %v", kept, w.Schema(), tc.wantKept)
			}
		})
	}
}

// TestCounters: the counters a benchmark's fenced writer reads are the
// run's committed events and its last fenced position.
func TestCounters(t *testing.T) {
	w := openWorld(t, postgres.Config{})
	ctx := t.Context()
	if err := w.CreateRun(ctx, eventlog.Run{ID: "r", Scheme: eventlog.SchemeSeq, FenceBasis: eventlog.FenceOnLog}); err != nil {
		t.Fatal(err)
	}
	d := func(c string) []eventlog.Draft {
		return []eventlog.Draft{{Type: eventlog.StepCreated, CorrelationID: c}}
	}
	if _, err := w.Append(ctx, "r", d("a")); err != nil {
		t.Fatal(err)
	}
	if _, err := w.AppendFenced(ctx, "r", 1, d("b")); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Append(ctx, "r", d("c")); err != nil {
		t.Fatal(err)
	}
	next, fenced, err := w.Counters(ctx, "r")
	if err != nil || next != 3 || fenced != 2 {
		t.Fatalf("Counters = %d, %d, %v; want 3 events and the last fenced at 2", next, fenced, err)
	}
	if _, _, err := w.Counters(ctx, "nobody"); err == nil {
		t.Fatal("Counters of a run that does not exist succeeded")
	}
}
