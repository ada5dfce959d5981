package storm

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"runtime"
	"slices"
	"sync/atomic"
	"time"

	"github.com/stormctl/stormctl/internal/analysis/counterfactual"
	"github.com/stormctl/stormctl/internal/analysis/pipeline"
	"github.com/stormctl/stormctl/internal/analysis/verdict"
	"github.com/stormctl/stormctl/internal/engines"
	"github.com/stormctl/stormctl/internal/engines/rerun"
	"github.com/stormctl/stormctl/internal/eventlog"
	"github.com/stormctl/stormctl/internal/history"
	"github.com/stormctl/stormctl/internal/storm/stormdir"
	"github.com/stormctl/stormctl/reports"
)

// This file judges the writes the worlds refused the storm's runs of the
// published runtime (their verdicts pending since their records were
// made) by counterfactual replays through each cell's own runtime, once
// every run has ended: replays during the storm would take the CPU its
// runs are measured on.

// keepRecord keeps rec, recorded by this storm (or a resumed one), for the
// judging after the storm.
func (r *runner) keepRecord(rec reports.RunRecord) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.records[rec.RunID] = rec
}

// addRefusedLate makes the writes refused the storm's recorded runs after
// their records (deliveries that outlived a run: the history sink kept
// them) rejections of those runs, pending, as the pipeline makes those
// refused before (pipeline.AddLate), and returns the ids of the runs they
// changed.
func (r *runner) addRefusedLate(j *judging, cells []*cell) []string {
	late := r.sink.takeRefusedLate()
	var ids []string
	for _, id := range slices.Sorted(maps.Keys(late)) {
		r.mu.Lock()
		rec, ok := r.records[id]
		r.mu.Unlock()
		i := slices.IndexFunc(cells, func(c *cell) bool { return c.key == rec.CellKey })
		if !ok || i < 0 {
			continue
		}
		now := rec
		now.Verdicts = slices.Clone(rec.Verdicts)
		pipeline.AddLate(cells[i].plan, &now, late[id])
		if len(now.Verdicts) == len(rec.Verdicts) {
			continue // not the published runtime's: no refusal of its world is a rejection
		}
		rec.Stats = now.Stats
		j.update(r, rec, now.Verdicts)
		ids = append(ids, id)
	}
	return ids
}

// settleQuiet and settleLimit bound the wait for the deliveries that
// outlive the storm's last runs before their refusals are counted.
const (
	settleQuiet = 3 * time.Second
	settleLimit = 15 * time.Second
)

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
	if slices.ContainsFunc(cells, func(c *cell) bool { _, ok := c.eng.(engines.ReplayOpener); return ok }) {
		// The published runtime's queue redelivers a run's messages for
		// seconds after it ends: the writes refused them are the runs'
		// rejections too.
		r.sink.settle(ctx, settleQuiet, settleLimit)
	}
	j := &judging{recs: map[string]reports.RunRecord{}}
	r.addRefusedLate(j, cells)
	r.mu.Lock()
	// The runs with judgements not made yet: their final logs are read
	// back from the storm directory when they are judged.
	var pending []reports.RunRecord
	for _, id := range slices.Sorted(maps.Keys(r.records)) {
		if rec := r.records[id]; counterfactual.Pending(rec.Verdicts) > 0 {
			pending = append(pending, rec)
		}
	}
	r.mu.Unlock()
	total := 0
	for _, rec := range pending {
		total += counterfactual.Pending(rec.Verdicts)
	}
	started := time.Now()
	var judged atomic.Int64
	var err error
	if total > 0 {
		r.say("judging %d refused writes of %d runs: the log as it stood at each replayed through the cell's own runtime, with and without it (docs/engine-devkit.md)", total, len(pending))
		stop := r.reportJudging(&judged, total)
		for _, c := range cells {
			var runs []reports.RunRecord
			for _, rec := range pending {
				if rec.CellKey == c.key {
					runs = append(runs, rec)
				}
			}
			if len(runs) == 0 {
				continue
			}
			if err = r.judgeCell(ctx, c, runs, j, &judged); err != nil {
				break
			}
		}
		stop()
		if err == nil {
			r.judgeLate(ctx, j, cells)
		}
	}
	// runs.jsonl first: the summary never counts a verdict it lacks.
	if werr := r.out.ReplaceRuns(j.recs); werr != nil {
		return werr
	}
	r.mu.Lock()
	for _, d := range j.deltas {
		if cell := r.summary.Cell(d.key); cell != nil {
			cell.Rejudge(d.old, d.now)
		}
	}
	r.mu.Unlock()
	if err != nil {
		return err
	}
	if total == 0 {
		return nil
	}
	left := 0
	for _, rec := range j.recs {
		left += counterfactual.Pending(rec.Verdicts)
	}
	if left > 0 {
		first := "interrupted"
		if len(j.failed) > 0 {
			first = j.failed[0].Error()
		}
		r.deps.Logger.Warn(fmt.Sprintf("%d refused writes left pending (unknown): the runtime could not replay them; storm --resume %s judges them", left, r.plan.Config.Out), "first", first)
	}
	r.say("judged %d of %d refused writes in %s", judged.Load(), total, time.Since(started).Round(time.Second))
	return nil
}

// judgeLate adds the writes refused the storm's runs while it judged (the
// last runs' outliving deliveries) and judges those its rules decide
// without a replay (a write refused after its run's end); any other stays
// pending, for storm --resume DIR.
func (r *runner) judgeLate(ctx context.Context, j *judging, cells []*cell) {
	for _, id := range r.addRefusedLate(j, cells) {
		rec := j.recs[id]
		now, _ := counterfactual.Judge(ctx, noReplay{}, counterfactual.Run{ID: id, Final: r.finalOf(rec), Verdicts: rec.Verdicts, FinalAt: rec.Ended}, counterfactual.Options{})
		j.update(r, rec, now)
	}
}

// finalOf is rec's final log as the storm directory holds it (nil when it
// cannot be read: its judgements then say so).
func (r *runner) finalOf(rec reports.RunRecord) []eventlog.Event {
	final, err := (&stormdir.Dir{Path: r.plan.Config.Out, Meta: &r.meta}).Events(rec.CellKey, rec.RunID)
	if err != nil {
		return nil
	}
	return final
}

// noReplay is the runtime of the judging after the replay hosts closed:
// it replays nothing (a judgement that needs a replay stays pending).
type noReplay struct{}

func (noReplay) Replay(context.Context, rerun.RuntimeInvocation) (rerun.RuntimeResult, error) {
	return rerun.RuntimeResult{}, errors.New("the replay hosts had closed when the world refused it")
}

// judging is what the judging of a storm's refusals gathers: the changed
// records by run id, the changes of their cells' counts (applied once
// runs.jsonl holds them) and the replays the runtime could not make.
type judging struct {
	recs   map[string]reports.RunRecord
	deltas []verdictDelta
	failed []error
}

// verdictDelta is one change of a run's judgements, old to now.
type verdictDelta struct {
	key      history.CellKey
	old, now []verdict.Judgement
}

// update makes now rec's judgements: in the runner's records, the
// records to rewrite, and the changes to count.
func (j *judging) update(r *runner, rec reports.RunRecord, now []verdict.Judgement) {
	j.deltas = append(j.deltas, verdictDelta{key: rec.CellKey, old: rec.Verdicts, now: now})
	rec.Verdicts = now
	j.recs[rec.RunID] = rec
	r.mu.Lock()
	r.records[rec.RunID] = rec
	r.mu.Unlock()
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
func (r *runner) judgeCell(ctx context.Context, c *cell, runs []reports.RunRecord, j *judging, judged *atomic.Int64) error {
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
	for _, rec := range runs {
		final, err := dir.Events(rec.CellKey, rec.RunID)
		if err != nil {
			j.failed = append(j.failed, fmt.Errorf("run %s: its final log: %w", rec.RunID, err))
			continue
		}
		now, err := counterfactual.Judge(ctx, pool, counterfactual.Run{ID: rec.RunID, Final: final, Verdicts: rec.Verdicts, FinalAt: rec.Ended},
			counterfactual.Options{Workers: len(hosts), Judged: func() { judged.Add(1) }})
		j.update(r, rec, now)
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
