package pipeline

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/stormctl/stormctl/forensics"
	"github.com/stormctl/stormctl/internal/analysis/explain"
	"github.com/stormctl/stormctl/internal/analysis/timeline"
	"github.com/stormctl/stormctl/internal/analysis/verdict"
	"github.com/stormctl/stormctl/internal/base/plural"
	"github.com/stormctl/stormctl/internal/engine"
	"github.com/stormctl/stormctl/internal/engines/builtinengines"
	"github.com/stormctl/stormctl/internal/eventlog"
	"github.com/stormctl/stormctl/internal/history"
	"github.com/stormctl/stormctl/internal/storm/stormdir"
	"github.com/stormctl/stormctl/reports"
	"github.com/stormctl/stormctl/scenarios"
	"github.com/stormctl/stormctl/worlds"
)

// Cell is the plan of a run's cell: what deciding, checking and explaining
// one of its runs needs to know of it.
type Cell struct {
	Key history.CellKey
	// Knobs are the cell's condition's: the scheme orders its logs, the
	// policy is what the reference replays (verdicts, explanations) replay
	// with, and Engine names the engine that ran the cell ("" or
	// the model: the model; explain replays no other).
	Knobs engine.Knobs
	// Scenario checks a completed run's output, and its program and steps
	// are the reference replays'. A stored run of a scenario this build
	// does not know has none (Program nil): its class is not computed.
	Scenario scenarios.Scenario
	// TimeScale is the storm's: a stuck run's waits were due at its timer
	// tick (engine.TimerTickAt).
	TimeScale float64
}

// Classify says which runs the pipeline computes a root-cause class for
// (explain.Classify).
type Classify int

// The classification modes.
const (
	// ClassifyExplained classifies every run whose outcome gets a class
	// (corrupted, silent, gap, hole, stuck): a live run, and a stored one
	// classified again (forensics --reclassify).
	ClassifyExplained Classify = iota
	// ClassifyMissing classifies a stored run whose outcome gets a class
	// and that was recorded without one (forensics DIR); the recorded
	// class stands otherwise.
	ClassifyMissing
	// ClassifyAlways explains every run, whatever its outcome (explain
	// DIR RUN): a run whose outcome gets no class gets an explanation
	// saying so.
	ClassifyAlways
	// ClassifyNever keeps a stored run's recorded class, whatever it is
	// (a resumed storm's recorded runs: only their findings, commit order
	// and commit times are computed again, for the cells' tallies).
	ClassifyNever
)

// Run is what a run left behind: the evidence its record is made of.
type Run struct {
	ID    string
	Index int
	// Started is when the runner started the run; Stopped when its engine
	// saw it end or its time ran out, the end its outcome's evidence is
	// judged at (before the engine waited out writes that outlive the
	// run); Ended when all of it had stopped.
	Started, Stopped, Ended time.Time
	// Ops is the run's recorded history.
	Ops []history.Op
	// Collected is what the world held of the run once it ended: its
	// final log (and the error reading it), whose commit times, and its
	// guard's counts (worlds.Collect).
	worlds.Collected
	// Stats is what the engine did for the run; StartErr is why the engine
	// could not start it, DriveErr why the scenario's driver gave up.
	Stats              history.RunStats
	StartErr, DriveErr error
	// TimedOut says the run's --timeout ran out before it ended: a start
	// cut off by it is a stuck run, not a failed one.
	TimedOut bool
	// Timeout is the storm's --timeout, for a stuck run's detail.
	Timeout time.Duration
	// Faults label the nemesis faults that overlapped the run.
	Faults []string
	// Recorded, for a stored run (Stored), is its record as the storm
	// wrote it: its outcome, detail and verdicts stand, as the evidence
	// they were decided on (the read error, the engine's end) is not
	// stored; its findings are computed again.
	Recorded *reports.RunRecord
	// Classify says whether the run's class is computed.
	Classify Classify
}

// Result is a run's record and what the storm and the commands do with it
// beyond the record.
type Result struct {
	Record reports.RunRecord
	// Analysis is the checkers' account of the run: Record's findings,
	// and the commit order and commit times a storm's cells tally.
	Analysis forensics.RunAnalysis
	// Explained is the run's explanation when its class was computed (see
	// Classify), nil otherwise.
	Explained *Explained
}

// Explained is a run's explanation and what it was made from, which its
// timeline is drawn from.
type Explained struct {
	Input explain.Input
	explain.Explanation
}

// Process is the post-run pipeline: from what a run left behind to its
// record. A live run's outcome is decided from its final log and the
// engine's evidence (decide), the checkers' findings are computed over its
// history and final log (forensics), each fenced or guard rejection gets a
// verdict from a reference replay (verdict), and a run whose outcome gets
// a class is explained (explain). A stored run (Run.Recorded) keeps its
// recorded outcome and verdicts; its findings, and its class as Classify
// says, are computed again. Process writes nothing: the storm, forensics
// and explain write what they keep of the result.
func Process(c Cell, r Run) Result {
	var rec reports.RunRecord
	if r.Recorded != nil {
		rec = *r.Recorded
	} else {
		rec = reports.RunRecord{
			CellKey: c.Key, Index: r.Index, RunID: r.ID,
			Started: r.Started.UTC(), Ended: r.Ended.UTC(), Millis: r.Ended.Sub(r.Started).Milliseconds(),
			Events: len(r.Final), Stats: r.Stats, CommitSource: r.CommitSource, Guard: r.Guard, Faults: r.Faults,
		}
		rec.SpecVersion = specVersion(r.Final)
		var starvedAtCut bool
		rec.Outcome, rec.Detail, starvedAtCut = outcome(c.Scenario, r)
		if starvedAtCut {
			h := *rec.Stats.Harness
			h.StarvedAtCut = true
			rec.Stats.Harness = &h
		}
	}
	an := forensics.AnalyzeRun(forensics.RunInput{Scheme: c.Knobs.Scheme, Final: r.Final, Ops: r.Ops,
		StoreCommitTimes: r.CommitSource == "store"})
	rec.Findings = an.Findings
	if r.Recorded == nil {
		if builtinengines.Traits(c.Knobs.Engine).Published {
			// The published runtime's own fences are its worlds' refusals:
			// each is a rejection of the run, not yet judged (Refused).
			rec.Verdicts = verdict.Refused(r.Ops)
			rec.Stats.Rejections = int64(len(rec.Verdicts))
		} else {
			rec.Verdicts = verdict.Judge(verdict.Input{RunID: r.ID, Program: c.Scenario.Program, Knobs: c.Knobs,
				Final: r.Final, Ops: r.Ops, Commits: an.Commits, Check: c.Scenario.Check})
		}
		rec.Judged = true
	}
	res := Result{Record: rec, Analysis: an}
	// An infra run the harness starved is explained by the harness's own
	// account (class starved), not by the runtime's.
	starved := rec.Stats.Harness.WasStarved() && r.Classify != ClassifyNever && (r.Classify != ClassifyMissing || rec.Class == "")
	if c.Scenario.Program != nil && (r.classifies(rec.Outcome, rec.Class) || starved) {
		in := explainInput(c, rec, r.Final, r.Ops)
		ex := explain.Classify(in)
		res.Record.Class, res.Record.Timeline = ex.Class, ""
		res.Explained = &Explained{Input: in, Explanation: ex}
	}
	return res
}

// AddLate adds to a run's record what its history gained after its end
// (late, a delivery that outlived the run): on the published runtime, the
// writes its world refused then are rejections of the run too, pending.
// The runner calls it when it writes the record, and again once every run
// has ended, for those refused after the record.
func AddLate(c Cell, rec *reports.RunRecord, late []history.Op) {
	if !builtinengines.Traits(c.Knobs.Engine).Published {
		return
	}
	v := verdict.Refused(late)
	rec.Verdicts = append(rec.Verdicts, v...)
	rec.Stats.Rejections += int64(len(v))
}

// classifies says whether a run of outcome o, recorded with class
// (none: ""), gets its class computed.
func (r Run) classifies(o history.Outcome, class string) bool {
	switch r.Classify {
	case ClassifyAlways:
		return true
	case ClassifyMissing:
		return explain.Explains(o) && class == ""
	case ClassifyNever:
		return false
	}
	return explain.Explains(o)
}

// Classifies says whether Process computes the class of a stored run
// (Stored), with a cell that has its scenario.
func (r Run) Classifies() bool {
	return r.Recorded != nil && r.classifies(r.Recorded.Outcome, r.Recorded.Class)
}

// outcome decides a live run's outcome (decide), unless its engine could
// not start it: failed, or infra when the store was unavailable. A stuck
// run's detail says why its driver gave up, if it did.
func outcome(sc scenarios.Scenario, r Run) (o history.Outcome, detail string, starvedAtCut bool) {
	o, detail = decide(sc, r.Final, r.ReadErr, r.Stats, r.Stopped)
	switch {
	case r.StartErr == nil:
	case r.TimedOut && errors.Is(r.StartErr, context.DeadlineExceeded):
		// The run's own time ran out while it was being started: no
		// terminal event before the timeout, which is what stuck means.
		o, detail = history.Stuck, fmt.Sprintf("no terminal event before the timeout (%s): the run's start had not finished: %s", r.Timeout, r.StartErr)
	case errors.Is(r.StartErr, eventlog.ErrUnavailable):
		o, detail = history.Infra, r.StartErr.Error()
	default:
		o, detail = history.Failed, r.StartErr.Error()
	}
	if o == history.Stuck && r.Stats.Harness.Starved() {
		o, detail, starvedAtCut = history.Infra, StarvedDetail(r.Stats.Harness), true
	}
	if o == history.Stuck && !r.Stopped.IsZero() {
		if n := writtenBefore(r.Ops, r.Stopped, ProgressWindow); n > 0 {
			detail += fmt.Sprintf("; still making progress at the timeout: %s written in its last %s (a longer --timeout would likely decide it)",
				plural.Count(n, "event"), ProgressWindow)
		}
	}
	if r.DriveErr != nil && o == history.Stuck {
		detail += "; driver: " + r.DriveErr.Error()
	}
	return o, detail, starvedAtCut
}

// ProgressWindow is how far back from a stuck run's end its writes count as
// progress at the timeout: a run still writing then was cut while
// working, not hung.
const ProgressWindow = 30 * time.Second

// writtenBefore counts the events the run's operations wrote in the window
// before end (appends the store took).
func writtenBefore(ops []history.Op, end time.Time, window time.Duration) int {
	n := 0
	for _, op := range ops {
		if op.Kind != history.OpAppend || op.Err != "" || op.End.After(end) || op.End.Before(end.Add(-window)) {
			continue
		}
		n += len(op.Wrote)
	}
	return n
}

// StarvedDetail is the detail of a run the harness starved (infra): its
// host's event loop was saturated for most of its life, so its deliveries
// waited for the host, not for the runtime; what the run did is no
// evidence about the runtime or its world.
func StarvedDetail(h *history.Harness) string {
	machine := "unknown"
	if h.MachineBusy >= 0 {
		machine = fmt.Sprintf("%.0f%%", 100*h.MachineBusy)
	}
	return fmt.Sprintf("starved by the harness: no terminal event before the timeout while its host (%d) was saturated %.0f%% of the run's life "+
		"(event loop busy p50 %.0f%%, p99 %.0f%%; loop delay p99 up to %.0f ms; machine CPU %s busy): its deliveries waited for the harness's host, not for the runtime",
		h.Host, 100*h.Saturated, 100*h.ELUP50, 100*h.ELUP99, h.DelayP99Ms, machine)
}

// explainInput is what explaining a run of cell c needs: its record, final
// log and history, the condition's knobs and the scenario for the
// reference replay, and the storm's timer tick (when a stuck run's waits
// were due).
func explainInput(c Cell, rec reports.RunRecord, final []eventlog.Event, ops []history.Op) explain.Input {
	return explain.Input{
		RunID: rec.RunID, Cell: rec.CellKey.String(), Outcome: rec.Outcome, Detail: rec.Detail,
		Program: c.Scenario.Program, Knobs: c.Knobs, Final: final, Ops: ops, Ended: rec.Ended,
		Steps: c.Scenario.Steps, TimerTick: engine.TimerTickAt(c.TimeScale), Harness: rec.Stats.Harness,
	}
}

// WriteTimeline writes the run's timeline into the storm directory dir
// (timelines/<run>.html) and returns its path relative to dir.
func (e *Explained) WriteTimeline(dir string) (string, error) {
	return stormdir.WriteTimeline(dir, e.Input.RunID, e.Render)
}

// Render writes the run's timeline: one self-contained HTML page, at most
// timeline.MaxBytes.
func (e *Explained) Render(w io.Writer) error {
	return timeline.Write(w, e.Input, e.Explanation, timeline.MaxBytes)
}

// Stored is the Run a stored record, its final log and its history
// describe: the record stands for the evidence that is not stored.
func Stored(rec reports.RunRecord, final []eventlog.Event, ops []history.Op) Run {
	return Run{ID: rec.RunID, Index: rec.Index, Started: rec.Started, Stopped: rec.Ended, Ended: rec.Ended, Ops: ops,
		Collected: worlds.Collected{Final: final, CommitSource: rec.CommitSource, Guard: rec.Guard},
		Stats:     rec.Stats, Faults: rec.Faults, Recorded: &rec}
}

// StoredCell is the cell of a stored run, as its storm.json describes it:
// the condition's knobs, the scenario, the time scale. A condition
// storm.json does not list is an error; so is a scenario this build does
// not know, returned with the cell without its scenario (the run's
// findings can still be computed, not its class).
func StoredCell(m *stormdir.Meta, rec reports.RunRecord) (Cell, error) {
	cond, ok := m.Conditions[rec.Condition]
	if !ok {
		return Cell{}, fmt.Errorf("%s: condition %q of run %s is not in its conditions", stormdir.FileStorm, rec.Condition, rec.RunID)
	}
	c := Cell{Key: rec.CellKey, Knobs: cond.Knobs, TimeScale: m.Config.TimeScale}
	// The engine that ran the cell: its runtime's, else the condition's,
	// else the storm's (explain has a reference replay of the model's only).
	c.Knobs.Engine = cmp.Or(cond.Knobs.Engine, m.Config.Engine)
	if rt, ok := m.RuntimeOf(rec.CellKey); ok {
		c.Knobs.Engine = cmp.Or(rt.Engine, c.Knobs.Engine)
		if rt.Scheme != "" {
			c.Knobs.Scheme = eventlog.Scheme(rt.Scheme) // the runtime's logs, read by its own scheme
		}
	}
	sc, err := scenarios.Lookup(rec.Scenario)
	if err != nil {
		return c, fmt.Errorf("run %s: %w", rec.RunID, err)
	}
	c.Scenario = sc
	return c, nil
}

// specVersion is the World contract version a run was created under: the
// specVersion its runtime stamped on its run_created (the package's own
// copy of it), nil when the log holds none (the model's worlds).
func specVersion(final []eventlog.Event) *int {
	for _, e := range final {
		if e.Type != eventlog.RunCreated || len(e.Package) == 0 {
			continue
		}
		var pe struct {
			SpecVersion *int `json:"specVersion"`
		}
		if json.Unmarshal(e.Package, &pe) == nil && pe.SpecVersion != nil {
			return pe.SpecVersion
		}
	}
	return nil
}
