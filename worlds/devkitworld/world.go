package devkitworld

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/oklog/ulid/v2"

	"github.com/stormctl/stormctl/internal/eventlog"
	"github.com/stormctl/stormctl/worlds"
	"github.com/stormctl/stormctl/worlds/devkitworld/sidecar"
)

// Kind is which package a devkit world runs.
type Kind string

// The packages.
const (
	// Local is @workflow/world-local: one JSON file per event in a directory.
	Local Kind = "local"
	// Postgres is @workflow/world-postgres: rows of workflow.workflow_events.
	Postgres Kind = "postgres"
	// Vercel is @workflow/world-vercel's storage: HTTP requests to a
	// backend (OpenVercel).
	Vercel Kind = "vercel"
	// ThirdParty is a third-party World package (OpenPackage), created by its
	// own factory and configured by the sidecar's environment.
	ThirdParty Kind = "package"
)

// World is one instance of a package, reached through the host's sidecar:
// a data directory of its own (Local) or a database of its own (Postgres).
// It is safe for concurrent use.
type World struct {
	kind    Kind
	host    *Host
	dir     string // Options.Dir
	proc    *sidecar.Process
	handle  int64
	dataDir string   // Local: the package's data directory
	dbURL   string   // Postgres: the world's database
	backend *Backend // Vercel: the server and project its package calls
	// runtimeURLs are the databases RuntimeStore made (Postgres);
	// runtimeStores counts the stores it made (each gets a directory of
	// its own).
	runtimeURLs   []string
	runtimeStores int
	latency       worlds.Profile
	version       string // the package's version (WindowError names it)
	// serverWindow: the mint-to-commit window is the backend's to spend
	// (Vercel), not the sidecar's: writes ask the sidecar for none.
	serverWindow bool

	mu   sync.Mutex
	runs map[string]bool
	// workflows names each run's workflow (eventlog.Run.Workflow).
	workflows map[string]string
	// seen is when this world first saw each event committed: the answer
	// of the create that wrote it, or the first read that returned it.
	seen map[string]time.Time
	// windows counts the writes that asked for a mint-to-commit window
	// and where the sidecar spent it, per type (window.go).
	windows map[eventlog.Type]WindowCount

	closed atomic.Bool
}

var (
	_ worlds.Keeper      = (*World)(nil)
	_ worlds.World       = (*World)(nil)
	_ worlds.CommitTimes = (*World)(nil)
)

// Open opens a fresh instance of the package of kind k: the host's sidecar
// (installed and started on first use) opens it on opts.Dir/world-local
// (Local) or on a new database of the host's cluster, which it migrates
// first (Postgres). opts.Latency is each write's mint-to-commit window,
// spent inside the package between its id mint and its publish (in the
// sidecar's process: a worlds.WindowHolder is not asked to hold it). The
// package mints ids with its own entropy: opts.Seed does not reach them.
func Open(ctx context.Context, h *Host, k Kind, opts worlds.Options) (*World, error) {
	if opts.Nemesis {
		return nil, fmt.Errorf("devkit-%s: --nemesis has no faults for the devkit worlds", k)
	}
	switch k {
	case Vercel:
		return nil, errors.New("devkit-vercel: opened with OpenVercel, which names its backend")
	case ThirdParty:
		return nil, errors.New("devkit-package: opened with OpenPackage")
	}
	return open(ctx, h, k, opts, nil)
}

// OpenPackage opens an instance of the third-party World package of h
// (Config.Layout, Config.PackageName) through its factory. The package
// keeps its own clock and windows: no mint-to-commit window is asked of
// the sidecar (opts.Latency does not reach it), and the World has no
// commit times (the package's store has no clock stormctl can read). It
// implements worlds.World only.
func OpenPackage(ctx context.Context, h *Host, opts worlds.Options) (worlds.World, error) {
	if opts.Nemesis {
		return nil, fmt.Errorf("%s: --nemesis has no faults for a package's world", h.cfg.PackageName)
	}
	w, err := open(ctx, h, ThirdParty, opts, nil)
	if err != nil {
		return nil, err
	}
	return packageWorld{w}, nil
}

// WithoutCommitTimes is w without its CommitTimes (a devkit-postgres World
// on a server whose commit timestamps are off): the worlds.World methods,
// Kept and RuntimeStore only.
func WithoutCommitTimes(w *World) worlds.World { return packageWorld{w} }

// packageWorld is a World with only the worlds.World methods (and Kept
// and RuntimeStore): no CommitTimes.
type packageWorld struct{ w *World }

func (p packageWorld) CreateRun(ctx context.Context, r eventlog.Run) error {
	return p.w.CreateRun(ctx, r)
}

func (p packageWorld) Append(ctx context.Context, runID string, d []eventlog.Draft) ([]eventlog.Event, error) {
	return p.w.Append(ctx, runID, d)
}

func (p packageWorld) AppendFenced(ctx context.Context, runID string, seq int64, d []eventlog.Draft) ([]eventlog.Event, error) {
	return p.w.AppendFenced(ctx, runID, seq, d)
}

func (p packageWorld) List(ctx context.Context, runID string, after eventlog.Cursor, limit int) (eventlog.Page, error) {
	return p.w.List(ctx, runID, after, limit)
}

func (p packageWorld) Close() error { return p.w.Close() }

// Kept names what stays with --keep (worlds.Keeper): World.Kept.
func (p packageWorld) Kept() string { return p.w.Kept() }

// RuntimeStore is a store of the package's own for a runtime that hosts
// it (the devkit engine): World.RuntimeStore.
func (p packageWorld) RuntimeStore(ctx context.Context) (Store, error) {
	return p.w.RuntimeStore(ctx)
}

// Backend is where a devkit-vercel World's package sends its requests.
type Backend struct {
	// URL is the server's base URL (the package appends /api): one for
	// every World of a Host, since the package reads it from the sidecar's
	// environment.
	URL string
	// Project is the World's project id, which each of its requests carries
	// (x-vercel-project-id): the server's tenant.
	Project string
}

// OpenVercel opens @workflow/world-vercel's storage against backend b:
// the package's events.create and events.list become HTTP requests to it.
// The mint-to-commit window is the backend's to spend (it mints the ids):
// opts.Latency does not reach the sidecar. Faults (opts.Nemesis) are the
// backend's too, so a World opened with it is the caller's business.
func OpenVercel(ctx context.Context, h *Host, b Backend, opts worlds.Options) (*World, error) {
	return open(ctx, h, Vercel, opts, &b)
}

func open(ctx context.Context, h *Host, k Kind, opts worlds.Options, b *Backend) (*World, error) {
	p, err := h.process(ctx)
	if err != nil {
		return nil, err
	}
	w := &World{kind: k, host: h, dir: opts.Dir, proc: p, latency: worlds.ProfileOrNone(opts.Latency), version: h.version(k),
		runs: map[string]bool{}, workflows: map[string]string{}, seen: map[string]time.Time{}, windows: map[eventlog.Type]WindowCount{}}
	args := map[string]any{"kind": string(k)}
	switch k {
	case Local:
		if opts.Dir == "" {
			return nil, errors.New("devkit-local: Options.Dir is empty: the package needs a data directory")
		}
		w.dataDir = filepath.Join(opts.Dir, "world-local")
		args["dataDir"] = w.dataDir
	case Postgres:
		if w.dbURL, err = h.database(ctx, p); err != nil {
			return nil, err
		}
		args["url"], args["poolSize"] = w.dbURL, poolSize
	case Vercel:
		args["url"], args["project"] = b.URL, b.Project
		w.serverWindow, w.backend = true, b
	case ThirdParty:
		w.serverWindow = true
	default:
		return nil, fmt.Errorf("devkit: unknown kind %q", k)
	}
	var out struct {
		Handle int64 `json:"handle"`
	}
	if err := p.Call(ctx, "open", args, &out); err != nil {
		return nil, fmt.Errorf("devkit-%s: open: %w", k, Classify("open", "", nil, err))
	}
	w.handle = out.Handle
	return w, nil
}

// poolSize is each devkit-postgres world's connection pool: a storm's
// concurrency (20) per cell, as many cells as a storm of 3 scenarios x 2
// conditions has, in the cluster's 220.
const poolSize = 20

// Limits are what the legacy packages do not do of what the conformance
// suite asks (worlds.Entry.Limits) on kind k.
func Limits(k Kind) worlds.Limits {
	clock, validator := "", "the package"
	switch k {
	case Local:
		clock = "devkit-local's commit times are event files' modification times, from the kernel's coarse clock (a tick, 1 to 10 ms): one can read a little before its event's mint time"
	case Vercel:
		validator = "the backend (stormctl's emulation, as world-local does)"
	case ThirdParty:
		clock = "the package's store has no commit clock stormctl can read"
	}
	return worlds.Limits{
		CommitClock: clock,
		Fence:       ErrNoFence.Error(),
		Lifecycle:   validator + " validates every event against its run, step, hook or wait (a step_started needs its step_created, nothing follows a run's end) and the package keeps only the fields its schema names (no payload on step_started, hook_disposed; only resumeAt on waits)",
		Unkeyed: map[string]string{
			string(eventlog.HookReceived): "the package appends every hook_received: a repeated payload is not refused",
			"hook_token":                  "a hook_created whose token another hook holds is answered with a hook_conflict event in the log, not refused",
			string(eventlog.StepStarted):  "the package appends every step_started of a live step (a retry's next attempt)",
		},
		Types: map[eventlog.Type]string{
			eventlog.AttrSet:      "the package has no attr_set event",
			eventlog.Noop:         "the package has no noop event (slot scheme)",
			eventlog.HookConflict: "only the package writes hook_conflict",
		},
	}
}

// CreateRun records the run: the package creates it with its run_created
// event. Only scheme ulid without a guard exists in the packages, and they
// take client run ids of the form wrun_<ULID> (as the runtime mints them).
func (w *World) CreateRun(ctx context.Context, r eventlog.Run) error {
	if err := w.usable(ctx); err != nil {
		return err
	}
	switch {
	case r.Scheme != eventlog.SchemeULID:
		return fmt.Errorf("devkit-%s: scheme %s: the package implements only ulid (the legacy contract)", w.kind, r.Scheme)
	case r.Guard != eventlog.GuardNone:
		return fmt.Errorf("devkit-%s: guard %s: the package has none", w.kind, r.Guard)
	}
	rest, ok := strings.CutPrefix(r.ID, "wrun_")
	if _, err := ulid.ParseStrict(rest); !ok || err != nil {
		return fmt.Errorf("devkit-%s: run id %q: the package takes wrun_<ULID> run ids", w.kind, r.ID)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.runs[r.ID] {
		return fmt.Errorf("devkit-%s: run %s exists", w.kind, r.ID)
	}
	w.runs[r.ID] = true
	w.workflows[r.ID] = r.Workflow
	return nil
}

// Append writes the drafts one by one through the package's events.create,
// as the runtime does; a failure returns the events written before it. A
// hook_created whose token another hook holds comes back as the package's
// hook_conflict event (in the log now) with an *eventlog.ConflictError.
func (w *World) Append(ctx context.Context, runID string, d []eventlog.Draft) ([]eventlog.Event, error) {
	if err := w.known(ctx, runID); err != nil {
		return nil, err
	}
	out := make([]eventlog.Event, 0, len(d))
	for i, x := range d {
		e, err := w.create(ctx, runID, x)
		if e.ID != "" {
			out = append(out, e)
		}
		if err != nil {
			return out, fmt.Errorf("devkit-%s: append to run %s: draft %d (%s): %w", w.kind, runID, i, x.Type, err)
		}
	}
	return out, nil
}

func (w *World) create(ctx context.Context, runID string, d eventlog.Draft) (eventlog.Event, error) {
	w.mu.Lock()
	workflow := w.workflows[runID]
	w.mu.Unlock()
	pe, err := toPackage(runID, workflow, d)
	if err != nil {
		return eventlog.Event{}, err
	}
	var out struct {
		Event  PackageEvent  `json:"event"`
		Window *windowAnswer `json:"window"`
	}
	var delay int64
	if w.kind != ThirdParty { // a third-party package's windows are its own: nothing is drawn
		delay = w.latency.Delay(d.Type).Milliseconds()
	}
	if w.serverWindow {
		delay = 0
	}
	args := map[string]any{"handle": w.handle, "runId": runID, "event": pe, "delayMs": delay}
	if err := w.proc.Call(ctx, "create", args, &out); err != nil {
		return eventlog.Event{}, Classify("create", runID, &d, w.conflict(err))
	}
	if delay > 0 {
		w.countWindow(d.Type, out.Window)
	}
	e, err := fromPackage(runID, out.Event)
	if err != nil {
		return eventlog.Event{}, err
	}
	e.CommittedAt = w.observe(e.ID, time.Now())
	if d.Type == eventlog.HookCreated && e.Type == eventlog.HookConflict {
		return e, &eventlog.ConflictError{RunID: runID, Key: "hook_token/" + d.Token}
	}
	return e, nil
}

// conflict makes a third-party package's 409 answer to a write its
// EntityConflictError: contracts before that class (@workflow/errors
// 4.1.0-beta.14, which @workflow/world 4.1.0-beta.2 packages pin) answer
// a conflicting event with a WorkflowAPIError of status 409.
func (w *World) conflict(err error) error {
	var se *sidecar.Error
	if w.kind == ThirdParty && errors.As(err, &se) && se.Name == "WorkflowAPIError" && se.Status == 409 {
		c := *se
		c.Name = "EntityConflictError"
		return &c
	}
	return err
}

// AppendFenced fails with ErrNoFence: the package has no fence.
func (w *World) AppendFenced(ctx context.Context, runID string, _ int64, _ []eventlog.Draft) ([]eventlog.Event, error) {
	if err := w.known(ctx, runID); err != nil {
		return nil, err
	}
	return nil, fmt.Errorf("devkit-%s: fenced append to run %s: %w", w.kind, runID, ErrNoFence)
}

// List returns up to limit events after the cursor (limit <= 0: all of
// them) through the package's events.list, in the package's order:
// world-local sorts by createdAt, then id; world-postgres by id.
func (w *World) List(ctx context.Context, runID string, after eventlog.Cursor, limit int) (eventlog.Page, error) {
	if err := w.known(ctx, runID); err != nil {
		return eventlog.Page{}, err
	}
	if limit > 0 {
		return w.page(ctx, runID, after, limit)
	}
	all := eventlog.Page{Next: after}
	for {
		p, err := w.page(ctx, runID, all.Next, 1000)
		if err != nil {
			return eventlog.Page{}, err
		}
		all.Events, all.Next = append(all.Events, p.Events...), p.Next
		if !p.More || len(p.Events) == 0 {
			return all, nil
		}
	}
}

func (w *World) page(ctx context.Context, runID string, after eventlog.Cursor, limit int) (eventlog.Page, error) {
	var out struct {
		Events  []PackageEvent `json:"events"`
		HasMore bool           `json:"hasMore"`
	}
	args := map[string]any{"handle": w.handle, "runId": runID, "after": after.ID, "limit": limit}
	if err := w.proc.Call(ctx, "list", args, &out); err != nil {
		return eventlog.Page{}, fmt.Errorf("devkit-%s: list run %s: %w", w.kind, runID, Classify("list", runID, nil, err))
	}
	now := time.Now()
	events := make([]eventlog.Event, 0, len(out.Events))
	for _, pe := range out.Events {
		e, err := fromPackage(runID, pe)
		if err != nil {
			return eventlog.Page{}, err
		}
		e.CommittedAt = w.observe(e.ID, now)
		events = append(events, e)
	}
	// The package cut the page and says whether more follow.
	p := eventlog.PageAfter(after, events, 0)
	p.More = out.HasMore
	return p, nil
}

// observe returns when this world first saw event id committed, recording
// at as that time if it had not seen it yet.
func (w *World) observe(id string, at time.Time) time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	if t, ok := w.seen[id]; ok {
		return t
	}
	w.seen[id] = at
	return at
}

// Store is where a runtime of the world's kind keeps its runs: a data
// directory of world-local's, an empty database of world-postgres's,
// world-vercel's backend (URL, Project) with a data directory for the
// in-process queue that stands in for @vercel/queue, or a World package's
// own store (Package, configured by Env) with a data directory for
// world-local's queue where the package's queue does not deliver in
// process.
type Store struct {
	Kind    Kind
	DataDir string
	URL     string
	// Project is the project id a Vercel store's requests carry.
	Project string
	// Package is the directory of the World package the runtime loads
	// instead of its kit's (package:… worlds): a third-party package
	// (Kind ThirdParty), or an upstream world-local or world-postgres at
	// the version the user named. "" runs the kit's own.
	Package string
	// Env is added to the runtime's environment (KEY=VALUE): what the
	// package reads its configuration from (--world-env).
	Env []string
	// CommitTimes, when set, reads the store's own commit times of a run
	// (a Vercel store: when its backend's DynamoDB acknowledged each write).
	CommitTimes func(ctx context.Context, runID string) ([]worlds.CommitTime, error)
}

// RuntimeStore returns a fresh store of the world's kind beside the world's
// own, for a runtime that opens the package itself (the devkit engine, one
// per host process): a directory of its own next to the world's data
// directory, or a new, empty database
// of the host's cluster (the runtime's package migrates it, whatever its
// version). A Vercel world's runtime shares its backend and project (the
// runs are the runtime's, with ids of its own, and its faults under the
// nemesis are the world's) and gets a directory for its queue; the
// caller (package devkitvercel) adds the backend's commit times. A
// package:… world's runtime loads the user's package (Store.Package) with
// its --world-env (Store.Env): world-local and world-postgres as above, a
// third-party package on its own store as its configuration names it (the
// same server as the world's: the runs have ids of their own), with a
// directory for world-local's queue. The store goes when the world's do
// (the storm's temp directory, the host's cluster).
func (w *World) RuntimeStore(ctx context.Context) (Store, error) {
	if err := w.usable(ctx); err != nil {
		return Store{}, err
	}
	var pkg string
	var env []string
	if l := w.host.cfg.Layout; l != nil { // a package:… world: the runtime loads the user's package
		env = l.Env
		switch w.kind {
		case Local:
			pkg = l.Local
		case Postgres:
			pkg = l.Postgres
		case ThirdParty:
			pkg = l.Package
		}
	}
	w.mu.Lock()
	w.runtimeStores++
	suffix := ""
	if w.runtimeStores > 1 {
		suffix = fmt.Sprintf("-%d", w.runtimeStores) // one runtime per host process: a store each
	}
	w.mu.Unlock()
	switch w.kind {
	case Local:
		return Store{Kind: Local, DataDir: filepath.Join(w.dir, "runtime-local"+suffix), Package: pkg, Env: env}, nil
	case Postgres:
		url, err := w.host.emptyDatabase(ctx)
		if err != nil {
			return Store{}, err
		}
		w.mu.Lock()
		w.runtimeURLs = append(w.runtimeURLs, url)
		w.mu.Unlock()
		return Store{Kind: Postgres, URL: url, Package: pkg, Env: env}, nil
	case Vercel:
		if w.dir == "" {
			return Store{}, errors.New("devkit-vercel: Options.Dir is empty: the runtime's queue needs a data directory")
		}
		return Store{Kind: Vercel, DataDir: filepath.Join(w.dir, "runtime-queue"+suffix), URL: w.backend.URL, Project: w.backend.Project}, nil
	case ThirdParty:
		if w.dir == "" || pkg == "" {
			return Store{}, fmt.Errorf("%s: a runtime needs the package's directory and a data directory for its queue", w.host.cfg.PackageName)
		}
		return Store{Kind: ThirdParty, DataDir: filepath.Join(w.dir, "runtime-queue"+suffix), Package: pkg, Env: env}, nil
	}
	return Store{}, fmt.Errorf("devkit: unknown kind %q", w.kind)
}

// Kept implements worlds.Keeper: with --keep on --pg-url's server, the
// devkit-postgres database that stays (and its runtime's, when one was
// made).
func (w *World) Kept() string {
	if w.kind != Postgres {
		return ""
	}
	var kept []string
	for _, u := range append([]string{w.dbURL}, w.runtimeURLs...) {
		if pc, err := pgconn.ParseConfig(u); err == nil {
			if k := w.host.kept(pc.Database); k != "" {
				kept = append(kept, k)
			}
		}
	}
	return strings.Join(kept, "; ")
}

// Close closes the package's instance; its files or database stay (the
// storm's temp directory and the host's cluster are removed with them).
func (w *World) Close() error {
	if w.closed.Swap(true) {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := w.proc.Call(ctx, "close", map[string]any{"handle": w.handle}, nil); err != nil && !errors.Is(err, sidecar.ErrExited) {
		return fmt.Errorf("devkit-%s: close: %w", w.kind, err)
	}
	return nil
}

var errClosed = errors.New("devkit: world is closed")

func (w *World) usable(ctx context.Context) error {
	if w.closed.Load() {
		return errClosed
	}
	return ctx.Err()
}

// Known fails with eventlog.ErrNoRun for a run this world did not create,
// and as every operation does on a closed world or an ended context.
func (w *World) Known(ctx context.Context, runID string) error { return w.known(ctx, runID) }

// known fails with eventlog.ErrNoRun for a run this world did not create.
func (w *World) known(ctx context.Context, runID string) error {
	if err := w.usable(ctx); err != nil {
		return err
	}
	w.mu.Lock()
	ok := w.runs[runID]
	w.mu.Unlock()
	if !ok {
		return fmt.Errorf("devkit-%s: run %s: %w", w.kind, runID, eventlog.ErrNoRun)
	}
	return nil
}
