package storm

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync/atomic"
	"time"

	"github.com/stormctl/stormctl/internal/analysis/counterfactual"
	"github.com/stormctl/stormctl/internal/analysis/verdict"
	"github.com/stormctl/stormctl/internal/engines"
	"github.com/stormctl/stormctl/internal/engines/rerun"
	"github.com/stormctl/stormctl/internal/storm/stormdir"
	"github.com/stormctl/stormctl/reports"
)

// This file judges the writes the worlds refused the storm's runs of the
// published runtime (their verdicts pending since their records were
// made) by counterfactual replays through each cell's own runtime, once
// every run has ended: replays during the storm would take the CPU its
// runs are measured on.

// pendingRun is a recorded run with judgements not made yet: its final
// log is read back from the storm directory when it is judged.
type pendingRun struct {
	rec reports.RunRecord
}

// keepPending keeps rec for the judging after the storm when it has
// pending judgements.
func (r *runner) keepPending(rec reports.RunRecord) {
	if counterfactual.Pending(rec.Verdicts) == 0 {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.pending = append(r.pending, pendingRun{rec: rec})
}

// judgeHosts is how many replay hosts judge a cell's refusals at once:
// one per core (a host replays on one), at most 4.
func judgeHosts() int { return min(max(runtime.NumCPU(), 1), 4) }

// judgeRefusals judges the pending judgements of the storm's runs (and a
// resumed storm's recorded ones) through the runtimes of cells, rewrites
// their records in runs.jsonl and then recounts their cells' verdicts.
// Judgements the runtime could not make (a replay host that did not open,
// failed or did not answer) stay pending, said in a warning: storm
// --resume DIR judges them. ctx's end keeps the rest pending and returns
// its error.
func (r *runner) judgeRefusals(ctx context.Context, cells []*cell) error {
	r.mu.Lock()
	pending := r.pending
	r.pending = nil
	r.mu.Unlock()
	if len(pending) == 0 {
		return nil
	}
	total := 0
	for _, p := range pending {
		total += counterfactual.Pending(p.rec.Verdicts)
	}
	started := time.Now()
	r.say("judging %d refused writes of %d runs: the log as it stood at each replayed through the cell's own runtime, with and without it (docs/engine-devkit.md)", total, len(pending))
	var judged atomic.Int64
	stop := r.reportJudging(&judged, total)
	defer stop()
	j := judging{recs: map[string]reports.RunRecord{}, old: map[string][]verdict.Judgement{}}
	var err error
	for _, c := range cells {
		var runs []pendingRun
		for _, p := range pending {
			if p.rec.CellKey == c.key {
				runs = append(runs, p)
			}
		}
		if len(runs) == 0 {
			continue
		}
		if err = r.judgeCell(ctx, c, runs, &j, &judged); err != nil {
			break
		}
	}
	// runs.jsonl first: the summary never counts a verdict it lacks.
	if werr := r.out.ReplaceRuns(j.recs); werr != nil {
		return werr
	}
	r.mu.Lock()
	for id, rec := range j.recs {
		if cell := r.summary.Cell(rec.CellKey); cell != nil {
			cell.Rejudge(j.old[id], rec.Verdicts)
		}
	}
	r.mu.Unlock()
	if err != nil {
		return err
	}
	if len(j.failed) > 0 {
		r.deps.Logger.Warn(fmt.Sprintf("%d refused writes left pending (unknown): the runtime could not replay them; storm --resume %s judges them", total-int(judged.Load()), r.plan.Config.Out),
			"first", j.failed[0].Error())
	}
	r.say("judged %d of %d refused writes in %s", judged.Load(), total, time.Since(started).Round(time.Second))
	return nil
}

// judging is what the judging of a storm's refusals gathers: the judged
// records by run id, their judgements before, and the replays the
// runtime could not make.
type judging struct {
	recs   map[string]reports.RunRecord
	old    map[string][]verdict.Judgement
	failed []error
}

// say writes a line of the judging's progress where an engine's long
// work is told (Deps.EngineProgress), else to the log.
func (r *runner) say(format string, a ...any) {
	if w := r.deps.EngineProgress; w != nil {
		fmt.Fprintf(w, "storm: "+format+"\n", a...)
		return
	}
	r.deps.Logger.Info(fmt.Sprintf(format, a...))
}

// reportJudging logs the judging's progress every 15 s until stop.
func (r *runner) reportJudging(judged *atomic.Int64, total int) (stop func()) {
	done := make(chan struct{})
	ended := make(chan struct{})
	go func() {
		defer close(ended)
		t := time.NewTicker(15 * time.Second)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				r.say("judged %d of %d refused writes", judged.Load(), total)
			}
		}
	}()
	return func() { close(done); <-ended }
}

// judgeCell judges the runs of one cell through replay hosts its engine
// opens, gathering each judged record in j.
func (r *runner) judgeCell(ctx context.Context, c *cell, runs []pendingRun, j *judging, judged *atomic.Int64) error {
	ro, ok := c.eng.(engines.ReplayOpener)
	if !ok {
		j.failed = append(j.failed, fmt.Errorf("cell %s: its engine cannot replay its runs", c.key))
		return nil
	}
	var hosts []engines.Rerun
	defer func() {
		for _, h := range hosts {
			h.Close()
		}
	}()
	for range judgeHosts() {
		h, err := ro.OpenReplay(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if len(hosts) == 0 {
				j.failed = append(j.failed, fmt.Errorf("cell %s: its runtime did not open for replay: %w", c.key, err))
				return nil
			}
			break
		}
		hosts = append(hosts, h)
	}
	pool := newRerunPool(hosts)
	dir := stormdir.Dir{Path: r.plan.Config.Out, Meta: &r.meta}
	for _, p := range runs {
		rec := p.rec
		final, err := dir.Events(rec.CellKey, rec.RunID)
		if err != nil {
			j.failed = append(j.failed, fmt.Errorf("run %s: its final log: %w", rec.RunID, err))
			continue
		}
		now, err := counterfactual.Judge(ctx, pool, counterfactual.Run{ID: rec.RunID, Final: final, Verdicts: rec.Verdicts, FinalAt: rec.Ended},
			counterfactual.Options{Workers: len(hosts), Judged: func() { judged.Add(1) }})
		j.old[rec.RunID] = rec.Verdicts
		rec.Verdicts = now
		j.recs[rec.RunID] = rec
		switch {
		case errors.Is(err, counterfactual.ErrReplayFailed):
			j.failed = append(j.failed, fmt.Errorf("run %s: %w", rec.RunID, err))
		case err != nil:
			return err
		}
	}
	return nil
}

// rerunPool spreads replays over several replay hosts, one replay per
// host at a time (each replays on one core). A host whose replay failed
// (it exited, or did not answer) leaves the pool: once none is left,
// every replay fails at once.
type rerunPool struct {
	free chan engines.Rerun
	live atomic.Int64
}

func newRerunPool(hosts []engines.Rerun) *rerunPool {
	p := &rerunPool{free: make(chan engines.Rerun, len(hosts))}
	for _, h := range hosts {
		p.free <- h
	}
	p.live.Store(int64(len(hosts)))
	return p
}

// errNoReplayHost is a replay asked of a pool whose hosts all failed.
var errNoReplayHost = errors.New("every replay host failed")

// Replay replays inv on the first free host.
func (p *rerunPool) Replay(ctx context.Context, inv rerun.RuntimeInvocation) (rerun.RuntimeResult, error) {
	for {
		if p.live.Load() <= 0 {
			return rerun.RuntimeResult{}, errNoReplayHost
		}
		select {
		case h := <-p.free:
			res, err := h.Replay(ctx, inv)
			if err != nil && (ctx.Err() == nil || errors.Is(ctx.Err(), context.DeadlineExceeded)) {
				p.live.Add(-1) // closed with the others at the end of the cell
				return res, err
			}
			p.free <- h
			return res, err
		case <-ctx.Done():
			return rerun.RuntimeResult{}, ctx.Err()
		case <-time.After(time.Second):
			// look again: the last live host may have failed meanwhile
		}
	}
}

var _ rerun.Runtime = (*rerunPool)(nil)
