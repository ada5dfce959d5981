package postgres

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/stormctl/stormctl/internal/base/flagspec"
	"github.com/stormctl/stormctl/internal/base/redact"
	"github.com/stormctl/stormctl/internal/eventlog/pgconnect"
	"github.com/stormctl/stormctl/internal/nemesis"
	"github.com/stormctl/stormctl/worlds"
)

// URLHelp is the help of --pg-url wherever stormctl opens the postgres
// world's store (storm, fidelity, bench).
const URLHelp = "PostgreSQL server for the postgres world, and for devkit-postgres's databases (default: a throw-away embedded cluster)"

// Connections is what a storm's postgres cells share of the embedded
// cluster's 220 connections (Entry.Connections): about 180, the rest left
// for the nemesis, forensics and a person looking in.
const Connections = 180

// URLFlag is --pg-url: a PostgreSQL server for the postgres world instead
// of an embedded cluster.
var URLFlag = worlds.Endpoint{
	String: flagspec.String{Name: "pg-url", Help: URLHelp,
		Validate: func(v string) error { return ValidURL("--pg-url", v) }},
	Keeps:   true,
	Server:  server,
	Store:   store,
	Nemesis: checkNemesis,
	// Used whenever a postgres cell runs: no Idle.
}

// Package is the postgres world as stormctl builds it in: on --pg-url's
// server, or on an embedded cluster started by the first Open.
var Package = worlds.Package{Register: register, Sweep: SweepLeftovers}

// register adds the postgres world set up from s: each World in a schema of
// its own on --pg-url's server (warning once when that server cannot give
// commit times), or on one embedded cluster every World shares.
func register(r *worlds.Registry, s worlds.Setup, logger *slog.Logger) func() error {
	url := s.Endpoints[URLFlag.Name]
	base := Config{Keep: s.Keep}
	if url == "" {
		src, stop := EmbeddedSource(logger, base)
		Register(r, src)
		return stop
	}
	base.URL, base.Flag = url, "--"+URLFlag.Name
	var warn sync.Once
	Register(r, func(ctx context.Context) (Config, error) {
		warn.Do(func() { warnCommitTimestamps(ctx, base, logger) })
		return base, nil
	})
	return func() error { return nil }
}

// warnCommitTimestamps says plainly when a server given with --pg-url cannot
// give commit times, and how to fix that; the storm runs on regardless.
func warnCommitTimestamps(ctx context.Context, cfg Config, logger *slog.Logger) {
	conn, err := pgconnect.Connect(ctx, cfg.URL)
	if err != nil {
		return // Open reports the connection error itself
	}
	defer conn.Close(context.WithoutCancel(ctx))
	var on string
	if conn.QueryRow(ctx, "SHOW track_commit_timestamp").Scan(&on) == nil && on != "on" {
		logger.Warn("track_commit_timestamp is off on --pg-url, so commit-order forensics use the commit times the writers observed, not the store's; to get the store's, run ALTER SYSTEM SET track_commit_timestamp = on and restart the server")
	}
}

// ValidURL checks a PostgreSQL connection string ("" is none) given with
// flag: a postgres:// or postgresql:// URL, or keyword=value settings, as
// pgx reads them. The message names the flag and shows no secret.
func ValidURL(flag, s string) error {
	if s == "" {
		return nil
	}
	// A "://" after an "=" is inside keyword=value settings (a password
	// may hold one): pgx reads those, and the scheme message would print
	// them.
	if scheme, _, ok := strings.Cut(s, "://"); ok && !strings.Contains(scheme, "=") && scheme != "postgres" && scheme != "postgresql" {
		return fmt.Errorf("%s: scheme %q: want postgres://user:password@host:port/database or postgresql://...", flag, scheme)
	}
	if _, err := pgx.ParseConfig(s); err != nil {
		return fmt.Errorf("%s: %s (want postgres://user:password@host:port/database)", flag, parseError(s, err))
	}
	return nil
}

// parseError is pgx's refusal of connection string s without any secret
// of s: pgx masks the password as it reads the string, which is not where
// a mistyped string's password ends (it reads a URL's userinfo up to the
// first "@"), so its text is rebuilt around redact.String's, and what pgx
// adds (its reason, the parser's error) is masked with redact.Text.
func parseError(s string, err error) string {
	var pe *pgconn.ParseConfigError
	if !errors.As(err, &pe) {
		return redact.Text(err.Error(), s)
	}
	text := pe.Error()
	inner := ""
	if u := errors.Unwrap(pe); u != nil {
		inner = u.Error()
		text = strings.TrimSuffix(text, " ("+inner+")")
	}
	reason := text
	if i := strings.LastIndex(text, "`: "); i >= 0 {
		reason = text[i+len("`: "):]
	}
	if inner != "" {
		reason += " (" + inner + ")"
	}
	return "cannot parse `" + redact.String(s) + "`: " + redact.Text(reason, s)
}

// server names the server and database of a PostgreSQL connection string.
func server(v string) string {
	c, err := pgx.ParseConfig(v)
	if err != nil {
		return ""
	}
	return fmt.Sprintf("%s:%d/%s", strings.ToLower(c.Host), c.Port, c.Database)
}

// store is a --pg-url value as storm.json keeps it: redact.String's
// masking, and nothing at all when the password survives it (keyword=value
// settings, a password= parameter).
func store(v string) (string, bool) {
	stored := redact.String(v)
	secret := stored != v
	if c, err := pgx.ParseConfig(v); err == nil && c.Password != "" && strings.Contains(stored, c.Password) {
		return "", true
	}
	return stored, secret
}

// checkNemesis refuses a --pg-url a storm under --nemesis cannot use: off
// loopback (the proxy and pg_terminate_backend need the server on this
// machine), on a unix socket, or given with pg-restart named (it restarts
// the embedded cluster only).
func checkNemesis(v string, named func(nemesis.Kind) bool) error {
	pc, err := pgconn.ParseConfig(v)
	if err != nil {
		return fmt.Errorf("--pg-url: %s", parseError(v, err))
	}
	if strings.HasPrefix(pc.Host, "/") {
		return fmt.Errorf("--nemesis needs --pg-url on a loopback TCP address, not the unix socket %s", redact.Text(pc.Host, v))
	}
	if err := nemesis.CheckLoopback("--pg-url", fmt.Sprintf("%s:%d", pc.Host, pc.Port)); err != nil {
		// pgx may take a piece of a mistyped password for the host.
		return redact.Wrap(err, v)
	}
	if named(nemesis.PGRestart) {
		return fmt.Errorf("--nemesis pg-restart restarts the embedded cluster only: drop --pg-url, or the kind")
	}
	return nil
}
