package pkgworld_test

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/stormctl/stormctl/internal/base/nodetest"
	"github.com/stormctl/stormctl/internal/eventlog"
	"github.com/stormctl/stormctl/worlds"
	"github.com/stormctl/stormctl/worlds/devkitworld"
	"github.com/stormctl/stormctl/worlds/pkgworld"
	"github.com/stormctl/stormctl/worlds/worldtest"
)

func TestParse(t *testing.T) {
	for _, tt := range []struct {
		in      string
		want    pkgworld.Ref
		wantErr bool
	}{
		{in: "package:@workflow-worlds/starter", want: pkgworld.Ref{Name: "@workflow-worlds/starter"}},
		{in: "package:@workflow-worlds/redis@0.2.2", want: pkgworld.Ref{Name: "@workflow-worlds/redis", Version: "0.2.2"}},
		{in: "package:left-pad@latest", want: pkgworld.Ref{Name: "left-pad", Version: "latest"}},
		{in: "package:/abs/dir", want: pkgworld.Ref{Path: "/abs/dir"}},
		{in: "package:", wantErr: true},
		{in: "package:@scope/x@", wantErr: true},
		{in: "package:Not A Name", wantErr: true},
		{in: "local", wantErr: true},
	} {
		got, err := pkgworld.Parse(tt.in)
		if (err != nil) != tt.wantErr || (err == nil && got != tt.want) {
			t.Errorf("Parse(%q) = %+v, %v; want %+v, error %v", tt.in, got, err, tt.want, tt.wantErr)
		}
	}
}

func TestParseEnv(t *testing.T) {
	if err := pkgworld.ParseEnv([]string{"A=1", "B="}); err != nil {
		t.Error(err)
	}
	for _, bad := range []string{"A", "=1", "A B=1"} {
		if err := pkgworld.ParseEnv([]string{bad}); err == nil {
			t.Errorf("ParseEnv(%q) = nil, want an error", bad)
		}
	}
}

// open installs ref (first use: npm) and returns its world's entry.
func open(t *testing.T, ref string, env ...string) (*pkgworld.World, worlds.Entry) {
	t.Helper()
	nodetest.Need(t, "node", "npm")
	r, err := pkgworld.Parse(ref)
	if err != nil {
		t.Fatal(err)
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		t.Fatal(err)
	}
	in, err := pkgworld.Install(t.Context(), cache, r, nil)
	if errors.Is(err, worlds.ErrPrerequisite) {
		nodetest.Skip(t, "%v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	w, err := pkgworld.Open(t.Context(), in, pkgworld.Options{Env: env, CacheDir: cache, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = w.Stop() })
	spec, err := w.Spec(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	return w, w.Entry(ref, spec)
}

// TestStarter runs the starter's storage through the sidecar: the
// contract it claims, and a run's events written and read back in order.
func TestStarter(t *testing.T) {
	w, e := open(t, "package:@workflow-worlds/starter@0.2.1")
	spec, err := w.Spec(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if spec.World != "4.1.0-beta.2" || spec.SpecVersion == nil || *spec.SpecVersion != 2 {
		t.Errorf("spec = %+v, want @workflow/world 4.1.0-beta.2, specVersion 2", spec)
	}
	ww, err := e.Open(t.Context(), worlds.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer ww.Close()
	run := worldtest.NewRun(t, ww, eventlog.Run{Scheme: eventlog.SchemeULID})
	worldtest.Append(t, ww, run, worldtest.Draft(eventlog.RunCreated, ""))
	evs := worldtest.Append(t, ww, run, worldtest.Draft(eventlog.StepCreated, "step_1"))
	got := worldtest.ListAll(t, ww, run)
	if len(evs) != 1 || len(got) < 1 || got[len(got)-1].ID != evs[0].ID {
		t.Fatalf("wrote %v, read %v", evs, got)
	}
}

// TestNotFound: a package the registry does not have is ErrNotFound.
func TestNotFound(t *testing.T) {
	nodetest.Need(t, "npm")
	r, _ := pkgworld.Parse("package:@workflow-worlds/no-such-world-stormctl@0.0.1")
	_, err := pkgworld.Install(t.Context(), t.TempDir(), r, nil)
	if !errors.Is(err, pkgworld.ErrNotFound) {
		t.Fatalf("Install = %v, want ErrNotFound", err)
	}
}

// FuzzParse: any world name parses or is refused, never panics, and a
// parsed npm ref prints back as it was written after the prefix.
func FuzzParse(f *testing.F) {
	for _, s := range []string{"package:@workflow-worlds/redis@0.2.2", "package:left-pad", "package:./x", "package:", "package:@@", "package:a@", "local"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r, err := pkgworld.Parse(s)
		if err != nil || r.Path != "" {
			return
		}
		if got := pkgworld.Prefix + r.String(); got != s {
			t.Errorf("Parse(%q) = %+v, which prints as %q", s, r, got)
		}
	})
}

// TestPostgresServer: world-postgres's server is the one --world-env
// names in the variables the package reads (WORKFLOW_POSTGRES_URL first),
// else --pg-url's; two different ones, or one that is not a PostgreSQL
// URL, are refused as the user's input.
func TestPostgresServer(t *testing.T) {
	const a, b = "postgres://u@db1:5432/app", "postgres://u:secret@db2:5432/app"
	for _, tt := range []struct {
		name  string
		env   []string
		pgURL string
		want  string
		err   bool
	}{
		{name: "none: the embedded cluster"},
		{name: "--pg-url", pgURL: a, want: a},
		{name: "WORKFLOW_POSTGRES_URL", env: []string{"WORKFLOW_POSTGRES_URL=" + a}, want: a},
		{name: "DATABASE_URL", env: []string{"DATABASE_URL=" + b}, want: b},
		{name: "WORKFLOW_POSTGRES_URL before DATABASE_URL", env: []string{"DATABASE_URL=" + b, "WORKFLOW_POSTGRES_URL=" + a}, want: a},
		{name: "the same server twice", env: []string{"WORKFLOW_POSTGRES_URL=" + a}, pgURL: a, want: a},
		{name: "two servers", env: []string{"WORKFLOW_POSTGRES_URL=" + a}, pgURL: b, err: true},
		{name: "not PostgreSQL", env: []string{"DATABASE_URL=mysql://db/app"}, err: true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := pkgworld.PostgresServer(tt.env, tt.pgURL)
			switch {
			case tt.err:
				if !errors.Is(err, pkgworld.ErrServer) || strings.Contains(err.Error(), "secret") {
					t.Fatalf("PostgresServer = %q, %v; want ErrServer, no password shown", got, err)
				}
			case err != nil || got != tt.want:
				t.Fatalf("PostgresServer = %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}

// localPostgres is the machine's PostgreSQL server the test may use
// (trust auth, database test), skipping the test, saying why, when it
// cannot be reached.
const localPostgres = "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"

// TestPostgresOnServer: @workflow/world-postgres named with --world-env
// WORKFLOW_POSTGRES_URL runs on that server, not on an embedded cluster:
// its worlds' databases are created there (a run written and read back
// through the package), its commit clock is declared unreadable when the
// server's track_commit_timestamp is off, and Stop drops every database it
// created.
func TestPostgresOnServer(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	conn, err := pgx.Connect(ctx, localPostgres)
	cancel()
	if err != nil {
		t.Skipf("skipping: no PostgreSQL server at %s: %v", localPostgres, err)
	}
	t.Cleanup(func() { conn.Close(context.WithoutCancel(t.Context())) }) // after the cleanup below
	var clock string
	if err := conn.QueryRow(t.Context(), "SHOW track_commit_timestamp").Scan(&clock); err != nil {
		t.Fatal(err)
	}
	w, e := open(t, "package:@workflow/world-postgres@4.3.7", "WORKFLOW_POSTGRES_URL="+localPostgres)
	if got := w.Server(); got != "127.0.0.1:5432/test" {
		t.Errorf("Server() = %q, want 127.0.0.1:5432/test", got)
	}
	ww, err := e.Open(t.Context(), worlds.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer ww.Close()
	if _, has := ww.(worlds.CommitTimes); has != (clock == "on") || (clock != "on") != strings.Contains(e.Limits.CommitClock, "track_commit_timestamp off") {
		t.Errorf("track_commit_timestamp %s: the world reads commit times: %v; its limit: %q", clock, has, e.Limits.CommitClock)
	}
	// The runtime's store names the host's databases on the server.
	st, err := ww.(interface {
		RuntimeStore(context.Context) (devkitworld.Store, error)
	}).RuntimeStore(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	name := st.URL[strings.LastIndex(st.URL, "/")+1:]
	prefix, _, ok := strings.Cut(name, "runtime_")
	if !ok || !strings.HasPrefix(prefix, "stormctl_devkit_") {
		t.Fatalf("the runtime's database %q is not one of the host's on the server", st.URL)
	}
	databases := func() []string {
		rows, err := conn.Query(context.WithoutCancel(t.Context()), "SELECT datname FROM pg_database WHERE starts_with(datname, $1) ORDER BY 1", prefix)
		if err != nil {
			t.Fatal(err)
		}
		names, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			t.Fatal(err)
		}
		return names
	}
	t.Cleanup(func() { // whatever the test left: dropped
		for _, n := range databases() {
			_, _ = conn.Exec(context.WithoutCancel(t.Context()), "DROP DATABASE IF EXISTS "+pgx.Identifier{n}.Sanitize()+" WITH (FORCE)")
		}
	})
	if got := databases(); len(got) != 3 { // the template, the world's, the runtime's
		t.Errorf("databases on the server: %v, want the template, the world's and the runtime's", got)
	}
	run := worldtest.NewRun(t, ww, eventlog.Run{Scheme: eventlog.SchemeULID})
	worldtest.Append(t, ww, run, worldtest.Draft(eventlog.RunCreated, ""))
	evs := worldtest.Append(t, ww, run, worldtest.Draft(eventlog.StepCreated, "step_1"))
	if got := worldtest.ListAll(t, ww, run); len(evs) != 1 || len(got) < 1 || got[len(got)-1].ID != evs[0].ID {
		t.Fatalf("wrote %v, read %v", evs, got)
	}
	ww.Close()
	if err := w.Stop(); err != nil {
		t.Fatal(err)
	}
	if got := databases(); len(got) != 0 {
		t.Errorf("after Stop the server still holds %v", got)
	}
}
