package storm

import (
	"fmt"

	"github.com/stormctl/stormctl/internal/analysis/pipeline"
	"github.com/stormctl/stormctl/internal/history"
	"github.com/stormctl/stormctl/internal/storm/stormdir"
	"github.com/stormctl/stormctl/reports"
)

// This file continues an interrupted storm from its artifacts (storm
// --resume DIR): the config comes from storm.json, the runs already
// finished from runs.jsonl, and only the missing (cell, run index) pairs
// run, with the ids and seeds the interrupted storm gave them (RunID).

// prior is what a resumed storm had recorded: the runs and their history.
type prior struct {
	runs []reports.RunRecord
	ops  map[string][]history.Op
}

// openArtifacts opens a new storm's artifacts, or readies a resumed one's
// and reopens them for appending (stormdir.Resume.Reopen).
func openArtifacts(meta *stormdir.Meta, res *stormdir.Resume) (*stormdir.Writer, *prior, error) {
	if res == nil {
		out, err := stormdir.OpenWriter(meta.Config.Out, meta)
		return out, nil, err
	}
	out, ops, err := res.Reopen(meta)
	if err != nil {
		return nil, nil, err
	}
	return out, &prior{runs: res.Stored.Runs, ops: ops}, nil
}

// addPrior counts a resumed storm's recorded runs into the summary, the
// cells' commit order and windows (from their final logs and history) and
// the timelines written, as if the runner had just run them.
func (r *runner) addPrior(p *prior) error {
	if p == nil {
		return nil
	}
	r.summary.Started = r.started
	dir := stormdir.Dir{Path: r.plan.Config.Out, Meta: &r.meta}
	for _, rec := range p.runs {
		k := rec.CellKey
		final, err := dir.Events(k, rec.RunID)
		if err != nil {
			return fmt.Errorf("resume: the final log of recorded run %s: %w", rec.RunID, err)
		}
		// The pipeline's stored-run path: the cell as the stored
		// storm.json describes it (a runtime's own scheme included), the
		// record standing for what is not stored, its class kept. The plan
		// already refused a condition or scenario it does not know.
		cell, err := pipeline.StoredCell(r.plan.Resume.Meta, rec)
		if err != nil {
			return fmt.Errorf("resume: recorded run %s: %w", rec.RunID, err)
		}
		run := pipeline.Stored(rec, final, p.ops[rec.RunID])
		run.Classify = pipeline.ClassifyNever
		res := pipeline.Process(cell, run)
		r.tally.Add(rec, res.Analysis.Order, res.Analysis.Commits)
		r.keepRecord(rec)
		if rec.Class != "" && rec.Timeline != "" {
			r.timelines.Add(k, rec.Class)
		}
	}
	return nil
}

// showPrior shows a resumed storm's recorded runs in the progress.
func (r *runner) showPrior() {
	if r.plan.Resume == nil {
		return
	}
	r.mu.Lock()
	var cells []reports.Cell
	for _, c := range r.summary.Cells {
		if c.Runs > 0 {
			cells = append(cells, *c)
		}
	}
	r.mu.Unlock()
	for _, c := range cells {
		r.deps.Progress.Update(c)
	}
}
