package storm

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/stormctl/stormctl/conditions"
	"github.com/stormctl/stormctl/engine"
	"github.com/stormctl/stormctl/eventlog"
	"github.com/stormctl/stormctl/explain"
	"github.com/stormctl/stormctl/history"
	"github.com/stormctl/stormctl/reports"
	"github.com/stormctl/stormctl/scenarios"
	"github.com/stormctl/stormctl/stormdir"
	"github.com/stormctl/stormctl/timeline"
)

// ExplainInput is what explaining a run of condition cond and scenario sc
// needs: the run's record, final log and history, and the condition's
// knobs for the reference replay, and the storm's time scale (its timer
// tick, for when a stuck run's waits were due).
func ExplainInput(cond conditions.Condition, sc scenarios.Scenario, timeScale float64, rec reports.RunRecord, final []eventlog.Event, ops []history.Op) explain.Input {
	return explain.Input{
		RunID: rec.RunID, Cell: rec.CellKey.String(),
		Outcome: rec.Outcome, Detail: rec.Detail,
		Program: sc.Program, Knobs: cond.Knobs,
		Final: final, Ops: ops, Ended: rec.Ended,
		Steps: sc.Steps, TimerTick: timerTick(timeScale),
	}
}

// WriteTimeline writes the run's timeline to DIR/timelines/<run>.html and
// returns its path relative to dir (what summary.md links).
func WriteTimeline(dir string, in explain.Input, ex explain.Explanation) (string, error) {
	if !stormdir.RunFileName(in.RunID) {
		return "", fmt.Errorf("timeline: run id %q is not a file name: no timeline written", in.RunID)
	}
	rel := filepath.Join(stormdir.DirTimelines, in.RunID+".html")
	if err := os.MkdirAll(filepath.Join(dir, stormdir.DirTimelines), 0o755); err != nil {
		return "", fmt.Errorf("create %s: %w", stormdir.DirTimelines, err)
	}
	var b bytes.Buffer
	if err := timeline.Write(&b, in, ex, timeline.MaxBytes); err != nil {
		return "", fmt.Errorf("timeline of %s: %w", in.RunID, err)
	}
	if err := stormdir.WriteFile(filepath.Join(dir, rel), b.Bytes()); err != nil {
		return "", err
	}
	return filepath.ToSlash(rel), nil
}

// timerTick is the unit the runtime rounds wait wake-ups up to
// (engine.DefaultTimerTick), scaled as every scenario duration is.
func timerTick(timeScale float64) time.Duration {
	return time.Duration(float64(engine.DefaultTimerTick) * timeScale)
}
