package storm

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"sync/atomic"
	"time"

	"github.com/stormctl/stormctl/internal/analysis/counterfactual"
	"github.com/stormctl/stormctl/internal/analysis/verdict"
	"github.com/stormctl/stormctl/internal/engines"
	"github.com/stormctl/stormctl/internal/engines/rerun"
	"github.com/stormctl/stormctl/internal/eventlog"
	"github.com/stormctl/stormctl/internal/history"
	"github.com/stormctl/stormctl/reports"
)

// This file judges the writes the worlds refused the storm's runs of the
// published runtime (their verdicts pending since their records were
// made) by counterfactual replays through each cell's own runtime, once
// every run has ended: replays during the storm would take the CPU its
// runs are measured on.

// pendingRun is a recorded run with judgements not made yet.
type pendingRun struct {
	rec   reports.RunRecord
	final []eventlog.Event
}

// keepPending keeps rec for the judging after the storm when it has
// pending judgements.
func (r *runner) keepPending(rec reports.RunRecord, final []eventlog.Event) {
	if counterfactual.Pending(rec.Verdicts) == 0 {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.pending = append(r.pending, pendingRun{rec: rec, final: final})
}

// judgeHosts is how many replay hosts judge a cell's refusals at once:
// one per core (a host replays on one), at most 4.
func judgeHosts() int { return min(max(runtime.NumCPU(), 1), 4) }

// judgeRefusals judges the pending judgements of the storm's runs (and a
// resumed storm's recorded ones) through the runtimes of cells, rewrites
// their records in runs.jsonl and recounts their cells' verdicts. A
// cell whose runtime cannot replay keeps its judgements pending, said in
// a warning; ctx's end keeps the rest pending (storm --resume judges
// them) and returns its error.
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
	recs := map[string]reports.RunRecord{}
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
		if err = r.judgeCell(ctx, c, runs, recs, &judged); err != nil {
			break
		}
	}
	if werr := r.out.ReplaceRuns(recs); werr != nil {
		return werr
	}
	if err != nil {
		return err
	}
	r.say("judged %d refused writes in %s", judged.Load(), time.Since(started).Round(time.Second))
	return nil
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
// opens, putting each judged record in recs.
func (r *runner) judgeCell(ctx context.Context, c *cell, runs []pendingRun, recs map[string]reports.RunRecord, judged *atomic.Int64) error {
	ro, ok := c.eng.(engines.ReplayOpener)
	if !ok {
		r.deps.Logger.Warn("the cell's engine cannot replay its runs: their refused writes stay unknown", "cell", c.key.String())
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
				r.deps.Logger.Warn("the cell's runtime did not open for replay: its refused writes stay unknown and pending (storm --resume DIR judges them)", "cell", c.key.String(), "err", err)
				return nil
			}
			break
		}
		hosts = append(hosts, h)
	}
	pool := newRerunPool(hosts)
	for _, p := range runs {
		now, err := counterfactual.Judge(ctx, pool, counterfactual.Run{ID: p.rec.RunID, Final: p.final, Verdicts: p.rec.Verdicts},
			counterfactual.Options{Workers: len(hosts), Judged: func() { judged.Add(1) }})
		r.rejudge(c.key, p.rec, now, recs)
		if err != nil {
			return err
		}
	}
	return nil
}

// rejudge records run rec's judgements now in recs and in its cell's
// counts.
func (r *runner) rejudge(k history.CellKey, rec reports.RunRecord, now []verdict.Judgement, recs map[string]reports.RunRecord) {
	old := rec.Verdicts
	rec.Verdicts = now
	r.mu.Lock()
	defer r.mu.Unlock()
	if cell := r.summary.Cell(k); cell != nil {
		cell.Rejudge(old, now)
	}
	recs[rec.RunID] = rec
}

// rerunPool spreads replays over several replay hosts, one replay per
// host at a time (each replays on one core).
type rerunPool struct{ free chan engines.Rerun }

func newRerunPool(hosts []engines.Rerun) *rerunPool {
	p := &rerunPool{free: make(chan engines.Rerun, len(hosts))}
	for _, h := range slices.Clone(hosts) {
		p.free <- h
	}
	return p
}

// Replay replays inv on the first free host.
func (p *rerunPool) Replay(ctx context.Context, inv rerun.RuntimeInvocation) (rerun.RuntimeResult, error) {
	select {
	case h := <-p.free:
		defer func() { p.free <- h }()
		return h.Replay(ctx, inv)
	case <-ctx.Done():
		return rerun.RuntimeResult{}, ctx.Err()
	}
}

var _ rerun.Runtime = (*rerunPool)(nil)
