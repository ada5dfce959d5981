// Package evidence reads one run of a stored storm with what was
// recorded of it (its record, final log, history and cell, and the engine
// that ran it): what explain, replay and shrink start from.
package evidence

import (
	"cmp"
	"fmt"
	"path/filepath"

	"github.com/stormctl/stormctl/internal/analysis/explain"
	"github.com/stormctl/stormctl/internal/analysis/pipeline"
	"github.com/stormctl/stormctl/internal/engines/builtinengines"
	"github.com/stormctl/stormctl/internal/eventlog"
	"github.com/stormctl/stormctl/internal/history"
	"github.com/stormctl/stormctl/internal/storm/stormdir"
	"github.com/stormctl/stormctl/internal/tools/replay"
	"github.com/stormctl/stormctl/reports"
)

// Run is one stored run and what was recorded of it.
type Run struct {
	Record reports.RunRecord
	Cell   pipeline.Cell
	Final  []eventlog.Event
	Ops    []history.Op
	// Engine is the engine that ran the run's cell; Runtime what ran it,
	// as storm.json records it (a devkit cell's channel and packages), and
	// HasRuntime whether it does.
	Engine     string
	Runtime    stormdir.Runtime
	HasRuntime bool
}

// Load reads run runID of the storm directory path. Its errors name the
// file at fault: a directory that is no storm, malformed artifacts, a run
// runs.jsonl does not hold.
func Load(path, runID string) (*Run, error) {
	dir, err := stormdir.Open(path)
	if err != nil {
		return nil, err
	}
	runs, err := dir.Runs()
	if runs == nil && err != nil {
		return nil, err
	}
	for _, rec := range runs {
		if rec.RunID == runID {
			return read(dir, rec)
		}
	}
	return nil, fmt.Errorf("run %s is not in %s (%d runs; stormctl report %s lists the cells)",
		runID, filepath.Join(path, stormdir.FileRuns), len(runs), path)
}

// read reads what was recorded of run rec of dir.
func read(dir *stormdir.Dir, rec reports.RunRecord) (*Run, error) {
	final, err := dir.Events(rec.CellKey, rec.RunID)
	if err != nil {
		return nil, fmt.Errorf("the final log of %s: %w", rec.RunID, err)
	}
	ops, err := dir.RunHistory(rec.RunID)
	if err != nil {
		return nil, fmt.Errorf("the history of %s: %w", rec.RunID, err)
	}
	cell, err := pipeline.StoredCell(dir.Meta, rec)
	if err != nil {
		return nil, err
	}
	eng := cmp.Or(cell.Knobs.Engine, dir.Meta.Config.Engine, builtinengines.Engines().Model())
	rt, ok := dir.Meta.RuntimeOf(rec.CellKey)
	if ok {
		eng = rt.Engine
	}
	return &Run{Record: rec, Cell: cell, Final: final, Ops: ops, Engine: eng, Runtime: rt, HasRuntime: ok}, nil
}

// ReplayInput is what replaying the run needs: its pages rebuilt from its
// history and final log (explain.Pages).
func (r *Run) ReplayInput() replay.Input {
	return replay.Input{
		RunID: r.Record.RunID, Cell: r.Record.CellKey.String(), Outcome: r.Record.Outcome, Detail: r.Record.Detail,
		Engine: r.Engine, Knobs: r.Cell.Knobs, Program: r.Cell.Scenario.Program,
		Ops: r.Ops, Final: r.Final, Reads: explain.NewPages(r.Cell.Knobs.Scheme, r.Final, r.Ops).Page,
		Divergences: r.Record.Stats.Divergences,
		// The devkit engine reads a run's counts from its host when the run
		// ends; none read (a host too busy to answer) leaves them all zero.
		DivergencesUnknown: builtinengines.Traits(r.Engine).Published && r.Record.Stats.Invocations == 0,
	}
}
