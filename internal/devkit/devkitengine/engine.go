package devkitengine

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/stormctl/stormctl/internal/base/redact"
	"github.com/stormctl/stormctl/internal/devkit/devkitscen"
	"github.com/stormctl/stormctl/internal/engine"
	"github.com/stormctl/stormctl/internal/engines"
	"github.com/stormctl/stormctl/internal/eventlog"
	"github.com/stormctl/stormctl/internal/history"
	"github.com/stormctl/stormctl/internal/prodlog"
	"github.com/stormctl/stormctl/scenarios"
	"github.com/stormctl/stormctl/worlds"
	"github.com/stormctl/stormctl/worlds/devkitworld"
	"github.com/stormctl/stormctl/worlds/devkitworld/sidecar"
)

// Config configures a storm's devkit engines.
type Config struct {
	Channel Channel
	// CacheDir is where kits are installed (default: os.UserCacheDir).
	CacheDir string
	// Checkout is a vercel/workflow checkout (--devkit-dir) whose built
	// packages run instead of the published ones; "" runs the published.
	Checkout string
	// Hosts is how many host processes each cell's runs are spread over
	// (--hosts); 0: one per core the machine has (runtime.NumCPU), at
	// most engines.MaxHosts.
	Hosts int
	// Progress gets the lines a first install and build print.
	Progress io.Writer
	Logger   *slog.Logger
}

// HostsFor is how many host processes a cell gets when --hosts is n (0:
// one per core of the machine), at most engines.MaxHosts: each is a Node
// process with the runtime, its world and its queue, and one event loop,
// so one host is one core at most.
func HostsFor(n int) int {
	if n <= 0 {
		n = runtime.NumCPU()
	}
	return max(1, min(n, engines.MaxHosts))
}

// Opener opens a storm's devkit engines, one per cell, preparing each kit
// once (Open is a engines.Open).
type Opener struct {
	cfg  Config
	mu   sync.Mutex
	kits map[devkitworld.Kind]*Kit
}

// NewOpener returns an opener that prepares nothing until a cell opens.
func NewOpener(cfg Config) *Opener {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &Opener{cfg: cfg, kits: map[devkitworld.Kind]*Kit{}}
}

// runtimeStore is what a devkit world gives the engine: a store of its
// kind of its own (devkitworld.World.RuntimeStore).
type runtimeStore interface {
	RuntimeStore(ctx context.Context) (devkitworld.Store, error)
}

// ErrWorld is returned by Open for a cell whose world is not a devkit
// world: the runtime runs on the DevKit's own packages and on World
// packages (package:…) only.
var ErrWorld = errors.New("the devkit engine runs on devkit-local, devkit-postgres, devkit-vercel and package:… worlds only")

// ErrPackagePair is returned (wrapped, with the reason) by CheckPackage and
// Open for a package:… world the devkit engine cannot host as asked.
var ErrPackagePair = errors.New("the published runtime cannot host it")

// CoreSpec is the spec version the stable channel's @workflow/core speaks
// (4.8.9: SPEC_VERSION_CURRENT 3): a package:… world claiming a newer
// contract is refused (CheckPackage); an older one (spec 2, the
// 4.1.0-beta.2 packages) is started at its own (core starts a run at the
// world's specVersion, else at 2).
const CoreSpec = 3

// CheckPackage refuses, in one line, a package:… world the devkit engine
// cannot host: on a channel other than stable (the beta kits pin 5.0
// world packages and a core that asserts their spec range), from a
// --devkit-dir checkout (whose core is linked for devkit-local and
// devkit-postgres only), or with a contract newer than the stable core's
// (spec, nil when the package exports none). checkout is --devkit-dir.
func CheckPackage(ch Channel, checkout string, spec *int) error {
	switch {
	case ch != Stable && ch != "":
		return fmt.Errorf("%w: --devkit-channel %s: a package world runs on the stable channel's @workflow/core 4.8.9 (the beta kits pin their own 5.0 world packages); drop --devkit-channel", ErrPackagePair, ch)
	case checkout != "":
		return fmt.Errorf("%w: --devkit-dir %s: a package world runs on the published stable runtime (the checkout's core is linked for devkit-local and devkit-postgres only); drop --devkit-dir", ErrPackagePair, checkout)
	case spec != nil && *spec > CoreSpec:
		return fmt.Errorf("%w: its contract is specVersion %d, newer than the stable runtime's (@workflow/core 4.8.9 speaks %d); use --engine model", ErrPackagePair, *spec, CoreSpec)
	}
	return nil
}

// Open opens the engine of one cell: its kit, a fresh store of its
// world's kind, and a host process running the published runtime on it.
func (o *Opener) Open(ctx context.Context, s engines.Setup) (engines.Engine, error) {
	rs, ok := worlds.Inner(s.World).(runtimeStore)
	if !ok {
		return nil, fmt.Errorf("%w (cell %s)", ErrWorld, s.Key)
	}
	wf, err := devkitscen.Lookup(s.Scenario.Name)
	if err != nil {
		return nil, err
	}
	store, err := rs.RuntimeStore(ctx)
	if err != nil {
		return nil, fmt.Errorf("devkit engine: a store for cell %s: %w", s.Key, err)
	}
	if store.Package != "" {
		if err := CheckPackage(o.cfg.Channel, o.cfg.Checkout, nil); err != nil {
			return nil, fmt.Errorf("devkit engine: cell %s: %w", s.Key, err)
		}
	}
	kit, err := o.kit(ctx, store.Kind)
	if err != nil {
		return nil, err
	}
	return start(ctx, kit, rs, store, wf, s, HostsFor(o.cfg.Hosts))
}

// kit returns the kit of kind k, preparing it the first time.
func (o *Opener) kit(ctx context.Context, k devkitworld.Kind) (Kit, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if kit := o.kits[k]; kit != nil {
		return *kit, nil
	}
	cache := o.cfg.CacheDir
	if cache == "" {
		var err error
		if cache, err = os.UserCacheDir(); err != nil {
			return Kit{}, fmt.Errorf("devkit engine: no cache directory for its packages: %w", err)
		}
	}
	var kit Kit
	var err error
	if o.cfg.Checkout != "" {
		kit, err = FromCheckout(ctx, o.cfg.Checkout, cache, k, o.cfg.Progress)
	} else {
		kit, err = Prepare(ctx, cache, o.cfg.Channel, k, o.cfg.Progress)
	}
	if err != nil {
		return Kit{}, err
	}
	o.kits[k] = &kit
	return kit, nil
}

// Engine is one cell's published runtime, in host processes of its own
// (hostProc): a run and all its deliveries stay in the host it was started
// in (world-local's queue is in the process), and a new run goes to the
// host with the fewest runs. It implements engines.Engine, engines.Collector,
// engines.Schemer, engines.Describer and engines.Loader.
type Engine struct {
	kit    Kit
	wf     devkitscen.Workflow
	sink   worlds.Sink
	logger *slog.Logger
	// hosts are the cell's host processes, at least one.
	hosts []*hostProc
	// grace bounds each of Finish's calls to the host (finishGrace; tests
	// shorten it).
	grace time.Duration
	// scheme is what the hosts' spec says the package orders logs by
	// (schemeOf).
	scheme eventlog.Scheme

	mu   sync.Mutex
	runs map[string]*run
	// placed says which host ran each run, kept after Finish (Collect
	// reads the run's log from its host).
	placed map[string]*hostProc
	// ended are the runs whose terminal event the runtime wrote before
	// Start returned their id.
	ended map[string]bool
	// hostErr is why the host process is gone, once it is; hostGone when.
	hostErr  error
	hostGone time.Time
	// bug is the first notice that could not be recorded: the storm's
	// history would miss an operation, so the storm stops on it (Panicked).
	bug error
}

var (
	_ engines.Engine    = (*Engine)(nil)
	_ engines.Collector = (*Engine)(nil)
	_ engines.Schemer   = (*Engine)(nil)
	_ engines.Describer = (*Engine)(nil)
	_ host              = (*sidecar.Process)(nil)

	_ scenarios.TypedLogger = (*Engine)(nil)
)

// host is what the engine asks of its host process (a *sidecar.Process).
type host interface {
	Call(ctx context.Context, op string, args map[string]any, out any) error
	Stop() error
}

// hostProc is one host process of a cell: the published runtime on a
// store of its own.
type hostProc struct {
	// n numbers the cell's hosts from 1.
	n      int
	proc   host
	store  devkitworld.Store
	info   openInfo
	health *health
	// live counts the runs placed on it and not finished, liveRuns those
	// of them started (Engine.mu).
	live     int
	liveRuns map[*run]bool
}

// run is what the engine knows of one of its runs.
type run struct {
	token    string
	host     *hostProc
	started  time.Time
	done     chan struct{}
	doneOnce sync.Once
	endedAt  time.Time
	stats    history.RunStats
	// hostCPU, busy and recording are the run's shares of its host's CPU,
	// of its event loop's busy time and of the host's recording, report by
	// report (Engine.mu).
	hostCPU, busy, recording time.Duration
}

// end marks the run ended (its terminal event seen) at the first call
// (callers hold Engine.mu, which guards endedAt).
func (r *run) end() {
	r.doneOnce.Do(func() {
		r.endedAt = time.Now()
		close(r.done)
	})
}

// openInfo is the host's answer to open.
type openInfo struct {
	Versions map[string]string `json:"versions"`
	Spec     *int              `json:"spec"`
	// BatchCreates: the world has events.createBatch.
	BatchCreates bool   `json:"batchCreates"`
	Node         string `json:"node"`
	// Queue says which queue delivers the runtime's messages.
	Queue string `json:"queue"`
}

// start starts a cell's n host processes, each on a store of its own
// (the first is store; the others come from rs), and opens the runtime in
// each.
func start(ctx context.Context, kit Kit, rs runtimeStore, store devkitworld.Store, wf devkitscen.Workflow, s engines.Setup, n int) (*Engine, error) {
	e := &Engine{kit: kit, wf: wf, sink: s.Sink, logger: s.Logger, grace: finishGrace, runs: map[string]*run{}, ended: map[string]bool{}, placed: map[string]*hostProc{}}
	if e.logger == nil {
		e.logger = slog.New(slog.DiscardHandler)
	}
	for i := 1; i <= n; i++ {
		if i > 1 {
			var err error
			if store, err = rs.RuntimeStore(ctx); err != nil {
				e.Close()
				return nil, fmt.Errorf("devkit engine: a store for host %d of cell %s: %w", i, s.Key, err)
			}
		}
		h, err := e.startHost(ctx, kit, store, s, i)
		if err != nil {
			e.Close()
			return nil, err
		}
		e.hosts = append(e.hosts, h)
	}
	return e, nil
}

// startHost starts host process i of the cell and opens the runtime in it
// on store.
func (e *Engine) startHost(ctx context.Context, kit Kit, store devkitworld.Store, s engines.Setup, i int) (*hostProc, error) {
	h := &hostProc{n: i, store: store, health: &health{}, liveRuns: map[*run]bool{}}
	var env []string
	if len(store.Env) > 0 {
		env = append(os.Environ(), store.Env...)
	}
	proc, err := sidecar.StartCommand(sidecar.Command{Script: kit.Host, Dir: kit.Dir, Env: env, Notice: func(line []byte) { e.notice(h, line) }})
	if err != nil {
		return nil, err
	}
	h.proc = proc
	args := map[string]any{"world": string(store.Kind), "workflows": kit.Workflows, "steps": kit.Steps, "healthMs": healthInterval.Milliseconds()}
	if store.Package != "" {
		args["package"] = store.Package
	}
	if store.DataDir != "" {
		args["dataDir"] = store.DataDir
	}
	if store.URL != "" {
		args["url"] = store.URL
	}
	if store.Project != "" {
		args["project"] = store.Project
	}
	if err := proc.Call(ctx, "open", args, &h.info); err != nil {
		_ = proc.Stop()
		what := "world-" + string(store.Kind)
		if store.Package != "" {
			what = "the package in " + store.Package
		}
		return nil, fmt.Errorf("devkit engine: open the runtime on %s (cell %s, host %d): %w", what, s.Key, i, redact.Wrap(err, append(envValues(store.Env), store.Env...)...))
	}
	scheme, err := schemeOf(h.info.Spec)
	if err != nil {
		_ = proc.Stop()
		return nil, fmt.Errorf("devkit engine: the runtime on world-%s (cell %s): %w", store.Kind, s.Key, err)
	}
	if e.scheme == "" {
		e.scheme = scheme
	}
	if h.info.Versions == nil {
		h.info.Versions = map[string]string{}
	}
	if h.info.Node != "" {
		h.info.Versions["node"] = h.info.Node
	}
	return h, nil
}

// healthInterval is how often a host reports its health.
const healthInterval = 500 * time.Millisecond

// notice takes a line the host wrote of its own accord: an operation of
// the runtime at the world boundary goes to the storm's history and the
// run's evidence; a terminal event ends the run.
func (e *Engine) notice(h *hostProc, line []byte) {
	var n notice
	if err := json.Unmarshal(line, &n); err != nil {
		e.fail(fmt.Errorf("devkit engine: an unreadable notice from the host (a bug: the history would miss an operation): %w", err))
		return
	}
	if n.Notice == "health" && h != nil {
		var hn healthNotice
		if err := json.Unmarshal(line, &hn); err == nil {
			e.report(h, hn.sample())
		}
		return
	}
	if n.Notice == "invocation" && n.Kind == "flow" && n.RunID != "" && n.Body != nil && n.Skipped == "" {
		// The delivery's message, which a replay delivers again.
		e.sink.Record(history.Op{Kind: history.OpDeliver, Actor: n.Actor, RunID: n.RunID, Start: msTime(n.Start), End: msTime(n.End),
			Delivery: &history.Delivery{Body: n.Body.Data, ContentType: n.Body.ContentType, MessageID: n.MessageID, Attempt: n.Attempt}})
		return
	}
	if n.Notice != "op" || n.RunID == "" {
		return
	}
	e.mu.Lock()
	r := e.runs[n.RunID]
	token := ""
	if r != nil {
		token = r.token
	}
	e.mu.Unlock()
	var ops []history.Op
	var opErrs []error
	if n.Op == "createBatch" {
		var err error
		if ops, opErrs, err = batchOps(n, token); err != nil {
			e.fail(fmt.Errorf("devkit engine: a notice it cannot record (a bug: the history would miss an operation): %w", err))
			return
		}
	} else {
		op, opErr := toOp(n, token)
		if op.Kind == "" {
			e.fail(fmt.Errorf("devkit engine: a notice it cannot record (a bug: the history would miss an operation): %w", opErr))
			return
		}
		ops, opErrs = []history.Op{op}, []error{opErr}
	}
	// The events the package wrote inside the call committed before it
	// returned, and before the answer's snapshot was read: recorded first.
	implicit, implicitErr := implicitOps(n, token)
	for _, w := range implicit {
		e.sink.Record(w)
	}
	for _, op := range ops {
		e.sink.Record(op)
	}
	if snap, ok := snapshotOp(n, token); ok {
		e.sink.Record(snap)
	}
	if implicitErr != nil {
		e.fail(fmt.Errorf("devkit engine: a write it cannot record (a bug: the history would miss an operation): %w", implicitErr))
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	ends := false
	for i, op := range ops {
		if r != nil && (i == 0 || !op.BatchFailed) {
			// A batch call that failed whole is one failed call.
			account(&r.stats, op, opErrs[i])
		}
		ends = ends || opErrs[i] == nil && op.Kind == history.OpAppend && len(op.Wrote) == 1 && terminal(op.Wrote[0].Type)
	}
	for _, w := range implicit {
		ends = ends || w.RunID == n.RunID && terminal(w.Wrote[0].Type)
	}
	if !ends {
		return
	}
	if r != nil {
		r.end()
	} else {
		e.ended[n.RunID] = true
	}
}

// report keeps one of host h's health reports and splits its CPU, its
// loop's busy time and its recording's evenly among the runs live on h.
func (e *Engine) report(h *hostProc, s healthSample) {
	h.health.add(s)
	e.mu.Lock()
	defer e.mu.Unlock()
	n := time.Duration(len(h.liveRuns))
	if n == 0 {
		return
	}
	for r := range h.liveRuns {
		r.hostCPU += s.CPU / n
		r.busy += s.Busy / n
		r.recording += s.Recording / n
	}
}

// terminal says a run ends with an event of type t.
func terminal(t eventlog.Type) bool {
	return t == eventlog.RunCompleted || t == eventlog.RunFailed || t == runCancelled
}

// runCancelled is the package's event for a cancelled run: only the
// engine's Finish cancels one, a run that had not ended by its timeout.
const runCancelled eventlog.Type = "run_cancelled"

// account counts an operation into its run's evidence: when the store
// last answered, and when it last could not be reached.
func account(st *history.RunStats, op history.Op, err error) {
	switch {
	case err == nil, !errors.Is(err, eventlog.ErrUnavailable):
		st.LastStoreOK = op.End
		if errors.Is(err, eventlog.ErrRefused) {
			st.Refusals++
		}
	default:
		st.InfraErrors++
		st.LastUnavailable, st.LastUnavailableErr = op.End, err.Error()
	}
}

// Start starts a run of the cell's workflow with the scenario's input and
// a hook-token prefix of its own, through the runtime's start(); the
// runtime mints the run's id, which it returns. id, the runner's, is the
// token prefix.
func (e *Engine) Start(ctx context.Context, id string, input any) (string, error) {
	token := tokenOf(id)
	raw, err := devkitscen.WithToken(input, token)
	if err != nil {
		return "", fmt.Errorf("devkit engine: %s input: %w", e.wf.Scenario, err)
	}
	var out struct {
		RunID string `json:"runId"`
	}
	h := e.place()
	started := time.Now()
	if err := h.proc.Call(ctx, "start", map[string]any{"workflowId": e.wf.ID(), "input": json.RawMessage(raw)}, &out); err != nil {
		e.unplace(h)
		return "", e.transport("start", err)
	}
	if out.RunID == "" {
		e.unplace(h)
		return "", errors.New("devkit engine: the runtime's start() returned no run id")
	}
	r := &run{token: token, host: h, started: started, done: make(chan struct{})}
	e.mu.Lock()
	e.runs[out.RunID] = r
	e.placed[out.RunID] = h
	h.liveRuns[r] = true
	if e.ended[out.RunID] {
		delete(e.ended, out.RunID)
		r.end()
	}
	e.mu.Unlock()
	return out.RunID, nil
}

// place picks the host a new run starts on, and counts the run on it: the
// one with the fewest runs live, then the least busy lately, then the
// first.
func (e *Engine) place() *hostProc {
	now := time.Now()
	e.mu.Lock()
	defer e.mu.Unlock()
	best := e.hosts[0]
	bestELU, _, _ := best.health.recent(now, loadWindow)
	for _, h := range e.hosts[1:] {
		elu, _, _ := h.health.recent(now, loadWindow)
		if h.live < best.live || h.live == best.live && elu < bestELU {
			best, bestELU = h, elu
		}
	}
	best.live++
	return best
}

// unplace undoes place for a run that did not start.
func (e *Engine) unplace(h *hostProc) {
	e.mu.Lock()
	h.live--
	e.mu.Unlock()
}

// loadWindow is the span of a host's reports its recent load is read over.
const loadWindow = 3 * time.Second

// Load is how much room the engine has for another run (engines.Loader):
// the recent event-loop utilisation and loop delay of the host a new run
// would go to, and the runs live on it.
func (e *Engine) Load() engines.Load {
	now := time.Now()
	e.mu.Lock()
	defer e.mu.Unlock()
	var best *engines.Load
	for _, h := range e.hosts {
		elu, delay, known := h.health.recent(now, loadWindow)
		l := engines.Load{Busy: elu, Delay: delay, Known: known, Runs: h.live}
		if best == nil || l.Runs < best.Runs || l.Runs == best.Runs && l.Busy < best.Busy {
			best = &l
		}
	}
	if best == nil {
		return engines.Load{}
	}
	return *best
}

// tokenOf is a run's hook-token prefix: the runner's id for it, which is
// unique in the storm and holds no ':'.
func tokenOf(id string) string { return strings.ReplaceAll(id, ":", "-") }

// transport sorts an error of a call to the host: its process gone (or a
// connection the package lost) is the store's infrastructure, never an
// outcome.
func (e *Engine) transport(op string, err error) error {
	if errors.Is(err, sidecar.ErrExited) {
		e.mu.Lock()
		if e.hostErr == nil {
			e.hostErr, e.hostGone = err, time.Now()
		}
		e.mu.Unlock()
		return eventlog.Unavailable("devkit engine "+op, err)
	}
	return devkitworld.Classify(op, "", nil, err)
}

// ResumeHook resumes the run's hook of scenario token through the
// runtime's resumeHook(). A hook the world does not know is
// engine.ErrHookNotFound while the run lives and engine.ErrHookDisposed
// once it ended, as the drivers expect.
func (e *Engine) ResumeHook(ctx context.Context, runID, token string, payload any, _ string) error {
	r, err := e.run(runID)
	if err != nil {
		return err
	}
	err = r.host.proc.Call(ctx, "resumeHook", map[string]any{"token": devkitscen.HookToken(r.token, token), "payload": payload}, nil)
	var se *sidecar.Error
	switch {
	case err == nil:
		return nil
	case errors.As(err, &se) && hookNotFound(se):
		select {
		case <-r.done:
			return fmt.Errorf("%w: %s", engine.ErrHookDisposed, se.Message)
		default:
			return fmt.Errorf("%w: %s", engine.ErrHookNotFound, se.Message)
		}
	case ctx.Err() != nil:
		return ctx.Err()
	}
	return e.transport("resumeHook", err)
}

// hookNotFound says the package answered that no hook has the token: its
// HookNotFoundError, or a not-found answer about a hook. A run or a route
// not found ("Workflow run not found") is not a missing hook.
func hookNotFound(se *sidecar.Error) bool {
	msg := strings.ToLower(se.Message)
	return se.Name == "HookNotFoundError" || ((se.Status == 404 || strings.Contains(msg, "not found")) && strings.Contains(msg, "hook"))
}

// Log reads the run's whole log through the world's events.list, as a
// driver sees it: hook tokens are the scenario's.
func (e *Engine) Log(ctx context.Context, runID string) ([]eventlog.Event, error) {
	return e.LogOf(ctx, runID, nil)
}

// LogOf reads the run's log as Log does, with only the events of types
// (nil: all): the host leaves the others out of its answer
// (scenarios.TypedLogger; a scenario's driver reads a few types, some
// polling every 250 ms).
func (e *Engine) LogOf(ctx context.Context, runID string, types []eventlog.Type) ([]eventlog.Event, error) {
	r, err := e.run(runID)
	if err != nil {
		return nil, err
	}
	return e.read(ctx, r.host, runID, r.token, "driver", types)
}

// collectTimeout bounds the engine's read of an ended run.
const collectTimeout = 3 * time.Minute

// collectPage is the page size of the engine's own reads of a log.
const collectPage = 1000

// events reads a run's whole log under actor, from its host h.
func (e *Engine) events(ctx context.Context, h *hostProc, runID, token, actor string) ([]eventlog.Event, error) {
	return e.read(ctx, h, runID, token, actor, nil)
}

// read reads a run's log under actor, from its host h: the events of types
// only (nil: every event).
func (e *Engine) read(ctx context.Context, h *hostProc, runID, token, actor string, types []eventlog.Type) ([]eventlog.Event, error) {
	var out struct {
		Events []json.RawMessage `json:"events"`
	}
	// Pages as large as the packages serve: world-local reads the run's
	// whole directory for every page, so its default of 20 makes a long
	// run's read quadratic.
	args := map[string]any{"runId": runID, "actor": actor, "limit": collectPage}
	if types != nil {
		args["types"] = types
	}
	if err := h.proc.Call(ctx, "events", args, &out); err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, e.transport("events", err)
	}
	evs := make([]eventlog.Event, 0, len(out.Events))
	for _, raw := range out.Events {
		var pe devkitworld.PackageEvent
		if err := json.Unmarshal(raw, &pe); err != nil {
			return nil, fmt.Errorf("devkit engine: an event of run %s the package listed: %w", runID, err)
		}
		e := toEvent(pe, token)
		e.Package = raw // what a replay through the runtime serves again
		evs = append(evs, e)
	}
	return evs, nil
}

func (e *Engine) run(runID string) (*run, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	r := e.runs[runID]
	if r == nil {
		return nil, fmt.Errorf("devkit engine: run %s: %w", runID, eventlog.ErrNoRun)
	}
	return r, nil
}

// Done is closed once the runtime wrote the run's terminal event.
func (e *Engine) Done(runID string) <-chan struct{} {
	r, err := e.run(runID)
	if err != nil {
		ch := make(chan struct{})
		close(ch)
		return ch
	}
	return r.done
}

// finishGrace bounds each of Finish's calls to the host: the cancel of a
// run that did not end (the host waits up to 60 s for the run's deliveries
// in flight, so it may outlast it) and each read of the run's counts, which
// have budgets of their own so that a cancel that takes long cannot lose
// them.
const finishGrace = 30 * time.Second

// status is the host's account of a run.
type status struct {
	Status        string `json:"status"`
	Invocations   int64  `json:"invocations"`
	Steps         int64  `json:"steps"`
	MaxConcurrent int64  `json:"maxConcurrent"`
	Redeliveries  int64  `json:"redeliveries"`
	Recoveries    int64  `json:"recoveries"`
	// Inflight counts the run's deliveries still running.
	Inflight    int64 `json:"inflight"`
	Divergences []struct {
		Message string `json:"message"`
		EventID string `json:"eventId"`
	} `json:"divergences"`
	Retries  int64             `json:"retries"`
	Messages *history.Messages `json:"messages"`
}

// Finish cancels the run through the runtime if it has not ended (so
// nothing works on it afterwards) and returns what the runtime did for
// it, as the host counted it once the run's deliveries ended (settled):
// its first terminal event ends the run, but an invocation still in
// flight then may yet diverge, or write another run_failed, and the
// history records what it did. A run cut at its timeout keeps its counts:
// they are read at the cut, before the cancel, and again after it (the
// deliveries in flight at the cut end meanwhile), each read with a budget
// of its own; the later read that answered is the run's.
func (e *Engine) Finish(runID string) history.RunStats {
	r, err := e.run(runID)
	if err != nil {
		return history.RunStats{}
	}
	var (
		counts status
		known  bool
	)
	// The cut, when the run had not ended: the end of its life, before
	// the cancel and the settling that follow it.
	cut := time.Now()
	select {
	case <-r.done:
	default:
		// The cut: what the runtime did for the run until now.
		counts, known = e.counts(r.host, runID, "at the cut")
		ctx, cancel := context.WithTimeout(context.Background(), e.callGrace())
		if err := r.host.proc.Call(ctx, "cancel", map[string]any{"runId": runID}, nil); err != nil {
			err = e.transport("cancel", err) // a host gone is the run's infrastructure evidence
			e.logger.Warn("devkit engine: cancel a run that did not end", "run", runID, "err", err)
		}
		cancel()
	}
	if after, ok := e.settled(r.host, runID); ok {
		counts, known = after, true
	}
	if !known {
		// The run's invocation counts stay unknown (0), not "none seen".
		e.logger.Warn("devkit engine: the run's status could not be read: its invocation counts are missing", "run", runID)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	stats := r.stats
	if known {
		stats.Invocations, stats.Replays = counts.Invocations, counts.Invocations
		stats.MaxConcurrent = counts.MaxConcurrent
		stats.Recoveries, stats.Divergences = counts.Recoveries, int64(len(counts.Divergences))
		stats.Retries, stats.Wakes = counts.Retries, max(0, counts.Redeliveries-counts.Retries)
		stats.Messages = counts.Messages
	}
	// The run's life: from its start to its terminal event, or to the cut.
	end := r.endedAt
	if end.IsZero() {
		end = cut
	}
	harness := r.host.health.over(r.host.n, r.started, end)
	harness.HostCPUMs = float64(r.hostCPU) / float64(time.Millisecond)
	harness.LoopBusyMs = float64(r.busy) / float64(time.Millisecond)
	harness.RecordingMs = float64(r.recording) / float64(time.Millisecond)
	stats.Harness = &harness
	r.host.live--
	delete(r.host.liveRuns, r)
	if e.hostErr != nil && (r.endedAt.IsZero() || r.endedAt.After(e.hostGone)) {
		// The host went while the run was live: its infrastructure. A run
		// that ended before is not charged with a loss it never saw.
		stats.InfraErrors++
		stats.LastUnavailable = e.hostGone
		stats.LastUnavailableErr = e.hostErr.Error()
	}
	delete(e.runs, runID)
	return stats
}

// counts reads host h's counts of the run (status), within a budget of
// their own; when says which read it is, for the warning of one that
// failed.
func (e *Engine) counts(h *hostProc, runID, when string) (status, bool) {
	ctx, cancel := context.WithTimeout(context.Background(), e.callGrace())
	defer cancel()
	var st status
	if err := h.proc.Call(ctx, "status", map[string]any{"runId": runID}, &st); err != nil {
		err = e.transport("status", err)
		e.logger.Warn("devkit engine: read the run's counts "+when, "run", runID, "err", err)
		return status{}, false
	}
	return st, true
}

// settlePoll is the first wait between reads of a run's counts while
// deliveries of it run; each wait doubles, up to settlePollMax.
const (
	settlePoll    = 20 * time.Millisecond
	settlePollMax = 500 * time.Millisecond
)

// settled reads the host's counts of a run that ended (or was cancelled)
// once no delivery of it is in flight, reading again while the host says
// some are, for up to callGrace; then, or when a read fails, the last read
// that answered is the run's (with a warning when deliveries were still
// running: its counts may miss what they did).
func (e *Engine) settled(h *hostProc, runID string) (status, bool) {
	st, ok := e.counts(h, runID, "after it ended")
	deadline := time.Now().Add(e.callGrace())
	for wait := settlePoll; ok && st.Inflight > 0; wait = min(2*wait, settlePollMax) {
		left := time.Until(deadline)
		if left <= 0 {
			e.logger.Warn("devkit engine: the run's counts were read with deliveries of it still running: they may miss what those did",
				"run", runID, "inflight", st.Inflight)
			break
		}
		time.Sleep(min(wait, left))
		next, nok := e.counts(h, runID, "while its deliveries end")
		if !nok {
			break
		}
		st = next
	}
	return st, ok
}

// callGrace is the budget of each of Finish's calls to the host.
func (e *Engine) callGrace() time.Duration { return cmp.Or(e.grace, finishGrace) }

// Panicked is the first notice the engine could not record, nil if none:
// the host's own failures (its process gone) are its runs' infrastructure
// evidence, but a history missing an operation would let the checkers pass
// on what they never saw.
func (e *Engine) Panicked() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.bug
}

// fail keeps the first bug.
func (e *Engine) fail(err error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.bug == nil {
		e.bug = err
	}
}

// Close closes the runtime and stops the host process (and every process
// it started).
func (e *Engine) Close() {
	ctx, cancel := context.WithTimeout(context.Background(), e.callGrace())
	defer cancel()
	var wg sync.WaitGroup
	for _, h := range e.hosts {
		wg.Go(func() {
			if err := h.proc.Call(ctx, "close", nil, nil); err != nil && !errors.Is(err, sidecar.ErrExited) {
				e.logger.Warn("devkit engine: close the runtime", "host", h.n, "err", err)
			}
			if err := h.proc.Stop(); err != nil {
				e.logger.Warn("devkit engine: stop the host", "host", h.n, "err", err)
			}
		})
	}
	wg.Wait()
}

// Collect reads what the runtime's store holds of an ended run: its log
// through the package (actor "storm"), with the store's own commit times
// (world-postgres's commit timestamps, world-local's event files'
// modification times, the world-vercel backend's acknowledgements from its
// DynamoDB store).
func (e *Engine) Collect(ctx context.Context, runID string) worlds.Collected {
	// The runner gives a world 30 s; a host still busy with a storm's
	// other runs (world-local reads a run's whole directory per page) can
	// take longer to answer, which is load, not an unavailable store.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), collectTimeout)
	defer cancel()
	var c worlds.Collected
	token := tokenOf(runID)
	if r, err := e.run(runID); err == nil {
		token = r.token
	}
	e.mu.Lock()
	h := e.placed[runID]
	e.mu.Unlock()
	if h == nil {
		c.ReadErr = fmt.Errorf("devkit engine: run %s: %w", runID, eventlog.ErrNoRun)
		return c
	}
	c.Final, c.ReadErr = e.events(ctx, h, runID, token, "storm")
	if c.ReadErr != nil {
		return c
	}
	var times []worlds.CommitTime
	store := h.store
	switch {
	case store.CommitTimes != nil:
		times, c.CommitErr = store.CommitTimes(ctx, runID)
	case store.Kind == devkitworld.Postgres:
		times, c.CommitErr = devkitworld.PostgresCommitTimes(ctx, store.URL, runID)
	case store.Kind == devkitworld.Local:
		times, c.CommitErr = devkitworld.LocalCommitTimes(store.DataDir, runID)
	case store.Kind == devkitworld.ThirdParty:
		c.CommitErr = errors.New("devkit engine: the package's store has no commit clock stormctl can read")
	default:
		c.CommitErr = fmt.Errorf("devkit engine: no commit times of world-%s", store.Kind)
	}
	c.CommitSource = "world"
	if c.CommitErr == nil {
		c.CommitSource = worlds.PutCommitTimes(c.Final, times)
	}
	return c
}

// Scheme is the scheme the runtime's package orders logs by: slot ids from
// spec 6 on, ULIDs before.
func (e *Engine) Scheme() eventlog.Scheme { return e.scheme }

// schemeOf is the scheme of the runtime's spec version (core's
// SPEC_VERSION_CURRENT, as the host reports it): slot ids from spec 6 on,
// ULIDs before. No version is an error, not a guess: forensics would read
// the logs in the wrong order.
func schemeOf(spec *int) (eventlog.Scheme, error) {
	switch {
	case spec == nil:
		return "", errors.New("its @workflow/core reported no spec version (SPEC_VERSION_CURRENT): stormctl cannot tell whether its logs are ordered by ULID or by slot; use a kit of a published line (--devkit-channel) or a checkout whose core exports it")
	case *spec < 1:
		return "", fmt.Errorf("its @workflow/core reported spec version %d: not a version of the World contract", *spec)
	case *spec >= 6:
		return eventlog.SchemeSlot, nil
	}
	return eventlog.SchemeULID, nil
}

// Describe says what runs the cell: the channel's packages and their
// versions.
func (e *Engine) Describe() engines.Runtime {
	h := e.hosts[0]
	src := cmp.Or(e.kit.Source, "published")
	if h.store.Package != "" {
		src += "; world: the package in " + h.store.Package
	}
	return engines.Runtime{Engine: Name, Channel: string(e.kit.Channel), Source: src,
		Versions: h.info.Versions, Scheme: string(e.Scheme()), Queue: h.info.Queue, Hosts: len(e.hosts), Spec: h.info.Spec, BatchCreates: h.info.BatchCreates}
}

// envValues are the values of KEY=VALUE settings: what an error quoting
// them must not show the secrets of.
func envValues(env []string) []string {
	out := make([]string, 0, len(env))
	for _, kv := range env {
		_, v, _ := strings.Cut(kv, "=")
		out = append(out, v)
	}
	return out
}

// Name is how --engine and engine= name the devkit engine.
const Name = "devkit"

// Plugin is the devkit engine as the engine registry holds it: the
// published runtime on the DevKit's own worlds and package:… worlds.
type Plugin struct{}

var (
	_ engines.Plugin       = Plugin{}
	_ engines.Defaulter    = Plugin{}
	_ engines.StormChecker = Plugin{}
	_ engines.KnobChecker  = Plugin{}
	_ engines.WorldSupport = Plugin{}
	_ engines.Rerunner     = Plugin{}
	_ engines.PackageHost  = Plugin{}
)

// Name implements engines.Plugin.
func (Plugin) Name() string { return Name }

// Summary implements engines.Plugin.
func (Plugin) Summary() string {
	return "the published @workflow/core on devkit-local, devkit-postgres, devkit-vercel and package:… worlds; its defaults: --condition main, --latency none"
}

// Traits implements engines.Plugin: the published runtime.
func (Plugin) Traits() engines.Traits { return engines.Traits{Published: true} }

// Opener implements engines.Plugin: the engine on opts' channel, on the
// packages of the checkout given as --devkit-dir, else the published
// ones.
func (Plugin) Opener(opts engines.Options) (engines.Open, error) {
	ch, err := ParseChannel(opts.Channel)
	if err != nil {
		return nil, fmt.Errorf("--devkit-channel: %w", err)
	}
	return NewOpener(Config{Channel: ch, Hosts: opts.Hosts, Checkout: opts.Endpoints[devkitworld.DirFlag.Name], Progress: opts.Progress, Logger: opts.Logger}).Open, nil
}

// Defaults implements engines.Defaulter: a condition on the published
// runtime is main (its knobs are the runtime's own) and its windows emerge
// from the real stores (--latency none), unless the flags say otherwise.
func (Plugin) Defaults(given func(flag string) bool, d *engines.Defaults) {
	if !given("condition") {
		d.Conditions = []string{"main"}
	}
	if !given("latency") {
		d.Latency = "none"
	}
}

// CheckStorm implements engines.StormChecker: the channel, and each devkit
// world's package against it (CheckPair).
func (Plugin) CheckStorm(opts engines.Options, worldNames []string) error {
	ch, err := ParseChannel(opts.Channel)
	if err != nil {
		return fmt.Errorf("--devkit-channel: %w", err)
	}
	for _, w := range worldNames {
		if k, ok := devkitworld.KindOf(strings.TrimSpace(w)); ok {
			if err := CheckPair(ch, k); err != nil {
				return err
			}
		}
	}
	return nil
}

// CheckKnobs implements engines.KnobChecker: the published runtime runs
// with its own ids, scheme and policy, so only main's knobs apply.
func (Plugin) CheckKnobs(k engine.Knobs) error {
	if k.Policy != engine.DefaultPolicy() || k.Scheme != eventlog.SchemeULID {
		return fmt.Errorf("engine=%s runs the published runtime with its own ids, scheme and policy: only main's knobs apply (%s are the model's)", Name, modelKnobs())
	}
	return nil
}

// modelKnobs names the condition knobs the model runs and the published
// runtime does not (every listed knob but the engine's own), as a list in
// English.
func modelKnobs() string {
	var names []string
	for _, k := range engine.KnobTable() {
		if !k.Hidden && k.Name != "engine" {
			names = append(names, k.Name)
		}
	}
	if len(names) < 2 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
}

// Rerunner implements engines.Rerunner: a replay host on the kit of the
// runtime rt (ReplayerFor), under the user's cache directory. A runtime of
// packages it does not pin, or of versions its kit does not hold, wraps
// engines.ErrCannotRerun.
func (Plugin) Rerunner(ctx context.Context, rt engines.Runtime, world, scenario string, progress io.Writer) (engines.Rerun, error) {
	cache, err := os.UserCacheDir()
	if err != nil {
		return nil, fmt.Errorf("devkit engine: no cache directory for its packages: %w", err)
	}
	r, err := ReplayerFor(ctx, cache, rt, world, scenario, progress)
	if errors.Is(err, ErrRuntimeMismatch) || errors.Is(err, ErrNotPinned) {
		return nil, engines.CannotRerun(err)
	}
	if err != nil {
		return nil, err
	}
	return r, nil
}

// LogRuntime implements engines.Rerunner: the stable channel's packages
// for l's world, or the betas' on a world-local directory whose events
// have slot ids (5.0's spec 7).
func (Plugin) LogRuntime(l prodlog.Log) engines.Runtime {
	rt := engines.Runtime{Engine: Name, Channel: string(Stable), Source: "published"}
	if l.World == devkitworld.LocalName && len(l.Events) > 0 {
		if _, slot := eventlog.SlotPosition(l.Events[0].ID); slot {
			rt.Channel = string(Beta)
		}
	}
	return rt
}

// CheckPackage implements engines.PackageHost (CheckPackage on opts'
// channel and --devkit-dir). A channel it does not know is refused by
// CheckStorm, before any package opens.
func (Plugin) CheckPackage(opts engines.Options, spec *int) error {
	return CheckPackage(Channel(opts.Channel), opts.Endpoints[devkitworld.DirFlag.Name], spec)
}

// Support implements engines.WorldSupport.
func (Plugin) Support(world string) string { return Support(world) }
