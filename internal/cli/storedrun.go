package cli

import (
	"cmp"
	"fmt"
	"path/filepath"

	"github.com/stormctl/stormctl/engine"
	"github.com/stormctl/stormctl/eventlog"
	"github.com/stormctl/stormctl/history"
	"github.com/stormctl/stormctl/pipeline"
	"github.com/stormctl/stormctl/reports"
	"github.com/stormctl/stormctl/stormdir"
)

// storedRun is one run of a stored storm with what was recorded of it:
// what explain, replay and shrink read.
type storedRun struct {
	dir   *stormdir.Dir
	rec   reports.RunRecord
	cell  pipeline.Cell
	final []eventlog.Event
	ops   []history.Op
	// engine is the engine that ran the run's cell.
	engine string
}

// loadStoredRun reads run runID of the storm directory path: its record,
// final log, history and cell. Every failure is bad input (a usage error)
// naming the file at fault.
func loadStoredRun(path, runID string) (*storedRun, error) {
	dir, err := stormdir.Open(path)
	if err != nil {
		return nil, &UsageError{Err: err}
	}
	runs, err := dir.Runs()
	if runs == nil && err != nil {
		return nil, &UsageError{Err: err}
	}
	var rec *reports.RunRecord
	for i := range runs {
		if runs[i].RunID == runID {
			rec = &runs[i]
		}
	}
	if rec == nil {
		return nil, usage("run %s is not in %s (%d runs; stormctl report %s lists the cells)",
			runID, filepath.Join(path, stormdir.FileRuns), len(runs), path)
	}
	final, err := dir.Events(rec.CellKey, rec.RunID)
	if err != nil {
		return nil, &UsageError{Err: fmt.Errorf("the final log of %s: %w", rec.RunID, err)}
	}
	ops, err := dir.RunHistory(rec.RunID)
	if err != nil {
		return nil, &UsageError{Err: fmt.Errorf("the history of %s: %w", rec.RunID, err)}
	}
	cell, err := pipeline.StoredCell(dir.Meta, *rec)
	if err != nil {
		return nil, &UsageError{Err: err}
	}
	eng := cmp.Or(cell.Knobs.Engine, dir.Meta.Config.Engine, engine.EngineModel)
	if rt, ok := dir.Meta.RuntimeOf(rec.CellKey); ok {
		eng = rt.Engine
	}
	return &storedRun{dir: dir, rec: *rec, cell: cell, final: final, ops: ops, engine: eng}, nil
}
