package postgres

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"golang.org/x/sync/errgroup"

	"github.com/stormctl/stormctl/internal/eventlog"
	"github.com/stormctl/stormctl/worlds"
)

// TestKeyColumnsHoldDraftKeys: the key columns hold exactly the keys
// eventlog.Draft.Keys hands out, for every type and field combination.
func TestKeyColumnsHoldDraftKeys(t *testing.T) {
	for _, typ := range eventlog.Types() {
		for _, d := range []eventlog.Draft{
			{Type: typ},
			{Type: typ, CorrelationID: "c1"},
			{Type: typ, CorrelationID: "c1", Dedup: "p1"},
			{Type: typ, CorrelationID: "c1", Token: "tok"},
			{Type: typ, CorrelationID: "a/b", Token: "t/1", Dedup: "x/y"},
		} {
			k, err := keysOf(d)
			if err != nil {
				t.Fatalf("keysOf(%+v): %v", d, err)
			}
			if got, want := k.keys(), d.Keys(); !slices.Equal(got, want) {
				t.Errorf("keysOf(%+v) holds %q, Draft.Keys says %q", d, got, want)
			}
		}
	}
}

func TestCheckDraftsRejectsBadBatches(t *testing.T) {
	tests := []struct {
		name     string
		d        []eventlog.Draft
		conflict bool
	}{
		{"unknown type", []eventlog.Draft{{Type: "step_exploded"}}, false},
		{"bad payload", []eventlog.Draft{{Type: eventlog.StepCreated, Payload: []byte("{")}}, false},
		{"key twice", []eventlog.Draft{{Type: eventlog.StepCreated, CorrelationID: "a"}, {Type: eventlog.StepCreated, CorrelationID: "a"}}, true},
		{"token twice", []eventlog.Draft{
			{Type: eventlog.HookCreated, CorrelationID: "a", Token: "t"},
			{Type: eventlog.HookCreated, CorrelationID: "b", Token: "t"},
		}, true},
	}
	for _, tt := range tests {
		_, err := checkDrafts("r", eventlog.FenceOnLog, tt.d)
		if err == nil || errors.Is(err, eventlog.ErrConflict) != tt.conflict {
			t.Errorf("%s: checkDrafts = %v, want an error (conflict: %v)", tt.name, err, tt.conflict)
		}
	}
}

func TestUnavailableClassifiesInfrastructure(t *testing.T) {
	tests := []struct {
		err  error
		want bool
	}{
		{&pgconn.ConnectError{}, true},
		{&pgconn.PgError{Code: "28P01"}, true}, // invalid password
		{&pgconn.PgError{Code: "53300"}, true}, // too many connections
		{&pgconn.PgError{Code: "57P01"}, true}, // admin shutdown
		{&pgconn.PgError{Code: "08006"}, true}, // connection failure
		{&pgconn.PgError{Code: "3D000"}, true}, // no such database
		{fmt.Errorf("read: %w", io.ErrUnexpectedEOF), true},
		{&net.OpError{Op: "dial", Err: syscall.ECONNREFUSED}, true},
		{pgconn.ErrConnClosed, true},
		{&pgconn.PgError{Code: codeUniqueViolation}, false},
		{&pgconn.PgError{Code: "42P01"}, false}, // undefined table
		{&pgconn.PgError{Code: "57014"}, false}, // query cancelled
		{errors.New("boom"), false},
	}
	for _, tt := range tests {
		if got := unavailable(tt.err); got != tt.want {
			t.Errorf("unavailable(%T %v) = %v, want %v", tt.err, tt.err, got, tt.want)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := storeErr(ctx, "op", io.EOF); !errors.Is(err, context.Canceled) || errors.Is(err, eventlog.ErrUnavailable) {
		t.Errorf("storeErr with a cancelled context = %v, want context.Canceled", err)
	}
}

func TestSchemaName(t *testing.T) {
	tests := []struct {
		in, want string
		ok       bool
	}{
		{"storm1", "stormctl_storm1", true},
		{"stormctl_x", "stormctl_x", true},
		{"", "", true},
		{"Upper", "", false},
		{"public", "stormctl_public", true},
		{"a b", "", false},
		{strings.Repeat("a", 55), "", false},
	}
	for _, tt := range tests {
		got, err := schemaName(tt.in)
		switch {
		case (err == nil) != tt.ok:
			t.Errorf("schemaName(%q) error = %v, want ok %v", tt.in, err, tt.ok)
		case tt.in == "" && err == nil && (!strings.HasPrefix(got, SchemaPrefix) || len(got) <= len(SchemaPrefix)):
			t.Errorf("schemaName(\"\") = %q, want %s and a random suffix", got, SchemaPrefix)
		case tt.in != "" && err == nil && got != tt.want:
			t.Errorf("schemaName(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// TestFindBinaries: PATH first, then the known directories newest first,
// and an error that says how to install them when there are none.
func TestFindBinaries(t *testing.T) {
	root := t.TempDir()
	mk := func(dir string, names ...string) string {
		d := filepath.Join(root, dir)
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		for _, n := range names {
			if err := os.WriteFile(filepath.Join(d, n), []byte("#!/bin/sh\n"), 0o755); err != nil {
				t.Fatal(err)
			}
		}
		return d
	}
	onPath := mk("path", "initdb", "pg_ctl")
	half := mk("half", "initdb") // no pg_ctl: skipped
	mk("lib/postgresql/9.6/bin", "initdb", "pg_ctl")
	mk("lib/postgresql/16/bin", "initdb", "pg_ctl")
	mk("lib/postgresql/15/bin", "initdb", "pg_ctl")
	mk("opt/postgresql@14/bin", "initdb", "pg_ctl")
	globs := []string{filepath.Join(root, "lib/postgresql/*/bin"), filepath.Join(root, "opt/postgresql*/bin")}

	tests := []struct {
		name, path string
		globs      []string
		want       string
	}{
		{"path wins", half + string(os.PathListSeparator) + onPath, globs, onPath},
		{"newest version", half, globs, filepath.Join(root, "lib/postgresql/16/bin")},
		{"later pattern", "", globs[1:], filepath.Join(root, "opt/postgresql@14/bin")},
	}
	for _, tt := range tests {
		b, err := findBinaries(tt.path, tt.globs)
		if err != nil || filepath.Dir(b.initdb) != tt.want || filepath.Dir(b.pgctl) != tt.want {
			t.Errorf("%s: findBinaries = %+v, %v; want %s", tt.name, b, err, tt.want)
		}
	}
	_, err := findBinaries(half, []string{filepath.Join(root, "none/*/bin")})
	if !errors.Is(err, ErrNoPostgres) {
		t.Fatalf("findBinaries with none = %v, want ErrNoPostgres", err)
	}
	for _, hint := range []string{"apt-get install postgresql", "brew install postgresql", "--pg-url"} {
		if !strings.Contains(err.Error(), hint) {
			t.Errorf("the error %q does not say %q", err, hint)
		}
	}
}

// TestThroughProxyKeepsTLSFallbacks: pointing a parsed config at the
// nemesis proxy keeps every TLS attempt the URL asked for on the proxied
// server (sslmode=prefer's plaintext fallback above all: without it a
// server without TLS refuses the storm), and drops attempts on other
// servers, which would go past the proxy.
func TestThroughProxyKeepsTLSFallbacks(t *testing.T) {
	type attempt struct {
		host string
		port uint16
		tls  bool
	}
	const ph, pp = "127.0.0.1", 40001
	tests := []struct {
		url  string
		want []attempt
	}{
		{"postgres://u@127.0.0.1:5432/db", []attempt{{ph, pp, true}, {ph, pp, false}}},
		{"postgres://u@127.0.0.1:5432/db?sslmode=prefer", []attempt{{ph, pp, true}, {ph, pp, false}}},
		{"postgres://u@127.0.0.1:5432/db?sslmode=disable", []attempt{{ph, pp, false}}},
		{"postgres://u@127.0.0.1:5432/db?sslmode=allow", []attempt{{ph, pp, false}, {ph, pp, true}}},
		{"postgres://u@127.0.0.1:5432/db?sslmode=require", []attempt{{ph, pp, true}}},
		{"host=localhost port=5432 user=u dbname=db", []attempt{{ph, pp, true}, {ph, pp, false}}},
		{"postgres://u@127.0.0.1:5432,10.0.0.9:5433/db", []attempt{{ph, pp, true}, {ph, pp, false}}},
	}
	for _, tt := range tests {
		t.Run(tt.url, func(t *testing.T) {
			cc, err := pgx.ParseConfig(tt.url)
			if err != nil {
				t.Fatal(err)
			}
			throughProxy(cc, ph, pp)
			got := []attempt{{cc.Host, cc.Port, cc.TLSConfig != nil}}
			for _, fb := range cc.Fallbacks {
				got = append(got, attempt{fb.Host, fb.Port, fb.TLSConfig != nil})
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("attempts after throughProxy = %+v, want %+v", got, tt.want)
			}
		})
	}
}

// TestWithOptions: a cell's options reach the World's config; its pool
// size only when the storm gives one.
func TestWithOptions(t *testing.T) {
	for _, tc := range []struct{ source, given, want int32 }{{4, 0, 4}, {4, 9, 9}, {0, 0, 0}} {
		cfg := Config{PoolSize: tc.source}
		withOptions(&cfg, worlds.Options{Seed: 7, Nemesis: true, PoolSize: tc.given})
		if cfg.PoolSize != tc.want || cfg.Seed != 7 || !cfg.Nemesis {
			t.Errorf("source pool %d, given %d: config %+v, want pool %d, seed 7, nemesis", tc.source, tc.given, cfg, tc.want)
		}
	}
}

// TestEnsureUserConcurrently: processes that need the cluster's user at
// the same moment (the shards of a storm started together as root) all get
// the uid the user keeps. Overlapping useradd runs used to leave one uid
// for a moment and another for good. Needs root; it creates and removes a
// user of its own.
func TestEnsureUserConcurrently(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: it creates a system user")
	}
	if _, err := exec.LookPath("useradd"); err != nil {
		t.Skip("no useradd on this machine")
	}
	name := fmt.Sprintf("stormctl-t%d", os.Getpid())
	t.Cleanup(func() {
		exec.Command("userdel", name).Run()  //nolint:errcheck // best effort
		exec.Command("groupdel", name).Run() //nolint:errcheck // best effort
	})
	lockDir := t.TempDir()
	const workers = 4
	uids := make([]uint32, workers)
	var g errgroup.Group
	for i := range workers {
		g.Go(func() error {
			cred, err := ensureUser(t.Context(), slog.New(slog.DiscardHandler), name, lockDir)
			if err != nil {
				return err
			}
			uids[i] = cred.Uid
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		t.Fatal(err)
	}
	u, err := user.Lookup(name)
	if err != nil {
		t.Fatalf("the user is gone after ensureUser: %v", err)
	}
	for i, uid := range uids {
		if strconv.FormatUint(uint64(uid), 10) != u.Uid {
			t.Errorf("worker %d got uid %d; the user has uid %s", i, uid, u.Uid)
		}
	}
}
