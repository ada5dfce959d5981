package storm

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"io/fs"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/stormctl/stormctl/clock"
	"github.com/stormctl/stormctl/conditions"
	"github.com/stormctl/stormctl/engine"
	"github.com/stormctl/stormctl/eventlog"
	"github.com/stormctl/stormctl/explain"
	"github.com/stormctl/stormctl/forensics"
	"github.com/stormctl/stormctl/history"
	"github.com/stormctl/stormctl/internal/crash"
	"github.com/stormctl/stormctl/internal/leftover"
	"github.com/stormctl/stormctl/nemesis"
	"github.com/stormctl/stormctl/reports"
	"github.com/stormctl/stormctl/reports/plots"
	"github.com/stormctl/stormctl/reports/table"
	"github.com/stormctl/stormctl/scenarios"
	"github.com/stormctl/stormctl/stormdir"
	"github.com/stormctl/stormctl/verdict"
	"github.com/stormctl/stormctl/worlds"
)

// ErrInterrupted is returned with the partial summary of a storm whose
// context ended before every run finished.
var ErrInterrupted = errors.New("storm interrupted")

// Progress receives live updates; implementations render them.
type Progress interface {
	Start(cells []history.CellKey, runsPerCell int)
	Update(c reports.Cell)
	Finish()
}

// Deps are the runner's collaborators.
type Deps struct {
	Worlds   *worlds.Registry
	Logger   *slog.Logger
	Progress Progress
	Version  string
}

// keepFiles removes the worlds' temp dir after the storm, unless keep
// (--keep): then a dir the worlds left files in stays, and the user is told
// where, and an empty one (worlds whose stores are servers, like --pg-url's)
// is removed, since keeping it would keep nothing.
func keepFiles(dir string, keep bool, logger *slog.Logger) {
	if keep {
		entries, err := os.ReadDir(dir)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return
		case err != nil:
			logger.Warn("--keep: the worlds' temp dir could not be read; it stays", "dir", dir, "err", err)
			return
		case len(entries) > 0:
			logger.Warn("--keep: the worlds' files stay after the storm; remove them when done", "dir", dir)
			return
		}
	}
	os.RemoveAll(dir)
}

// cell is one cell's world, runtime and scenario.
type cell struct {
	key   history.CellKey
	cond  conditions.Condition
	sc    scenarios.Scenario
	world worlds.World
	rt    *engine.Runtime
	stop  context.CancelFunc
}

// runner is one storm in progress.
type runner struct {
	plan    *Plan
	deps    Deps
	out     *stormdir.Writer
	sink    *historySink
	started time.Time // the storm's first start: every run id's time
	mu      sync.Mutex
	summary *reports.Summary
	// tally counts each run into summary's cells and gathers their commit
	// order and mint-to-commit windows, for the cells and the plots.
	tally *reports.Tally
	plots []string
	// timelines counts the timelines written per cell and class.
	timelines map[history.CellKey]map[string]int
	// meta is storm.json; nem the nemesis, nil when off (nemesis.go).
	meta stormdir.Meta
	nem  *nemesis.Runner
}

// Run executes the plan's storm and returns its summary. Artifacts are
// appended to plan.Config.Out as runs finish. When ctx ends early the
// partial summary comes back with ErrInterrupted.
func Run(ctx context.Context, plan *Plan, deps Deps) (*reports.Summary, error) {
	if deps.Logger == nil {
		deps.Logger = slog.New(slog.DiscardHandler)
	}
	cfg := plan.Config
	keys := plan.Cells
	meta := stormdir.Meta{Schema: reports.SchemaVersion, Version: deps.Version, Config: cfg, Conditions: plan.Conditions,
		Cells: keys, PageSizes: plan.PageSizes, RunsInFlight: plan.RunsInFlight, GoMaxProcs: runtime.GOMAXPROCS(0), Started: time.Now().UTC(), Latency: plan.Latency.Windows(),
		Endpoints: plan.Endpoints}
	out, prior, err := openArtifacts(&meta, plan.Resume)
	if err != nil {
		return nil, err
	}
	r := &runner{
		plan: plan, deps: deps, out: out, started: meta.Started, meta: meta,
		sink:      &historySink{byRun: map[string][]history.Op{}, out: out},
		summary:   reports.NewSummary(keys),
		timelines: map[history.CellKey]map[string]int{},
	}
	r.tally = reports.NewTally(r.summary)
	if err := r.addPrior(prior); err != nil {
		out.Close()
		return nil, err
	}
	tmp, err := os.MkdirTemp("", "stormctl-")
	if err == nil && !cfg.Keep {
		// A killed storm cannot remove tmp: the next one does (leftover.Sweep).
		err = leftover.Claim(tmp, leftover.KindStorm)
	}
	if err != nil {
		out.Close()
		os.RemoveAll(tmp)
		return nil, fmt.Errorf("create a temp dir for the worlds: %w", err)
	}
	cells, openErr := r.openCells(ctx, tmp)
	defer func() {
		for _, c := range cells {
			c.stop()
			c.rt.Wait()
			c.world.Close()
			if k, ok := worlds.Inner(c.world).(worlds.Keeper); ok && cfg.Keep {
				if kept := k.Kept(); kept != "" {
					deps.Logger.Warn("--keep: the cell's store stays after the storm; drop it when done", "cell", c.key.String(), "kept", kept)
				}
			}
		}
		keepFiles(tmp, cfg.Keep, deps.Logger)
	}()
	if openErr != nil {
		out.Close()
		return nil, openErr
	}
	if err := r.startNemesis(ctx, cells); err != nil {
		out.Close()
		return nil, err
	}
	if deps.Progress != nil {
		deps.Progress.Start(keys, cfg.Shard.RunsPerCell(cfg.Runs))
		r.showPrior()
	}
	runErr := r.runAll(ctx, cells)
	r.stopNemesis()
	if deps.Progress != nil {
		deps.Progress.Finish()
	}
	r.summary.Ended = time.Now().UTC()
	r.mu.Lock()
	r.tally.Finish()
	r.mu.Unlock()
	r.summary.Interrupted = ctx.Err() != nil || runErr != nil // runs are missing: --resume runs them
	written, err := plots.Write(cfg.Out, r.summary, r.plotData())
	if err != nil {
		deps.Logger.Warn("plots", "err", err)
	}
	r.plots = written
	if err := r.writeSummary(); err != nil && runErr == nil {
		runErr = err
	}
	if err := out.Close(); err != nil && runErr == nil {
		runErr = err
	}
	if runErr == nil && ctx.Err() != nil {
		runErr = ErrInterrupted
	}
	return r.summary, runErr
}

// openCells opens one world and one runtime per cell.
func (r *runner) openCells(ctx context.Context, tmp string) ([]*cell, error) {
	cfg := r.plan.Config
	var cells []*cell
	for i, k := range r.plan.Cells {
		entry, err := r.deps.Worlds.Lookup(k.World)
		if err != nil {
			return cells, err
		}
		sc, err := scenarios.Lookup(k.Scenario)
		if err != nil {
			return cells, err
		}
		lat, err := worlds.ParseProfile(cfg.Latency, cfg.Seed+uint64(i))
		if err != nil {
			return cells, err
		}
		w, err := entry.Open(ctx, worlds.Options{Dir: filepath.Join(tmp, k.Dir()), Latency: lat, Seed: cfg.Seed + uint64(i), Nemesis: cfg.Nemesis.On()})
		if err != nil {
			return cells, fmt.Errorf("open world %s: %w", k.World, err)
		}
		cond := r.plan.Conditions[k.Condition]
		rctx, stop := context.WithCancel(ctx)
		rec := worlds.Record(w, r.sink)
		rt := engine.New(rctx, engine.Config{
			World: rec, Program: sc.Program, Steps: sc.Steps, Knobs: cond.Knobs,
			Concurrency: cfg.Concurrency, PageSize: r.plan.PageSizes[PageSizeKey(k.World, cond.Knobs.Scheme)],
			TimerTick: timerTick(cfg.TimeScale), SealAfter: sealAfter(cond.Knobs.Policy, cfg.TimeScale),
			Logger: r.deps.Logger,
		})
		cells = append(cells, &cell{key: k, cond: cond, sc: sc, world: rec, rt: rt, stop: stop})
	}
	return cells, nil
}

// runAll runs every run of every cell, interleaved across cells so that all
// conditions share the machine's load alike, at most RunsInFlight at once.
func (r *runner) runAll(ctx context.Context, cells []*cell) error {
	cfg := r.plan.Config
	// The first error (an artifact that cannot be written, a panic) stops
	// the storm: the runs still in flight end unrecorded, as on Ctrl-C.
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(r.plan.RunsInFlight)
	for idx := range cfg.Runs {
		if !cfg.Shard.Owns(idx) {
			continue // another shard's run index (--shard)
		}
		for _, c := range cells {
			if r.plan.Resume.Recorded(c.key, idx) {
				continue // finished before the storm was interrupted (--resume)
			}
			if gctx.Err() != nil {
				return g.Wait()
			}
			g.Go(crash.Go(func() error { return r.runOne(gctx, c, idx) }))
		}
	}
	return g.Wait()
}

// runOne runs one workflow run to its end (or timeout) and records it.
func (r *runner) runOne(ctx context.Context, c *cell, idx int) error {
	if ctx.Err() != nil {
		return nil
	}
	cfg := r.plan.Config
	runID := RunID(cfg.Seed, r.started, c.key, idx)
	r.sink.begin(runID)
	env := scenarios.Env{Scale: cfg.TimeScale, Seed: cfg.Seed, MaxFactDelay: r.plan.Latency.MaxFactDelay(), Rounds: cfg.Rounds}
	started := time.Now()
	rctx, cancel := context.WithTimeout(ctx, cfg.Timeout)
	defer cancel()
	var driveErr error
	startErr := c.rt.Start(rctx, runID, c.sc.Input(env, idx))
	if startErr == nil {
		dctx, stopDriver := context.WithCancel(rctx)
		var dg errgroup.Group
		dg.Go(crash.Go(func() error { return c.sc.Drive(dctx, hooks{c.rt}, runID, env) }))
		select {
		case <-c.rt.Done(runID):
		case <-rctx.Done():
		}
		stopDriver()
		driveErr = dg.Wait()
	}
	// The run's end, for its outcome's evidence: before Finish, which may
	// wait out writes that outlive the run (slot scheme, writeGrace).
	stopped := time.Now()
	stats := c.rt.Finish(runID)
	var bug *crash.Error
	if errors.As(driveErr, &bug) {
		r.sink.end(runID) // a bug: the run measured nothing, the storm stops
		return driveErr
	}
	if err := c.rt.Panicked(); err != nil {
		r.sink.end(runID)
		return err
	}
	if ctx.Err() != nil {
		r.sink.end(runID) // interrupted: an unfinished run is not an outcome
		return nil
	}
	ended := time.Now()

	// The run ended: read its final log even if the storm is being
	// interrupted meanwhile, so a finished run is never recorded as infra.
	rctx2, cancel2 := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel2()
	final, readErr := readFinal(worlds.WithActor(rctx2, "storm"), c.world, runID)
	outcome, detail := decide(c.sc, final, readErr, stats, stopped)
	source := storeCommitTimes(rctx2, c.world, runID, final, r.deps.Logger)
	if startErr != nil {
		outcome, detail = history.Failed, startErr.Error()
		if errors.Is(startErr, eventlog.ErrUnavailable) {
			outcome = history.Infra
		}
	}
	if driveErr != nil && outcome == history.Stuck {
		detail += "; driver: " + driveErr.Error()
	}
	ops := r.sink.end(runID)
	an := forensics.AnalyzeRun(forensics.RunInput{Scheme: c.cond.Knobs.Scheme, Final: final, Ops: ops,
		StoreCommitTimes: source == "store"})
	rec := reports.RunRecord{
		CellKey: c.key, Index: idx,
		RunID: runID, Outcome: outcome, Detail: detail, Started: started.UTC(), Ended: ended.UTC(),
		Millis: ended.Sub(started).Milliseconds(), Events: len(final), Stats: stats,
		CommitSource: source,
		Guard:        guardCounts(rctx2, c.world, runID, c.cond.Knobs.Guard),
		Findings:     an.Findings,
		Faults:       r.faultsOf(c.key, started, time.Now()),
	}
	rec.Verdicts = verdict.Judge(verdict.Input{RunID: runID, Program: c.sc.Program, Knobs: c.cond.Knobs,
		Final: final, Ops: ops, Commits: an.Commits, Check: c.sc.Check})
	rec.Judged = true
	if explain.Explains(rec.Outcome) {
		in := ExplainInput(c.cond, c.sc, r.plan.Config.TimeScale, rec, final, ops)
		ex := explain.Classify(in)
		rec.Class = ex.Class
		if r.timelineWanted(c.key, ex.Class) {
			path, err := WriteTimeline(cfg.Out, in, ex)
			if err != nil {
				r.deps.Logger.Warn("timeline", "run", runID, "err", err)
			}
			rec.Timeline = path
		}
	}
	// runs.jsonl's line comes last: a run it lists has its history and
	// final log on disk, and a run it does not list is run again by
	// --resume, its partial history and final log dropped.
	if err := r.out.WriteHistory(ops); err != nil {
		return err
	}
	if err := r.out.WriteEvents(c.key, runID, final); err != nil {
		return err
	}
	if err := r.out.WriteRun(rec); err != nil {
		return err
	}
	r.mu.Lock()
	snapshot := *r.tally.Add(rec, an.Order, an.Commits)
	r.mu.Unlock()
	if r.deps.Progress != nil {
		r.deps.Progress.Update(snapshot)
	}
	if err := r.writeSummary(); err != nil {
		return err
	}
	return selfCheck(c)
}

// selfCheck asks a cell's world whether it still does what it was opened
// to do (worlds.SelfChecker), after a run it recorded: an error stops the
// storm, the runs recorded so far kept.
func selfCheck(c *cell) error {
	sc, ok := worlds.Inner(c.world).(worlds.SelfChecker)
	if !ok {
		return nil
	}
	if err := sc.SelfCheck(); err != nil {
		return fmt.Errorf("cell %s: %w", c.key, err)
	}
	return nil
}

// timelineWanted reserves a timeline for a run of class in cell k while the
// cell has fewer than reports.MaxTimelines of that class.
func (r *runner) timelineWanted(k history.CellKey, class string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.timelines[k] == nil {
		r.timelines[k] = map[string]int{}
	}
	if class == "" || r.timelines[k][class] >= reports.MaxTimelines {
		return false
	}
	r.timelines[k][class]++
	return true
}

// plotData is the cells' windows in milliseconds, for the plots.
func (r *runner) plotData() plots.Data {
	r.mu.Lock()
	defer r.mu.Unlock()
	d := plots.Data{Windows: map[history.CellKey]map[eventlog.Type][]float64{}}
	for _, k := range r.tally.Keys() {
		byType := r.tally.Samples(k)
		for _, xs := range byType {
			for i := range xs {
				xs[i] /= 1e6
			}
		}
		d.Windows[k] = byType
	}
	return d
}

func (r *runner) writeSummary() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	md, err := table.SummaryMarkdown(r.summary, r.plots)
	if err != nil {
		return err
	}
	return r.out.WriteSummary(r.summary, md)
}

// sealAfter is a condition's seal timeout at the storm's time scale.
func sealAfter(p engine.Policy, scale float64) time.Duration {
	d := p.SealAfter
	if d <= 0 {
		d = engine.DefaultSealAfter
	}
	return time.Duration(float64(d) * scale)
}

// readFinal reads a run's stored log without the density assertion when the
// world can, so the forensics see what a reader would refuse. An
// unreachable store is asked again until ctx ends: a run that ended is
// never recorded as infra because a fault was passing when it was read.
func readFinal(ctx context.Context, w worlds.World, runID string) ([]eventlog.Event, error) {
	for {
		final, err := readFinalOnce(ctx, w, runID)
		if !errors.Is(err, eventlog.ErrUnavailable) || clock.Sleep(ctx, 250*time.Millisecond) != nil {
			return final, err
		}
	}
}

func readFinalOnce(ctx context.Context, w worlds.World, runID string) ([]eventlog.Event, error) {
	if d, ok := worlds.Inner(w).(worlds.Dumper); ok {
		return d.Dump(ctx, runID)
	}
	var out []eventlog.Event
	after := eventlog.Cursor{}
	for {
		p, err := w.List(ctx, runID, after, 1000)
		if err != nil {
			return out, err
		}
		out = append(out, p.Events...)
		if !p.More || len(p.Events) == 0 {
			return out, nil
		}
		after = p.Next
	}
}

// guardCounts asks the world how its legacy guard fared on a run.
func guardCounts(ctx context.Context, w worlds.World, runID string, guard eventlog.Guard) *history.GuardCounts {
	if guard == eventlog.GuardNone {
		return nil
	}
	gc, ok := worlds.Inner(w).(worlds.GuardCounter)
	if !ok {
		return nil
	}
	g, err := gc.GuardCounts(ctx, runID)
	if err != nil {
		return nil
	}
	return &g
}

// storeCommitTimes puts the store's own commit times on final when the world
// has them (worlds.CommitTimes with Source "store") and says whose times the
// run's forensics use: "store" or "world".
func storeCommitTimes(ctx context.Context, w worlds.World, runID string, final []eventlog.Event, log *slog.Logger) string {
	ct, ok := worlds.Inner(w).(worlds.CommitTimes)
	if !ok {
		return "world"
	}
	times, err := ct.CommitTimes(ctx, runID)
	if err != nil {
		log.Debug("no store commit times", "run", runID, "err", err)
		return "world"
	}
	at := make(map[string]time.Time, len(times))
	for _, t := range times {
		if t.Source != "store" {
			return "world"
		}
		at[t.EventID] = t.At
	}
	for i := range final {
		final[i].CommittedAt = at[final[i].ID]
	}
	return "store"
}

// hooks adapts a runtime to what scenario drivers may do.
type hooks struct{ rt *engine.Runtime }

func (h hooks) ResumeHook(ctx context.Context, runID, token string, payload any, dedup string) error {
	return h.rt.ResumeHook(ctx, runID, token, payload, dedup)
}

func (h hooks) Log(ctx context.Context, runID string) ([]eventlog.Event, error) {
	return h.rt.Log(ctx, runID)
}

// historySink keeps each live run's operations until the run is recorded;
// operations that arrive after (late writers) go straight to history.jsonl.
type historySink struct {
	mu    sync.Mutex
	byRun map[string][]history.Op
	out   *stormdir.Writer
}

func (h *historySink) Record(op history.Op) {
	h.mu.Lock()
	if buf, ok := h.byRun[op.RunID]; ok {
		h.byRun[op.RunID] = append(buf, op)
		h.mu.Unlock()
		return
	}
	h.mu.Unlock()
	_ = h.out.WriteHistory([]history.Op{op})
}

func (h *historySink) begin(runID string) {
	h.mu.Lock()
	h.byRun[runID] = nil
	h.mu.Unlock()
}

func (h *historySink) end(runID string) []history.Op {
	h.mu.Lock()
	defer h.mu.Unlock()
	ops := h.byRun[runID]
	delete(h.byRun, runID)
	return ops
}

// RunID is the id of run index idx of cell k in a storm of seed that
// started at started: "wrun_" and a ULID whose time is the storm's start
// and whose 80 random bits come from (seed, cell, index) alone. So a run's
// id, and the driver jitter scenarios draw from the seed and the run id,
// never depend on timing or on which runs ran before it; a resumed storm
// (which keeps storm.json's start) gives each run it reruns the id, and so
// the seeds, the interrupted storm gave it. Shards own distinct indexes, so
// their ids differ too.
func RunID(seed uint64, started time.Time, k history.CellKey, idx int) string {
	h := fnv.New64a()
	h.Write([]byte(k.String()))
	var b [32]byte
	binary.LittleEndian.PutUint64(b[0:], seed)
	binary.LittleEndian.PutUint64(b[8:], h.Sum64())
	binary.LittleEndian.PutUint64(b[16:], uint64(idx))
	copy(b[24:], "wrun_id/")
	return eventlog.NewMinter("wrun_", rand.NewChaCha8(b)).Mint(started)
}
