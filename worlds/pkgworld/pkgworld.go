// Package pkgworld runs a World package named on the command line as a
// world: --world package:NAME[@VERSION] (installed from the npm registry)
// or package:PATH (a local build). The package is installed with npm into
// a directory of its own under the user's cache
// (stormctl/packages/<name>@<version>, first use only), and served by a
// devkit sidecar of its own (worlds/devkitworld) whose environment carries the
// --world-env values the package reads its configuration from.
//
// A third-party package is created through its documented factory (its
// default export, or createWorld); the model engine uses only its storage
// (events.create, events.list). The upstream packages
// @workflow/world-local and @workflow/world-postgres, named this way at
// any version, are opened as the devkit worlds open them (a data directory
// of their own; a database of the embedded cluster, migrated, or of the
// PostgreSQL server --world-env WORKFLOW_POSTGRES_URL or --pg-url names),
// so that their commit clocks are read too. Either way the world runs the
// legacy contract (scheme ulid, no fence, no guard), under the model
// engine and the devkit engine (the published @workflow/core hosting the
// package: its own queue where it delivers in process, else world-local's
// composed with its storage; see internal/devkit/devkitengine).
package pkgworld

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/stormctl/stormctl/internal/base/redact"
	"github.com/stormctl/stormctl/internal/eventlog"
	"github.com/stormctl/stormctl/internal/eventlog/pgconnect"
	"github.com/stormctl/stormctl/worlds"
	"github.com/stormctl/stormctl/worlds/devkitworld"
	"github.com/stormctl/stormctl/worlds/devkitworld/sidecar"
	"github.com/stormctl/stormctl/worlds/postgres"
)

// Prefix starts a world name that names a package.
const Prefix = "package:"

// ErrNotFound is a package that is not there: one npm cannot fetch (no
// such name or version on the registry), or a directory without a
// package.json: the user's input, not the machine's (exit 2).
var ErrNotFound = errors.New("no such package")

// Form is the family of package worlds, as a registry declares it
// (worlds.Registry.AddForm): each runs the devkit engine, whose host loads
// the package.
var Form = worlds.Form{Pattern: Prefix + "NAME", Engines: []string{"devkit"}}

// Ref is a package as named after Prefix.
type Ref struct {
	// Name and Version are an npm package and the version asked ("" for
	// the registry's latest); Path is a local build's directory instead.
	Name    string
	Version string
	Path    string
}

// String is the ref as written after Prefix.
func (r Ref) String() string {
	switch {
	case r.Path != "":
		return r.Path
	case r.Version != "":
		return r.Name + "@" + r.Version
	}
	return r.Name
}

// IsPackage says whether world names a package (starts with Prefix).
func IsPackage(world string) bool { return strings.HasPrefix(world, Prefix) }

// npmName is an npm package name, scoped or not.
var npmName = regexp.MustCompile(`^(@[a-z0-9][a-z0-9._~-]*/)?[a-z0-9][a-z0-9._~-]*$`)

// Parse reads a world name of the form package:NAME[@VERSION] or
// package:PATH. A PATH starts with ".", "/" or "~", or names an existing
// directory.
func Parse(world string) (Ref, error) {
	rest, ok := strings.CutPrefix(world, Prefix)
	if !ok {
		return Ref{}, fmt.Errorf("world %q: not a package (package:NAME[@VERSION] or package:PATH)", world)
	}
	if rest == "" {
		return Ref{}, fmt.Errorf("world %q: no package named (package:NAME[@VERSION] or package:PATH)", world)
	}
	if strings.HasPrefix(rest, ".") || strings.HasPrefix(rest, "/") || strings.HasPrefix(rest, "~") || isDir(rest) {
		if home, err := os.UserHomeDir(); err == nil && strings.HasPrefix(rest, "~/") {
			rest = filepath.Join(home, rest[2:])
		}
		abs, err := filepath.Abs(rest)
		if err != nil {
			return Ref{}, fmt.Errorf("world %q: %w", world, err)
		}
		return Ref{Path: abs}, nil
	}
	name, version := rest, ""
	if i := strings.LastIndex(rest, "@"); i > 0 {
		name, version = rest[:i], rest[i+1:]
		if version == "" {
			return Ref{}, fmt.Errorf("world %q: empty version after @", world)
		}
	}
	if !npmName.MatchString(name) {
		return Ref{}, fmt.Errorf("world %q: %q is not an npm package name (nor a directory)", world, name)
	}
	return Ref{Name: name, Version: version}, nil
}

func isDir(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.IsDir()
}

// ParseEnv checks --world-env values: each KEY=VALUE with a KEY.
func ParseEnv(env []string) error {
	for _, kv := range env {
		k, _, ok := strings.Cut(kv, "=")
		if !ok || k == "" || strings.ContainsAny(k, " \t\n") {
			return fmt.Errorf("--world-env %q: not KEY=VALUE", kv)
		}
	}
	return nil
}

// Installed is a package ready to run: its name and version (read from
// its package.json), its directory, and how the sidecar opens it.
type Installed struct {
	Ref     Ref
	Name    string
	Version string
	Dir     string
	Kind    devkitworld.Kind
}

// ID is the package as name@version.
func (i Installed) ID() string { return i.Name + "@" + i.Version }

// installedMarker is written into an install directory once npm succeeded.
const installedMarker = ".stormctl-installed"

// Install makes r's package ready: a local build is read where it is
// (its package.json); an npm package is installed with npm into
// cacheDir/stormctl/packages/<name>@<version> the first time (a line on
// progress says so), after asking the registry which version "latest"
// is when r names none. A package or version the registry does not have
// fails with ErrNotFound; npm failing otherwise (no network) with
// sidecar.ErrInstall, and a machine without node or npm with
// sidecar.ErrNoNode.
func Install(ctx context.Context, cacheDir string, r Ref, progress io.Writer) (Installed, error) {
	if r.Path != "" {
		return local(r)
	}
	for _, bin := range []string{"node", "npm"} {
		if _, err := exec.LookPath(bin); err != nil {
			return Installed{}, fmt.Errorf("package %s: %s not found: %w", r, bin, sidecar.ErrNoNode)
		}
	}
	version := r.Version
	if !exactVersion.MatchString(version) {
		v, err := latest(ctx, r)
		if err != nil {
			return Installed{}, err
		}
		version = v
	}
	dir := filepath.Join(cacheDir, "stormctl", "packages", r.Name+"@"+version)
	pkgDir := filepath.Join(dir, "node_modules", filepath.FromSlash(r.Name))
	if _, err := os.Stat(filepath.Join(dir, installedMarker)); err != nil {
		if err := install(ctx, dir, r.Name, version, progress); err != nil {
			return Installed{}, err
		}
	}
	in, err := readPackage(r, pkgDir)
	if err != nil {
		return Installed{}, err
	}
	return in, nil
}

// exactVersion is a version npm installs as it is (no range, no tag).
var exactVersion = regexp.MustCompile(`^\d+\.\d+\.\d+(-[0-9A-Za-z.-]+)?$`)

// latest asks the registry which version r's version (a tag, a range, or
// none: latest) is.
func latest(ctx context.Context, r Ref) (string, error) {
	spec := r.Name
	if r.Version != "" {
		spec += "@" + r.Version
	}
	cmd := exec.CommandContext(ctx, "npm", "view", spec, "version", "--json")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return "", npmError("npm view "+spec, err, errb.String()+out.String())
	}
	var one string
	if err := json.Unmarshal(out.Bytes(), &one); err == nil && one != "" {
		return one, nil
	}
	var many []string
	if err := json.Unmarshal(out.Bytes(), &many); err == nil && len(many) > 0 {
		return many[len(many)-1], nil // npm lists a range's matches in ascending order
	}
	return "", fmt.Errorf("package %s: %w: npm view answered no version", spec, ErrNotFound)
}

// npmError says why npm failed: ErrNotFound for what the registry does not
// have (E404, ETARGET), sidecar.ErrInstall for the rest.
func npmError(what string, err error, out string) error {
	if strings.Contains(out, "E404") || strings.Contains(out, "ETARGET") || strings.Contains(out, "404 Not Found") {
		return fmt.Errorf("%s: npm cannot fetch it: %w (%s)", what, ErrNotFound, firstLine(out))
	}
	return fmt.Errorf("%s: %w: %v: %s", what, sidecar.ErrInstall, err, firstLine(out))
}

// firstLine is the first line of npm's output that says something.
func firstLine(s string) string {
	for _, l := range strings.Split(s, "\n") {
		l = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(l), "npm error"))
		if l != "" && !strings.HasPrefix(l, "code ") {
			return l
		}
	}
	return strings.TrimSpace(s)
}

// install runs npm install name@version in a fresh directory next to dir
// and renames it into place, so that a failed or concurrent install never
// leaves a half-filled directory. Install scripts are not run.
func install(ctx context.Context, dir, name, version string, progress io.Writer) error {
	parent := filepath.Dir(dir)
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return fmt.Errorf("package %s@%s: %w", name, version, err)
	}
	tmp, err := os.MkdirTemp(parent, ".install-")
	if err != nil {
		return fmt.Errorf("package %s@%s: %w", name, version, err)
	}
	defer os.RemoveAll(tmp)
	manifest, err := json.Marshal(map[string]any{"private": true, "dependencies": map[string]string{name: version}})
	if err != nil {
		return fmt.Errorf("package %s@%s: %w", name, version, err)
	}
	if err := os.WriteFile(filepath.Join(tmp, "package.json"), manifest, 0o644); err != nil {
		return fmt.Errorf("package %s@%s: %w", name, version, err)
	}
	if progress != nil {
		fmt.Fprintf(progress, "package: installing %s@%s into %s with npm; first use only\n", name, version, dir)
	}
	cmd := exec.CommandContext(ctx, "npm", "install", "--no-audit", "--no-fund", "--ignore-scripts", "--loglevel=error")
	cmd.Dir = tmp
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return npmError(fmt.Sprintf("npm install %s@%s", name, version), err, out.String())
	}
	if err := os.WriteFile(filepath.Join(tmp, installedMarker), nil, 0o644); err != nil {
		return fmt.Errorf("package %s@%s: %w", name, version, err)
	}
	if err := os.Rename(tmp, dir); err != nil {
		if _, serr := os.Stat(filepath.Join(dir, installedMarker)); serr == nil {
			return nil // another stormctl installed it meanwhile
		}
		return fmt.Errorf("package %s@%s: %w", name, version, err)
	}
	return nil
}

// local reads a local build's package.json.
func local(r Ref) (Installed, error) {
	if !isDir(r.Path) {
		return Installed{}, fmt.Errorf("package %s: %w: no such directory", r.Path, ErrNotFound)
	}
	return readPackage(r, r.Path)
}

// readPackage reads the package.json of the package in dir.
func readPackage(r Ref, dir string) (Installed, error) {
	b, err := os.ReadFile(filepath.Join(dir, "package.json"))
	if err != nil {
		if os.IsNotExist(err) {
			return Installed{}, fmt.Errorf("package %s: %w: %s has no package.json", r, ErrNotFound, dir)
		}
		return Installed{}, fmt.Errorf("package %s: %w: %v", r, ErrNotFound, err)
	}
	var pkg struct {
		Name    string `json:"name"`
		Version string `json:"version"`
	}
	if err := json.Unmarshal(b, &pkg); err != nil {
		return Installed{}, fmt.Errorf("package %s: package.json: %w", r, err)
	}
	in := Installed{Ref: r, Name: pkg.Name, Version: pkg.Version, Dir: dir, Kind: devkitworld.ThirdParty}
	switch pkg.Name {
	case "@workflow/world-local":
		in.Kind = devkitworld.Local
	case "@workflow/world-postgres":
		in.Kind = devkitworld.Postgres
	}
	return in, nil
}

// World is an installed package served by a sidecar of its own.
type World struct {
	Installed
	host *devkitworld.Host
	// server is the PostgreSQL server world-postgres runs on ("": the
	// embedded cluster); noClock, when set, says why its commit times
	// cannot be read there.
	server  string
	noClock string
}

// Options configure a package world.
type Options struct {
	// Env is added to the package's environment (--world-env KEY=VALUE),
	// in its sidecar and in a runtime that hosts it.
	Env []string
	// PgURL is --pg-url: the PostgreSQL server @workflow/world-postgres
	// runs on when Env names none (PostgresVars).
	PgURL string
	// Keep leaves the databases created on that server (--keep).
	Keep     bool
	CacheDir string
	Progress io.Writer
	Logger   *slog.Logger
}

// PostgresVars are the variables @workflow/world-postgres reads its
// database URL from, first first: its createWorld reads
// WORKFLOW_POSTGRES_URL, its setup CLI that, then DATABASE_URL.
var PostgresVars = []string{"WORKFLOW_POSTGRES_URL", "DATABASE_URL"}

// ErrServer is a PostgreSQL server given in a form stormctl cannot use, or
// named twice, differently (--pg-url and --world-env): the user's input.
var ErrServer = errors.New("the PostgreSQL server for @workflow/world-postgres")

// PostgresServer is the server @workflow/world-postgres runs on, as the
// package would read it from env (PostgresVars, in order), else pgURL
// (--pg-url); "" for none (the embedded cluster). A value that is not a
// PostgreSQL URL, or both naming different servers, is ErrServer, in one
// line saying what to give.
func PostgresServer(env []string, pgURL string) (string, error) {
	fromEnv, name := "", ""
	for _, v := range PostgresVars {
		if x := lookup(env, v); x != "" {
			fromEnv, name = x, v
			break
		}
	}
	switch {
	case fromEnv == "":
		return pgURL, nil
	case pgURL != "" && pgURL != fromEnv:
		return "", fmt.Errorf("%w: --world-env %s=%s and --pg-url %s name different servers: give one of them", ErrServer, name, redact.String(fromEnv), redact.String(pgURL))
	}
	if err := postgres.ValidURL("--world-env "+name, fromEnv); err != nil {
		return "", fmt.Errorf("%w: %v", ErrServer, err)
	}
	return fromEnv, nil
}

// lookup is the value of key in KEY=VALUE settings, the last given.
func lookup(env []string, key string) string {
	v := ""
	for _, kv := range env {
		if k, x, ok := strings.Cut(kv, "="); ok && k == key {
			v = x
		}
	}
	return v
}

// Open starts nothing: the sidecar starts on the first world opened (or
// Spec), with opts.Env added to its environment. @workflow/world-postgres
// gets a database of its own per world on the server PostgresServer
// names (each created from a template the package migrated, dropped at
// Stop unless opts.Keep), or on an embedded cluster; a server without
// track_commit_timestamp is used, its commit clock declared unreadable.
func Open(ctx context.Context, in Installed, opts Options) (*World, error) {
	if err := ParseEnv(opts.Env); err != nil {
		return nil, err
	}
	w := &World{Installed: in}
	if in.Kind == devkitworld.Postgres {
		var err error
		if w.server, err = PostgresServer(opts.Env, opts.PgURL); err != nil {
			return nil, err
		}
		if w.server != "" {
			if w.noClock, err = commitClock(ctx, w.server); err != nil {
				return nil, err
			}
		}
	}
	l, err := sidecar.PackageLayout(ctx, opts.CacheDir, in.Dir, string(in.Kind), opts.Env)
	if err != nil {
		return nil, err
	}
	w.host = devkitworld.NewHost(devkitworld.Config{Layout: &l, PackageName: in.Name, CacheDir: opts.CacheDir, Progress: opts.Progress, Logger: opts.Logger,
		URL: w.server, Keep: opts.Keep})
	return w, nil
}

// commitClock connects to server and says why its commit times cannot be
// read ("" when track_commit_timestamp is on). A server that cannot be
// reached is the machine's (worlds.ErrPrerequisite wraps it).
func commitClock(ctx context.Context, server string) (string, error) {
	conn, err := pgconnect.Connect(ctx, server)
	if err != nil {
		return "", worlds.Prerequisite(fmt.Sprintf("@workflow/world-postgres's server: %s", err))
	}
	defer conn.Close(context.WithoutCancel(ctx))
	var on string
	if err := conn.QueryRow(ctx, "SHOW track_commit_timestamp").Scan(&on); err != nil {
		return "", fmt.Errorf("@workflow/world-postgres's server %s: %w", redact.Server(server), redact.Wrap(err, server))
	}
	if on == "on" {
		return "", nil
	}
	return fmt.Sprintf("the PostgreSQL server %s has track_commit_timestamp off: its commit clock cannot be read", redact.Server(server)), nil
}

// Server is the PostgreSQL server @workflow/world-postgres runs on, its
// secrets masked ("" for the embedded cluster and for other packages).
func (w *World) Server() string {
	if w.server == "" {
		return ""
	}
	return redact.Server(w.server)
}

// Spec is the contract the package implements, as its sidecar found it.
func (w *World) Spec(ctx context.Context) (devkitworld.Spec, error) { return w.host.Spec(ctx, w.Kind) }

// Entry is the package's registry entry, named name (the world as given,
// package:...): scheme ulid, the legacy contract's limits and those its
// spec shows (the event types its schema keeps no data for), the model
// engine only.
func (w *World) Entry(name string, spec devkitworld.Spec) worlds.Entry {
	limits := devkitworld.Limits(w.Kind)
	for _, t := range spec.Bare {
		if limits.Bare == nil {
			limits.Bare = map[eventlog.Type]string{}
		}
		limits.Bare[eventlog.Type(t)] = fmt.Sprintf("the package's contract (@workflow/world %s) has no data on %s: its schema drops it", spec.World, t)
	}
	if w.noClock != "" {
		limits.CommitClock = w.noClock
	}
	desc := fmt.Sprintf("the World package %s, run in a Node sidecar through its factory", w.ID())
	if w.Kind != devkitworld.ThirdParty {
		desc = fmt.Sprintf("the World package %s, run in a Node sidecar as devkit-%s runs it", w.ID(), w.Kind)
	}
	var endpoints []worlds.Endpoint
	if w.Kind == devkitworld.Postgres {
		endpoints = []worlds.Endpoint{postgres.URLFlag}
	}
	return worlds.Entry{
		Name:        name,
		Description: desc,
		Schemes:     []string{string(eventlog.SchemeULID)},
		Limits:      limits,
		Endpoints:   endpoints,
		Engines:     Form.Engines,
		Open: func(ctx context.Context, opts worlds.Options) (worlds.World, error) {
			if w.Kind == devkitworld.ThirdParty {
				return devkitworld.OpenPackage(ctx, w.host, opts)
			}
			dw, err := devkitworld.Open(ctx, w.host, w.Kind, opts)
			if err != nil {
				return nil, err
			}
			if w.noClock != "" {
				return devkitworld.WithoutCommitTimes(dw), nil
			}
			return dw, nil
		},
	}
}

// Stop stops the sidecar (and the embedded cluster of world-postgres),
// whichever started.
func (w *World) Stop() error { return w.host.Stop() }
