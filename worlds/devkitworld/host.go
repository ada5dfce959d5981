package devkitworld

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/stormctl/stormctl/internal/eventlog/pgconnect"
	"github.com/stormctl/stormctl/worlds/devkitworld/sidecar"
	"github.com/stormctl/stormctl/worlds/postgres"
)

// Config configures the devkit worlds of one stormctl process.
type Config struct {
	// Dir is a vercel/workflow checkout whose built packages run instead of
	// the published ones (--devkit-dir); "" runs the published ones.
	Dir string
	// CacheDir is where the published packages are installed (default: the
	// user's cache directory, os.UserCacheDir).
	CacheDir string
	// Layout, when set, is what the sidecar runs instead of the published
	// packages or Dir's (a World package's, sidecar.PackageLayout);
	// PackageName is then its package's npm name.
	Layout      *sidecar.Layout
	PackageName string
	// Progress receives the line a first install prints (nil: none).
	Progress io.Writer
	Logger   *slog.Logger
	// URL is a PostgreSQL server of the user's (--pg-url) on which
	// devkit-postgres creates its databases instead of an embedded
	// cluster, each named with Prefix; "" starts the embedded cluster. Its
	// server's track_commit_timestamp decides whether commit times can be
	// read.
	URL string
	// Keep leaves the databases created on URL after Stop (--keep); they
	// are dropped otherwise. The embedded cluster goes whatever Keep says.
	Keep bool
}

// Host owns what the devkit worlds share: one sidecar process (started on
// the first Open, serving every devkit world at once) and devkit-postgres's
// own embedded PostgreSQL cluster (started on the first devkit-postgres
// Open, with track_commit_timestamp on; each world gets a database of its
// own in it). Stop ends both.
type Host struct {
	cfg Config

	mu         sync.Mutex
	proc       *sidecar.Process
	layout     sidecar.Layout
	procErr    error
	cluster    *postgres.Cluster
	clusterErr error
	// template is a database the package has migrated, which every
	// world's database is created from (a copy, instead of a migration).
	template  string
	databases int
	// prefix names this host's databases on Config.URL (a server others
	// use too): "stormctl_devkit_<unix ms>_"; "devkit_" on the embedded
	// cluster. created lists them, for Stop to drop.
	prefix  string
	created []string
	stopped bool
	// versions are the sidecar's packages' versions by package name (and
	// Node's under "node"), asked once it started; nil if it could not say.
	versions map[string]string
}

// NewHost returns a host that starts nothing until a world opens.
func NewHost(cfg Config) *Host {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	prefix := "devkit_"
	if cfg.URL != "" {
		prefix = fmt.Sprintf("stormctl_devkit_%d_", time.Now().UnixMilli())
	}
	return &Host{cfg: cfg, prefix: prefix}
}

// process returns the running sidecar, installing and starting it the first
// time.
func (h *Host) process(ctx context.Context) (*sidecar.Process, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	switch {
	case h.stopped:
		return nil, errors.New("devkit: the host is stopped")
	case h.proc != nil || h.procErr != nil:
		return h.proc, h.procErr
	}
	cache := h.cfg.CacheDir
	if cache == "" {
		var err error
		if cache, err = os.UserCacheDir(); err != nil {
			cache = os.TempDir()
		}
	}
	var l sidecar.Layout
	var err error
	switch {
	case h.cfg.Layout != nil:
		l = *h.cfg.Layout
	case h.cfg.Dir != "":
		l, err = sidecar.Checkout(ctx, h.cfg.Dir, cache)
	default:
		l, err = sidecar.Install(ctx, cache, h.cfg.Progress)
	}
	if err == nil {
		var p *sidecar.Process
		if p, err = sidecar.Start(l); err == nil {
			h.proc, h.layout = p, l
			h.cfg.Logger.Info("devkit sidecar started", "pid", p.PID(), "packages", l.Source)
			h.versions, _ = hello(ctx, p) // a broken sidecar: the first request reports it
			h.announce(l)
			return p, nil
		}
	}
	if errors.Is(err, sidecar.ErrNoNode) || errors.Is(err, sidecar.ErrNotBuilt) {
		h.procErr = err // the machine will not change during this process
	}
	return nil, err
}

// announce says on Progress which packages the sidecar runs, and from
// where, once per stormctl: a storm's log then names what it stormed.
func (h *Host) announce(l sidecar.Layout) {
	v := h.versions
	if h.cfg.Progress == nil || v == nil {
		return
	}
	var pkgs []string
	names := []string{packageName(Local), packageName(Postgres), packageName(Vercel)}
	if h.cfg.Layout != nil { // one World package (pkgworld): its name only
		names = []string{h.cfg.PackageName}
	}
	for _, name := range names {
		if version := v[name]; version != "" {
			pkgs = append(pkgs, name+" "+version)
		}
	}
	fmt.Fprintf(h.cfg.Progress, "devkit: %s (%s) on node %s\n", strings.Join(pkgs, ", "), l.Source, v["node"])
}

// hello asks p which packages it runs: their versions by package name, and
// Node's under "node". It takes the process rather than the host so that
// process, which runs under h.mu, can use it.
func hello(ctx context.Context, p *sidecar.Process) (map[string]string, error) {
	var out struct {
		Versions map[string]string `json:"versions"`
		Node     string            `json:"node"`
	}
	if err := p.Call(ctx, "hello", nil, &out); err != nil {
		return nil, err
	}
	if out.Versions == nil {
		out.Versions = map[string]string{}
	}
	out.Versions["node"] = out.Node
	return out.Versions, nil
}

// database creates a fresh database in the devkit-postgres cluster (started
// the first time) and returns its URL. The first call also creates the
// template the others copy: a database the package migrated through p.
func (h *Host) database(ctx context.Context, p *sidecar.Process) (string, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	conn, err := h.clusterConn(ctx)
	if err != nil {
		return "", err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if h.template == "" {
		name := h.prefix + "template"
		if err := h.createDatabase(ctx, conn, name, ""); err != nil {
			return "", err
		}
		url, err := h.urlOf(name)
		if err != nil {
			return "", err
		}
		var out struct {
			Handle int64 `json:"handle"`
		}
		if err := p.Call(ctx, "open", map[string]any{"kind": string(Postgres), "url": url, "poolSize": 1}, &out); err != nil {
			return "", fmt.Errorf("devkit-postgres: migrate the template database: %w", err)
		}
		if err := p.Call(ctx, "close", map[string]any{"handle": out.Handle}, nil); err != nil {
			return "", fmt.Errorf("devkit-postgres: migrate the template database: %w", err)
		}
		h.template = name
	}
	h.databases++
	name := fmt.Sprintf("%s%d", h.prefix, h.databases)
	if err := h.createDatabase(ctx, conn, name, h.template); err != nil {
		return "", err
	}
	return h.urlOf(name)
}

// clusterConn connects to the devkit-postgres cluster, starting it the
// first time, or to Config.URL's server. h.mu is held.
func (h *Host) clusterConn(ctx context.Context) (*pgx.Conn, error) {
	if h.stopped {
		return nil, errors.New("devkit: the host is stopped")
	}
	if h.cfg.URL != "" {
		conn, err := pgconnect.Connect(ctx, h.cfg.URL)
		if err != nil {
			return nil, fmt.Errorf("devkit-postgres: %w (check --pg-url: host, port, user, password and database)", err)
		}
		return conn, nil
	}
	if h.cluster == nil && h.clusterErr == nil {
		h.cluster, h.clusterErr = postgres.StartEmbedded(ctx, h.cfg.Logger)
	}
	if h.clusterErr != nil {
		return nil, h.clusterErr
	}
	conn, err := pgx.Connect(ctx, h.cluster.URL())
	if err != nil {
		return nil, fmt.Errorf("devkit-postgres: connect to its cluster: %w", err)
	}
	return conn, nil
}

// emptyDatabase creates a fresh, empty database in the devkit-postgres
// cluster (started the first time) and returns its URL.
func (h *Host) emptyDatabase(ctx context.Context) (string, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	conn, err := h.clusterConn(ctx)
	if err != nil {
		return "", err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	h.databases++
	name := fmt.Sprintf("%sruntime_%d", h.prefix, h.databases)
	if err := h.createDatabase(ctx, conn, name, ""); err != nil {
		return "", err
	}
	return h.urlOf(name)
}

// createDatabase creates database name, a copy of template if one is
// named, and lists it for Stop. h.mu is held.
func (h *Host) createDatabase(ctx context.Context, conn *pgx.Conn, name, template string) error {
	sql := "CREATE DATABASE " + pgx.Identifier{name}.Sanitize()
	if template != "" {
		sql += " TEMPLATE " + pgx.Identifier{template}.Sanitize()
	}
	if _, err := conn.Exec(ctx, sql); err != nil {
		return fmt.Errorf("devkit-postgres: create database %s: %w", name, err)
	}
	h.created = append(h.created, name)
	return nil
}

// kept says where database name stays after Stop (Config.Keep on
// Config.URL's server), or "" when it goes.
func (h *Host) kept(name string) string {
	if h.cfg.URL == "" || !h.cfg.Keep || name == "" {
		return ""
	}
	where := ""
	if pc, err := pgconn.ParseConfig(h.cfg.URL); err == nil {
		where = fmt.Sprintf(" on %s:%d", pc.Host, pc.Port)
	}
	return "database " + name + where
}

// dropDatabases drops the databases this host created on Config.URL's
// server; with Config.Keep only the template (the worlds' databases, named
// by World.Kept, stay). h.mu is held.
func (h *Host) dropDatabases() error {
	if h.cfg.Keep {
		h.created = slices.DeleteFunc(h.created, func(name string) bool { return name != h.template })
	}
	if h.cfg.URL == "" || len(h.created) == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgconnect.Connect(ctx, h.cfg.URL)
	if err != nil {
		return fmt.Errorf("devkit-postgres: drop its databases %s: %w", strings.Join(h.created, ", "), err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	var errs []error
	// The template last: the others were copied from it.
	for _, name := range slices.Backward(h.created) {
		if _, err := conn.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)"); err != nil {
			errs = append(errs, fmt.Errorf("devkit-postgres: drop database %s: %w", name, err))
		}
	}
	h.created = nil
	return errors.Join(errs...)
}

// urlOf is the URL of database name in the cluster (or on Config.URL's
// server).
func (h *Host) urlOf(name string) (string, error) {
	base := h.cfg.URL
	if base == "" {
		base = h.cluster.URL()
	}
	u, err := url.Parse(base)
	if err != nil {
		return "", fmt.Errorf("devkit-postgres: cluster URL: %w", err)
	}
	u.Path = "/" + name
	return u.String(), nil
}

// version is the version of kind's package the sidecar runs, or
// "(version unknown)".
func (h *Host) version(k Kind) string {
	h.mu.Lock()
	defer h.mu.Unlock()
	if v := h.versions[h.packageName(k)]; v != "" {
		return v
	}
	return "(version unknown)"
}

// packageName is the npm name of kind k's package on this host.
func (h *Host) packageName(k Kind) string {
	if k == ThirdParty {
		return h.cfg.PackageName
	}
	return packageName(k)
}

// Spec is what a package's World contract is, as the sidecar found it.
type Spec struct {
	// Package and Version are the package's npm name and version.
	Package string `json:"package"`
	Version string `json:"version"`
	// World is the version of @workflow/world the package resolves (the
	// contract's types and schemas); SpecVersion the SPEC_VERSION_CURRENT
	// it exports (nil: it exports none, a contract older than spec
	// versions).
	World       string `json:"world"`
	SpecVersion *int   `json:"specVersion"`
	// Bare are the event types whose data the package's schema drops.
	Bare []string `json:"bare"`
}

// Spec asks the sidecar which contract kind k's package implements: it
// loads the package and its @workflow/world.
func (h *Host) Spec(ctx context.Context, k Kind) (Spec, error) {
	p, err := h.process(ctx)
	if err != nil {
		return Spec{}, err
	}
	var out struct {
		Specs map[string]Spec `json:"specs"`
	}
	if err := p.Call(ctx, "hello", map[string]any{"specs": []string{string(k)}}, &out); err != nil {
		return Spec{}, fmt.Errorf("devkit-%s: load the package: %w", k, err)
	}
	s, ok := out.Specs[string(k)]
	if !ok {
		return Spec{}, fmt.Errorf("devkit-%s: the sidecar did not say which contract the package implements", k)
	}
	return s, nil
}

// Versions asks the sidecar which packages (and Node) it runs.
func (h *Host) Versions(ctx context.Context) (map[string]string, error) {
	p, err := h.process(ctx)
	if err != nil {
		return nil, err
	}
	return hello(ctx, p)
}

// Stop stops the sidecar and the cluster, whichever started.
func (h *Host) Stop() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.stopped = true
	var errs []error
	if h.proc != nil {
		errs = append(errs, h.proc.Stop())
		h.proc = nil
	}
	errs = append(errs, h.dropDatabases())
	if h.cluster != nil {
		errs = append(errs, h.cluster.Stop())
		h.cluster = nil
	}
	return errors.Join(errs...)
}
