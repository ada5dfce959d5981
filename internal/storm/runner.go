package storm

import (
	"cmp"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"io/fs"
	"log/slog"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/stormctl/stormctl/forensics"
	"github.com/stormctl/stormctl/internal/analysis/pipeline"
	"github.com/stormctl/stormctl/internal/base/crash"
	"github.com/stormctl/stormctl/internal/base/leftover"
	"github.com/stormctl/stormctl/internal/engines"
	"github.com/stormctl/stormctl/internal/eventlog"
	"github.com/stormctl/stormctl/internal/history"
	"github.com/stormctl/stormctl/internal/nemesis"
	"github.com/stormctl/stormctl/internal/storm/stormdir"
	"github.com/stormctl/stormctl/reports"
	"github.com/stormctl/stormctl/reports/plots"
	"github.com/stormctl/stormctl/reports/table"
	"github.com/stormctl/stormctl/scenarios"
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
	Worlds *worlds.Registry
	// EngineProgress gets an engine's lines of long first-time work (an
	// install); nil discards them.
	EngineProgress io.Writer
	Logger         *slog.Logger
	Progress       Progress
	Version        string
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

// cell is one cell's plan, world and engine.
type cell struct {
	key   history.CellKey
	plan  pipeline.Cell
	world worlds.World
	eng   engines.Engine
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
	// opens holds what each engine's plug-in opens cells with.
	opens map[string]engines.Open
	// timelines counts the timelines written per cell and class.
	timelines pipeline.Timelines
	// meta is storm.json; nem the nemesis, nil when off (nemesis.go).
	meta stormdir.Meta
	nem  *nemesis.Runner
	// admit holds back runs of loaded engines until there is room;
	// cpu samples the machine's CPU for it and for the runs' evidence.
	admit *admission
	cpu   *machineCPU
	self  *selfCPU
	// records are the runs this storm recorded (and a resumed storm's),
	// by id: their refused writes are judged once every run has ended
	// (judge.go).
	records map[string]reports.RunRecord
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
		Endpoints: plan.Endpoints, WorldEnv: plan.WorldEnv, LatencyByWorld: plan.LatencyByWorld}
	if cfg.Admission != AdmissionOff {
		meta.AdmissionRule = DefaultAdmissionRule.String()
	}
	out, prior, err := openArtifacts(&meta, plan.Resume)
	if err != nil {
		return nil, err
	}
	r := &runner{opens: map[string]engines.Open{}, records: map[string]reports.RunRecord{},
		plan: plan, deps: deps, out: out, started: meta.Started, meta: meta,
		sink:      newHistorySink(out),
		summary:   reports.NewSummary(keys),
		timelines: pipeline.Timelines{},
	}
	r.tally = reports.NewTally(r.summary)
	r.cpu, r.self = newMachineCPU(), newSelfCPU()
	r.admit = &admission{rule: DefaultAdmissionRule, off: cfg.Admission == AdmissionOff, cpu: r.cpu}
	cpuCtx, stopCPU := context.WithCancel(ctx)
	cpuDone := make(chan struct{})
	go func() { defer close(cpuDone); r.sampleCPU(cpuCtx) }()
	defer func() { stopCPU(); <-cpuDone }()
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
		r.abandon(ctx)
		os.RemoveAll(tmp)
		return nil, fmt.Errorf("create a temp dir for the worlds: %w", err)
	}
	cells, openErr := r.openCells(ctx, tmp)
	defer func() {
		for _, c := range cells {
			c.eng.Close()
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
		r.abandon(ctx)
		return nil, openErr
	}
	if err := r.describe(cells); err != nil {
		r.abandon(ctx)
		return nil, err
	}
	if err := r.startNemesis(ctx, cells); err != nil {
		r.abandon(ctx)
		return nil, err
	}
	if deps.Progress != nil {
		deps.Progress.Start(keys, cfg.Shard.RunsPerCell(cfg.Runs))
		r.showPrior()
	}
	runErr := r.runAll(ctx, cells)
	r.stopNemesis()
	if err := r.sink.flush(); err != nil && runErr == nil {
		runErr = err
	}
	if runErr == nil && ctx.Err() == nil {
		if deps.Progress != nil {
			deps.Progress.Finish()
			deps.Progress = nil
		}
		if err := r.judgeRefusals(ctx, cells); err != nil && !errors.Is(err, context.Canceled) {
			runErr = err // an interrupted judging leaves the rest pending: --resume judges them
		}
	}
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

// abandon closes the artifacts of a storm that stopped before its first
// run: a new storm's directory is removed (it measured nothing, and the
// same command must be able to run again once what stopped it is fixed),
// a resumed one's stays as it was, and so does an interrupted one's
// (Ctrl-C: --resume continues it, as any interrupted storm).
func (r *runner) abandon(ctx context.Context) {
	if r.plan.Resume != nil || ctx.Err() != nil {
		r.out.Close()
		return
	}
	if err := r.out.Discard(); err != nil {
		r.deps.Logger.Warn("the storm measured nothing, but its directory could not be removed", "err", err)
	}
}

// sampleCPU samples the machine's CPU and splits stormctl's own among the
// live runs, every cpuInterval until ctx ends.
func (r *runner) sampleCPU(ctx context.Context) {
	t := time.NewTicker(cpuInterval)
	defer t.Stop()
	for {
		now := time.Now()
		r.cpu.sample(now)
		r.self.tick()
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// opener returns what opens cells of the engine called name, asking the
// plug-in once per storm (opens holds what it said).
func (r *runner) opener(name string) (engines.Open, error) {
	if open, ok := r.opens[name]; ok {
		return open, nil
	}
	p, err := r.plan.Engines.Get(name)
	if err != nil {
		return nil, err
	}
	cfg := r.plan.Config
	eps := map[string]string{}
	for _, ep := range r.plan.Endpoints {
		eps[ep.Flag] = ep.Value
	}
	progress := r.deps.EngineProgress
	if progress == nil {
		progress = io.Discard
	}
	open, err := p.Opener(engines.Options{Channel: cfg.DevkitChannel, Hosts: cfg.Hosts, Endpoints: eps, Progress: progress, Logger: r.deps.Logger})
	if err != nil {
		return nil, fmt.Errorf("engine %s: %w", name, err)
	}
	r.opens[name] = open
	return open, nil
}

// openCells opens one world and one engine per cell.
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
		lat, err := worlds.ResolveProfile(cfg.Latency, entry, cfg.Seed+uint64(i))
		if err != nil {
			return cells, err
		}
		w, err := entry.Open(ctx, worlds.Options{Dir: filepath.Join(tmp, k.Dir()), Latency: lat, Seed: cfg.Seed + uint64(i), Nemesis: cfg.Nemesis.On(), PoolSize: r.plan.PoolSizes[k.World]})
		if err != nil {
			return cells, fmt.Errorf("open world %s: %w", k.World, err)
		}
		cond := r.plan.Conditions[k.Condition]
		rec := worlds.Record(w, r.sink)
		name := EngineOf(r.plan.Engines, cfg, cond.Knobs)
		open, err := r.opener(name)
		if err != nil {
			rec.Close()
			return cells, fmt.Errorf("cell %s: %w", k, err)
		}
		eng, err := open(ctx, engines.Setup{
			Key: k, World: rec, Sink: r.sink, Scenario: sc, Knobs: cond.Knobs,
			Concurrency: cfg.Concurrency, PageSize: r.plan.PageSizes[PageSizeKey(k.World, cond.Knobs.Scheme)],
			TimeScale: cfg.TimeScale, Logger: r.deps.Logger,
		})
		if err != nil {
			rec.Close()
			return cells, fmt.Errorf("open the engine of cell %s: %w", k, err)
		}
		knobs := cond.Knobs
		knobs.Engine = name // explain replays the model's runs only
		if sch, ok := eng.(engines.Schemer); ok {
			knobs.Scheme = sch.Scheme() // the runtime's logs are read by its own scheme
		}
		cells = append(cells, &cell{key: k, world: rec, eng: eng,
			plan: pipeline.Cell{Key: k, Knobs: knobs, Scenario: sc, TimeScale: cfg.TimeScale}})
	}
	return cells, nil
}

// describe keeps in storm.json what ran each cell whose engine says
// (Describer), and tells the user in a line per runtime.
func (r *runner) describe(cells []*cell) error {
	var rts []stormdir.Runtime
	for _, c := range cells {
		if d, ok := c.eng.(engines.Describer); ok {
			rt := d.Describe()
			rt.Cell = c.key
			rts = append(rts, rt)
		}
	}
	if len(rts) == 0 {
		return nil
	}
	r.meta.Runtimes = rts
	seen := map[string]bool{}
	for _, rt := range rts {
		line := fmt.Sprintf("engine %s (%s) on %s: %s%s", rt.Engine, cmp.Or(rt.Channel, "-"), rt.Cell.World, versionsLine(rt.Versions), specWord(rt.Spec))
		if !seen[line] {
			seen[line] = true
			r.deps.Logger.Info(line, "source", rt.Source, "scheme", rt.Scheme)
		}
	}
	return r.out.WriteMeta(&r.meta)
}

// versionsLine lists versions by package, in name order.
func versionsLine(v map[string]string) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(v)) {
		parts = append(parts, k+"@"+v[k])
	}
	return strings.Join(parts, " ")
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

// runOne runs one workflow run to its end (or timeout) and records it:
// what the run left goes through the post-run pipeline (pipeline.Process),
// and the runner keeps what the storm keeps of it (its timeline, while
// its cell and class have fewer than reports.MaxTimelines, its artifacts,
// its tally).
func (r *runner) runOne(ctx context.Context, c *cell, idx int) error {
	if ctx.Err() != nil {
		return nil
	}
	cfg := r.plan.Config
	admitted, err := r.admit.wait(ctx, c.eng)
	if err != nil {
		return nil // interrupted while waiting for room: the run never started
	}
	defer admitted()
	runID := RunID(cfg.Seed, r.started, c.key, idx)
	r.sink.begin(runID)
	env := scenarios.Env{Scale: cfg.TimeScale, Seed: cfg.Seed, MaxFactDelay: r.plan.Latency.MaxFactDelay(), Rounds: cfg.Rounds}
	started := time.Now()
	r.self.begin(runID)
	rctx, cancel := context.WithTimeout(ctx, cfg.Timeout)
	defer cancel()
	var driveErr error
	id, startErr := c.eng.Start(rctx, runID, c.plan.Scenario.Input(env, idx))
	if id != "" && id != runID {
		r.sink.rename(runID, id) // the engine's runtime minted the run's id
		r.self.begin(id)
		r.self.end(runID)
		runID = id
	}
	if startErr == nil {
		dctx, stopDriver := context.WithCancel(rctx)
		var dg errgroup.Group
		hooks := scenarios.Only(c.eng, c.plan.Scenario.Reads)
		dg.Go(crash.Go(func() error { return c.plan.Scenario.Drive(dctx, hooks, runID, env) }))
		select {
		case <-c.eng.Done(runID):
		case <-rctx.Done():
		}
		stopDriver()
		driveErr = dg.Wait()
	}
	// The run's end, for its outcome's evidence: before Finish, which may
	// wait out writes that outlive the run (slot scheme, writeGrace).
	stopped := time.Now()
	stats := c.eng.Finish(runID)
	if stats.Harness != nil {
		h := *stats.Harness
		h.MachineBusy = -1
		if busy, ok := r.cpu.busy(started, stopped); ok {
			h.MachineBusy = busy
		}
		stats.Harness = &h
	}
	var bug *crash.Error
	if errors.As(driveErr, &bug) {
		r.sink.discard(runID) // a bug: the run measured nothing, the storm stops
		r.self.end(runID)
		return driveErr
	}
	if err := c.eng.Panicked(); err != nil {
		r.sink.discard(runID)
		r.self.end(runID)
		return err
	}
	if ctx.Err() != nil {
		r.sink.discard(runID) // interrupted: an unfinished run is not an outcome
		r.self.end(runID)
		return nil
	}
	ended := time.Now()

	// The run ended: collect what its world holds of it even if the storm
	// is being interrupted meanwhile, so a finished run is never recorded
	// as infra.
	rctx2, cancel2 := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel2()
	var collected worlds.Collected
	if col, ok := c.eng.(engines.Collector); ok {
		collected = col.Collect(rctx2, runID)
	} else {
		collected = worlds.Collect(worlds.WithActor(rctx2, "storm"), c.world, runID, c.plan.Knobs.Guard)
	}
	if collected.CommitErr != nil {
		r.deps.Logger.Debug("no store commit times", "run", runID, "err", collected.CommitErr)
	}
	ops := r.sink.end(runID)
	res := pipeline.Process(c.plan, pipeline.Run{
		ID: runID, Index: idx, Started: started, Stopped: stopped, Ended: ended,
		Ops: ops, Collected: collected, Stats: stats, StartErr: startErr, DriveErr: driveErr,
		Faults:   r.faultsOf(c.key, started, time.Now()),
		TimedOut: errors.Is(rctx.Err(), context.DeadlineExceeded), Timeout: cfg.Timeout,
	})
	rec := res.Record
	// Its share of stormctl's own CPU: while it ran and while it was
	// collected and analysed.
	if selfShare := r.self.end(runID); rec.Stats.Harness != nil {
		h := *rec.Stats.Harness
		h.StormctlCPUMs = float64(selfShare) / float64(time.Millisecond)
		rec.Stats.Harness = &h
	}
	if ex := res.Explained; ex != nil && r.timelineWanted(c.key, ex.Class) {
		path, err := ex.WriteTimeline(cfg.Out)
		if err != nil {
			r.deps.Logger.Warn("timeline", "run", runID, "err", err)
		}
		rec.Timeline = path
	}
	// runs.jsonl's line comes last: a run it lists has its history and
	// final log on disk, and a run it does not list is run again by
	// --resume, its partial history and final log dropped.
	late, err := r.sink.write(runID)
	if err != nil {
		return err
	}
	pipeline.AddLate(c.plan, &rec, late)
	if err := r.out.WriteEvents(c.key, runID, collected.Final); err != nil {
		return err
	}
	if err := r.out.WriteRun(rec); err != nil {
		return err
	}
	r.keepRecord(rec)
	r.mu.Lock()
	snapshot := *r.tally.Add(rec, res.Analysis.Order, res.Analysis.Commits)
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

// timelineWanted reserves a timeline for a run of class in cell k
// (pipeline.Timelines.Take).
func (r *runner) timelineWanted(k history.CellKey, class string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.timelines.Take(k, class)
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

// historySink keeps each live run's operations until the run is recorded.
// Operations of a run that was recorded (late writers) go straight to
// history.jsonl; those of a run not yet begun are kept for it: an engine
// whose runtime mints run ids records a run's first operations before
// Start has said its id (flush writes what no run claimed). A run's
// operations are kept until its record is written, not just until its end
// (its analysis can take seconds): a delivery still running when its run
// ended has its operations in history.jsonl after the run's, in the order
// it made them, which replay serves.
type historySink struct {
	mu      sync.Mutex
	byRun   map[string][]history.Op
	pending map[string][]history.Op
	ended   map[string]bool
	// atEnd is how many of a run's operations end handed its pipeline.
	atEnd map[string]int
	// recorded are the runs whose record was written; refusedLate the
	// writes a world refused them after it (a delivery that outlived the
	// run), rejections of the run the storm adds before it judges them.
	recorded    map[string]bool
	refusedLate map[string][]history.Op
	// last is when the sink was last given an operation.
	last time.Time
	out  *stormdir.Writer
}

// settle waits until no operation has come for quiet (the runtime's
// deliveries that outlive their runs have ended), at most limit, or ctx's
// end.
func (h *historySink) settle(ctx context.Context, quiet, limit time.Duration) {
	deadline := time.Now().Add(limit)
	t := time.NewTicker(quiet / 4)
	defer t.Stop()
	for time.Now().Before(deadline) {
		h.mu.Lock()
		idle := time.Since(h.last)
		h.mu.Unlock()
		if idle >= quiet {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func newHistorySink(out *stormdir.Writer) *historySink {
	return &historySink{byRun: map[string][]history.Op{}, pending: map[string][]history.Op{}, ended: map[string]bool{}, atEnd: map[string]int{},
		recorded: map[string]bool{}, refusedLate: map[string][]history.Op{}, out: out}
}

// takeRefusedLate returns, by run, the writes refused runs after their
// record was written, and forgets them.
func (h *historySink) takeRefusedLate() map[string][]history.Op {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := h.refusedLate
	h.refusedLate = map[string][]history.Op{}
	return out
}

// Record keeps op for its run, or writes it when its run was recorded.
func (h *historySink) Record(op history.Op) {
	h.mu.Lock()
	h.last = time.Now()
	if buf, ok := h.byRun[op.RunID]; ok {
		h.byRun[op.RunID] = append(buf, op)
		h.mu.Unlock()
		return
	}
	if !h.ended[op.RunID] {
		h.pending[op.RunID] = append(h.pending[op.RunID], op)
		h.mu.Unlock()
		return
	}
	if h.recorded[op.RunID] && forensics.IsRefusal(op) {
		h.refusedLate[op.RunID] = append(h.refusedLate[op.RunID], op)
	}
	h.mu.Unlock()
	_ = h.out.WriteHistory([]history.Op{op})
}

// begin keeps runID's operations from now on, and those recorded before.
func (h *historySink) begin(runID string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.byRun[runID] = append(h.pending[runID], h.byRun[runID]...)
	delete(h.pending, runID)
}

// rename moves the operations kept for run id from to run id to: the id
// an engine's Start returned instead of the one the runner minted.
func (h *historySink) rename(from, to string) {
	h.mu.Lock()
	ops := h.byRun[from]
	delete(h.byRun, from)
	h.mu.Unlock()
	h.begin(to)
	h.mu.Lock()
	h.byRun[to] = append(ops, h.byRun[to]...)
	h.mu.Unlock()
}

// end returns runID's operations up to its end, the ones its outcome is
// judged on; later ones are kept after them until write.
func (h *historySink) end(runID string) []history.Op {
	h.mu.Lock()
	defer h.mu.Unlock()
	ops := slices.Clip(h.byRun[runID]) // a later append copies, never shares
	h.byRun[runID] = ops
	h.atEnd[runID] = len(ops)
	return ops
}

// write writes runID's operations, those after its end too, and returns
// the latter (a delivery that outlived its run: what the run's record
// still counts of it); later ones go straight to history.jsonl.
func (h *historySink) write(runID string) ([]history.Op, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	ops := h.byRun[runID]
	late := ops[min(h.atEnd[runID], len(ops)):]
	delete(h.byRun, runID)
	delete(h.atEnd, runID)
	h.ended[runID] = true
	h.recorded[runID] = true
	if len(ops) == 0 {
		return nil, nil
	}
	return late, h.out.WriteHistory(ops)
}

// discard drops runID's operations (a run the storm does not record);
// later ones go straight to history.jsonl.
func (h *historySink) discard(runID string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.byRun, runID)
	h.ended[runID] = true
}

// flush writes the operations kept for runs that never began (none of the
// model's: it begins every run before its first operation), and those of
// a run that ended but whose record was not written (the storm stopped on
// an error between).
func (h *historySink) flush() error {
	h.mu.Lock()
	var ops []history.Op
	for _, id := range slices.Sorted(maps.Keys(h.pending)) {
		ops = append(ops, h.pending[id]...)
	}
	clear(h.pending)
	for _, id := range slices.Sorted(maps.Keys(h.byRun)) {
		ops = append(ops, h.byRun[id]...)
	}
	clear(h.byRun)
	h.mu.Unlock()
	if len(ops) == 0 {
		return nil
	}
	return h.out.WriteHistory(ops)
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

// specWord says which World contract a runtime speaks, "" when it says
// none.
func specWord(spec *int) string {
	if spec == nil {
		return ""
	}
	return fmt.Sprintf(", spec %d", *spec)
}
