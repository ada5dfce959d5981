package devkitvercel

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/stormctl/stormctl/internal/eventlog"
	"github.com/stormctl/stormctl/internal/nemesis"
	"github.com/stormctl/stormctl/worlds"
	"github.com/stormctl/stormctl/worlds/devkitworld"
	"github.com/stormctl/stormctl/worlds/vercel/backend"
	"github.com/stormctl/stormctl/worlds/vercel/dynamo"
)

// Name is the world's name in the registry.
const Name = devkitworld.VercelName

// ErrNotImplemented is matched by the error SelfCheck returns once the
// package called an endpoint the emulation does not implement: the machine
// is not short of anything, but stormctl is (exit 3, infrastructure).
var ErrNotImplemented = worlds.Prerequisite("the world-vercel backend emulation does not implement an endpoint the package called")

// Host owns what the devkit-vercel worlds of one stormctl share: the
// devkit sidecar that runs the package, and the backend server (started on
// the first Open) every World's tenant is served by.
type Host struct {
	dk     *devkitworld.Host
	logger *slog.Logger

	mu       sync.Mutex
	srv      *backend.Server
	url      string
	projects int
	stopped  bool
}

// NewHost returns a host that starts nothing until a world opens.
func NewHost(cfg devkitworld.Config) *Host {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &Host{dk: devkitworld.NewHost(cfg), logger: cfg.Logger}
}

// server returns the backend server, started the first time, and a new
// project id.
func (h *Host) server() (*backend.Server, string, string, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.stopped {
		return nil, "", "", errors.New("devkit-vercel: the host is stopped")
	}
	if h.srv == nil {
		srv := backend.NewServer(h.logger)
		u, err := srv.Start("127.0.0.1:0")
		if err != nil {
			return nil, "", "", fmt.Errorf("devkit-vercel: %w", err)
		}
		h.srv, h.url = srv, u
	}
	h.projects++
	return h.srv, h.url, fmt.Sprintf("prj_stormctl%d", h.projects), nil
}

// Calls are the endpoints the package called so far (nil before the
// first Open).
func (h *Host) Calls() []backend.Call {
	h.mu.Lock()
	srv := h.srv
	h.mu.Unlock()
	if srv == nil {
		return nil
	}
	return srv.Calls()
}

// Stop stops the sidecar and the backend server.
func (h *Host) Stop() error {
	h.mu.Lock()
	srv := h.srv
	h.stopped, h.srv = true, nil
	h.mu.Unlock()
	errs := []error{h.dk.Stop()}
	if srv != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		errs = append(errs, srv.Shutdown(ctx))
		cancel()
	}
	return errors.Join(errs...)
}

// World is one devkit-vercel world: the package's storage, reached through
// the sidecar, against a tenant of the backend of its own.
type World struct {
	*devkitworld.World
	srv     *backend.Server
	base    string
	project string
	tenant  *backend.Tenant
	store   *dynamo.Store
	dyn     *dynamo.Embedded
	// Under the nemesis: gates in front of the tenant and of the
	// DynamoDB-API server, a proxy between the store and that server.
	tenantGate, dynamoGate *nemesis.Gate
	proxy                  *nemesis.Proxy
	closed                 atomic.Bool
}

var (
	_ worlds.World       = (*World)(nil)
	_ worlds.CommitTimes = (*World)(nil)
	_ worlds.SelfChecker = (*World)(nil)
	_ nemesis.Targeter   = (*World)(nil)
)

// Open opens a World: a tenant (a project id, an embedded DynamoDB-API
// server, a store on it) on the host's backend server, and the package's
// storage against it in the host's sidecar. opts.Latency is the tenant's
// window between minting an id and writing its event, spent in this
// process (a worlds.WindowHolder holds it); opts.Seed seeds its ids.
func Open(ctx context.Context, h *Host, opts worlds.Options) (_ *World, err error) {
	srv, base, project, err := h.server()
	if err != nil {
		return nil, err
	}
	w := &World{srv: srv, base: base, project: project}
	defer func() {
		if err != nil {
			w.release()
		}
	}()
	var wrap func(http.Handler) http.Handler
	if opts.Nemesis {
		wrap = func(next http.Handler) http.Handler {
			w.dynamoGate = nemesis.NewGate(next, opts.Seed+1)
			return w.dynamoGate
		}
	}
	if w.dyn, err = dynamo.StartEmbeddedWrapped(wrap); err != nil {
		return nil, fmt.Errorf("devkit-vercel: %w", err)
	}
	endpoint := w.dyn.URL()
	if opts.Nemesis {
		u, _ := url.Parse(endpoint)
		if w.proxy, err = nemesis.NewProxy(u.Host); err != nil {
			return nil, fmt.Errorf("devkit-vercel: %w", err)
		}
		u.Host = w.proxy.Addr()
		endpoint = u.String()
	}
	// minidyn copies whole tables on every transaction and scans one on
	// every Query: tables per run keep both to the run's size.
	if w.store, err = dynamo.Open(ctx, dynamo.Config{Endpoint: endpoint, StaticCredentials: true, TablePerRun: true}); err != nil {
		return nil, fmt.Errorf("devkit-vercel: %w", err)
	}
	if w.tenant, err = backend.NewTenant(backend.TenantConfig{Store: w.store, Project: project, Latency: opts.Latency, Seed: opts.Seed}); err != nil {
		return nil, fmt.Errorf("devkit-vercel: %w", err)
	}
	var h2 http.Handler = w.tenant
	if opts.Nemesis {
		w.tenantGate = nemesis.NewGate(w.tenant, opts.Seed+2)
		h2 = w.tenantGate
	}
	srv.Register(project, h2)
	dopts := opts
	dopts.Nemesis = false // the faults are the tenant's, above
	if w.World, err = devkitworld.OpenVercel(ctx, h.dk, devkitworld.Backend{URL: base, Project: project}, dopts); err != nil {
		return nil, err
	}
	return w, nil
}

// release stops the tenant and what it started.
func (w *World) release() {
	w.srv.Unregister(w.project)
	if w.store != nil {
		_ = w.store.Close()
	}
	if w.proxy != nil {
		_ = w.proxy.Close()
	}
	if w.dyn != nil {
		_ = w.dyn.Close()
	}
}

// RuntimeStore returns the store a runtime on this World uses (the devkit
// engine): the World's own backend and project, with a directory for the
// runtime's in-process queue, and the tenant's commit times (when its
// DynamoDB store acknowledged each write, Source "server").
func (w *World) RuntimeStore(ctx context.Context) (devkitworld.Store, error) {
	st, err := w.World.RuntimeStore(ctx)
	if err != nil {
		return devkitworld.Store{}, err
	}
	st.CommitTimes = func(_ context.Context, runID string) ([]worlds.CommitTime, error) {
		return w.tenant.CommitTimes(runID), nil
	}
	return st, nil
}

// BackendURL is the base URL of the backend server the World's package
// calls (the package appends /api).
func (w *World) BackendURL() string { return w.base }

// Close closes the package's storage and stops the tenant. A second Close
// is harmless.
func (w *World) Close() error {
	if w.closed.Swap(true) {
		return nil
	}
	err := w.World.Close()
	w.release()
	return err
}

// CommitTimes implements worlds.CommitTimes with the backend's
// observations (Source "server"): when the store acknowledged each write,
// as the vercel world's ingest server reports them. DynamoDB keeps no
// commit timestamp.
func (w *World) CommitTimes(ctx context.Context, runID string) ([]worlds.CommitTime, error) {
	if err := w.Known(ctx, runID); err != nil {
		return nil, err
	}
	return w.tenant.CommitTimes(runID), nil
}

// SelfCheck implements worlds.SelfChecker: once the package called an
// endpoint the emulation does not implement, an error (ErrNotImplemented)
// with the line it was answered with.
func (w *World) SelfCheck() error {
	if err := w.World.SelfCheck(); err != nil {
		return err
	}
	var lines []string
	for _, c := range w.srv.Calls() {
		if !c.Implemented {
			lines = append(lines, fmt.Sprintf("%s (%d requests)", c.Line, c.Count))
		}
	}
	if len(lines) == 0 {
		return nil
	}
	return fmt.Errorf("%s: %w: %s", Name, ErrNotImplemented, strings.Join(lines, "; "))
}

// Targets implements nemesis.Targeter: ingest-503 on the tenant's gate,
// dynamo-pause on its DynamoDB-API server's, latency on the proxy in front
// of that server. A World opened without the nemesis has none.
func (w *World) Targets() []nemesis.Target {
	if w.tenantGate == nil {
		return nil
	}
	return []nemesis.Target{
		w.tenantGate.FailTarget(nemesis.Ingest503, "world-vercel backend (project "+w.project+")"),
		w.dynamoGate.HoldTarget(nemesis.DynamoPause, "DynamoDB-API server "+w.dyn.URL()),
		w.proxy.Target("DynamoDB endpoint"),
	}
}

// Entry describes devkit-vercel to the registry, opened on h.
func Entry(h *Host) worlds.Entry {
	lim := devkitworld.Limits(devkitworld.Vercel)
	return worlds.Entry{
		Name: Name,
		Description: "the published @workflow/world-vercel's storage, run in a Node sidecar against stormctl's emulation of its backend " +
			"(v4 frames, CBOR; ids minted by the backend, slot ids at commit for 5.0's spec 7 runs) over an embedded DynamoDB-API server",
		Schemes:     []string{string(eventlog.SchemeULID)},
		Limits:      lim,
		Engines:     []string{"devkit"},
		RunsPerCore: 4,
		Faults:      []nemesis.Kind{nemesis.Ingest503, nemesis.DynamoPause, nemesis.Latency},
		Open: func(ctx context.Context, opts worlds.Options) (worlds.World, error) {
			w, err := Open(ctx, h, opts)
			if err != nil {
				return nil, err
			}
			return w, nil
		},
	}
}

// Package is devkit-vercel as stormctl builds it in: its worlds on one
// host (a sidecar and a backend server of their own).
var Package = worlds.Package{Register: func(r *worlds.Registry, s worlds.Setup, logger *slog.Logger) func() error {
	h := NewHost(devkitworld.Config{Progress: s.Progress, Logger: logger})
	r.Register(Entry(h))
	return h.Stop
}}
