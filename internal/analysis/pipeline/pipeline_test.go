package pipeline

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/stormctl/stormctl/internal/analysis/explain"
	"github.com/stormctl/stormctl/internal/base/filetest"
	"github.com/stormctl/stormctl/internal/eventlog"
	"github.com/stormctl/stormctl/internal/history"
	"github.com/stormctl/stormctl/internal/storm/stormdir"
	"github.com/stormctl/stormctl/reports"
	"github.com/stormctl/stormctl/scenarios"
	"github.com/stormctl/stormctl/worlds"
)

// storedRun is one run of the schema 1 storm of stormdir's testdata: its
// cell, record, final log and history.
type storedRun struct {
	cell  Cell
	rec   reports.RunRecord
	final []eventlog.Event
	ops   []history.Op
}

func storedRuns(t *testing.T) []storedRun {
	t.Helper()
	d, err := stormdir.Open(filetest.Repo("internal", "storm", "stormdir", "testdata", "schema1"))
	if err != nil {
		t.Fatal(err)
	}
	recs, err := d.Runs()
	if err != nil {
		t.Fatal(err)
	}
	var out []storedRun
	for _, rec := range recs {
		c, err := StoredCell(d.Meta, rec)
		if err != nil {
			t.Fatal(err)
		}
		final, err := d.Events(rec.CellKey, rec.RunID)
		if err != nil {
			t.Fatal(err)
		}
		ops, err := d.RunHistory(rec.RunID)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, storedRun{c, rec, final, ops})
	}
	return out
}

// recountedRun is the one run of the schema 1 storm whose record a later
// build counts differently on purpose: since 2026-12-04 each load is judged
// on its own cursor's prefix (docs/forensics.md), and a reader that missed
// an event is counted at the load that met the hole, not again at the
// next; the schema 1 build, which summed an invocation's loads, counted 20.
const (
	recountedRun       = "wrun_01M8YS0VCHWFHAAWY6QB8S4FS3"
	recountedNonPrefix = 19
)

// TestProcessReproducesTheStormsRecord: the storm made each run's record
// with this pipeline; given the same evidence, as a live run (outcome
// decided, verdicts judged, class computed) or as a stored one (Stored:
// outcome and verdicts as recorded, findings and class computed again),
// Process makes the same record.
func TestProcessReproducesTheStormsRecord(t *testing.T) {
	t.Parallel()
	for _, s := range storedRuns(t) {
		want := s.rec
		want.Timeline = "" // the storm's to give, not the pipeline's
		if s.rec.RunID == recountedRun {
			want.Findings.NonPrefixReads = recountedNonPrefix
		}
		// The refused writes, a finding added since the storm was recorded.
		for _, op := range s.ops {
			if (op.Kind == history.OpAppend || op.Kind == history.OpAppendFenced) && op.Err != "" && op.Err != "unavailable" && op.Err != "other" {
				want.Findings.Refused++
			}
		}
		live := Run{ID: s.rec.RunID, Index: s.rec.Index, Started: s.rec.Started, Stopped: s.rec.Ended, Ended: s.rec.Ended,
			Ops: s.ops, Collected: worlds.Collected{Final: s.final, CommitSource: s.rec.CommitSource, Guard: s.rec.Guard},
			Stats: s.rec.Stats, Faults: s.rec.Faults}
		stored := Stored(s.rec, s.final, s.ops)
		for name, run := range map[string]Run{"live": live, "stored": stored} {
			res := Process(s.cell, run)
			if !reflect.DeepEqual(res.Record, want) {
				t.Errorf("%s run %s:\n got %+v\nwant %+v", name, s.rec.RunID, res.Record, want)
			}
			if got := res.Explained != nil; got != (want.Class != "") {
				t.Errorf("%s run %s (%s): explained %v", name, s.rec.RunID, want.Outcome, got)
			}
			if len(res.Analysis.Commits) != len(s.final) {
				t.Errorf("%s run %s: %d commits for %d events", name, s.rec.RunID, len(res.Analysis.Commits), len(s.final))
			}
		}
	}
}

// TestProcessClassify: a stored run's class is computed as Classify says;
// a cell without its scenario (one this build does not know) computes
// none.
func TestProcessClassify(t *testing.T) {
	t.Parallel()
	for _, s := range storedRuns(t) {
		explained := s.rec.Class != ""
		for _, tc := range []struct {
			name      string
			mode      Classify
			class     string // recorded
			scenario  bool
			wantEx    bool
			wantClass string
		}{
			{"explained outcomes", ClassifyExplained, "x", true, explained, s.rec.Class},
			{"missing: recorded stands", ClassifyMissing, "x", true, false, "x"},
			{"missing: none recorded", ClassifyMissing, "", true, explained, s.rec.Class},
			{"always", ClassifyAlways, "", true, true, s.rec.Class},
			{"unknown scenario", ClassifyAlways, "x", false, false, "x"},
			{"never: recorded stands", ClassifyNever, "x", true, false, "x"},
			{"never: none recorded stays none", ClassifyNever, "", true, false, ""},
		} {
			if !explained && tc.class != "" {
				continue // a run whose outcome gets no class is never recorded with one
			}
			rec := s.rec
			rec.Class = tc.class
			run := Stored(rec, s.final, s.ops)
			run.Classify = tc.mode
			c := s.cell
			if !tc.scenario {
				c.Scenario = scenarios.Scenario{}
			}
			res := Process(c, run)
			if (res.Explained != nil) != tc.wantEx || res.Record.Class != tc.wantClass {
				t.Errorf("%s, run %s (%s): explained %v, class %q; want %v, %q", tc.name, s.rec.RunID, s.rec.Outcome,
					res.Explained != nil, res.Record.Class, tc.wantEx, tc.wantClass)
			}
			if got, want := run.Classifies(), tc.wantEx || !tc.scenario && tc.mode == ClassifyAlways; got != want {
				t.Errorf("%s, run %s: Classifies %v, want %v", tc.name, s.rec.RunID, got, want)
			}
		}
	}
}

// TestOutcomeOfTheEngine: a run its engine could not start is failed, or
// infra when the store was unavailable, whatever its log; a stuck run's
// detail says why its driver gave up.
func TestOutcomeOfTheEngine(t *testing.T) {
	t.Parallel()
	sc, err := scenarios.Lookup("control")
	if err != nil {
		t.Fatal(err)
	}
	unavailable := fmt.Errorf("create run: %w", eventlog.ErrUnavailable)
	for _, tc := range []struct {
		name       string
		run        Run
		want       history.Outcome
		wantDetail string
	}{
		{"start failed", Run{StartErr: errors.New("boom")}, history.Failed, "boom"},
		{"start met an unavailable store", Run{StartErr: unavailable}, history.Infra, unavailable.Error()},
		{"start cut off by the run's timeout", Run{StartErr: fmt.Errorf("write run_created: lock: %w", context.DeadlineExceeded), TimedOut: true, Timeout: time.Millisecond},
			history.Stuck, "no terminal event before the timeout (1ms): the run's start had not finished: write run_created: lock: context deadline exceeded"},
		{"a deadline of the store's own, the run's time left", Run{StartErr: fmt.Errorf("create: %w", context.DeadlineExceeded)}, history.Failed, "create: context deadline exceeded"},
		{"its host saturated most of its life: starved, infra, never stuck", Run{Stats: history.RunStats{Harness: &history.Harness{Host: 2, Samples: 40, ELUP50: 0.97, ELUP99: 1, Saturated: 0.8, DelayP99Ms: 420, MachineBusy: 0.98}}},
			history.Infra, "starved by the harness: no terminal event before the timeout while its host (2) was saturated 80% of the run's life (event loop busy p50 97%, p99 100%; loop delay p99 up to 420 ms; machine CPU 98% busy)"},
		{"its host busy but not saturated for long: stuck, the runtime's", Run{Stats: history.RunStats{Harness: &history.Harness{Host: 1, Samples: 40, ELUP50: 0.7, Saturated: 0.2, MachineBusy: 0.6}}},
			history.Stuck, "no terminal event before the timeout"},
		{"stuck, driver gave up", Run{DriveErr: errors.New("no hook")}, history.Stuck, "no terminal event before the timeout; driver: no hook"},
		{"stuck, driver fine", Run{}, history.Stuck, "no terminal event before the timeout"},
	} {
		tc.run.Stopped = time.Now()
		o, detail, _ := outcome(sc, tc.run)
		if o != tc.want || !strings.HasPrefix(detail, tc.wantDetail) {
			t.Errorf("%s: %s %q, want %s %q", tc.name, o, detail, tc.want, tc.wantDetail)
		}
	}
}

// TestStuckButProgressing checks that a stuck run still writing in its last
// ProgressWindow says so: a long but healthy run is not a hung one.
func TestStuckButProgressing(t *testing.T) {
	t.Parallel()
	sc, err := scenarios.Lookup("control")
	if err != nil {
		t.Fatal(err)
	}
	end := time.Now()
	write := func(ago time.Duration, events int, errClass string) history.Op {
		return history.Op{Kind: history.OpAppend, Start: end.Add(-ago - time.Millisecond), End: end.Add(-ago),
			Wrote: make([]history.OpEvent, events), Err: errClass}
	}
	for _, tc := range []struct {
		name string
		ops  []history.Op
		want string
	}{
		{"writing to the end", []history.Op{write(5*time.Second, 2, ""), write(time.Second, 1, "")},
			"no terminal event before the timeout; still making progress at the timeout: 3 events written in its last 30s (a longer --timeout would likely decide it)"},
		{"silent for the window", []history.Op{write(2*ProgressWindow, 5, "")}, "no terminal event before the timeout"},
		{"only refused writes", []history.Op{write(time.Second, 1, "conflict")}, "no terminal event before the timeout"},
	} {
		o, detail, _ := outcome(sc, Run{Ops: tc.ops, Stopped: end})
		if o != history.Stuck || detail != tc.want {
			t.Errorf("%s: %s %q\nwant stuck %q", tc.name, o, detail, tc.want)
		}
	}
}

// TestStarvedRunsAreTheHarnesss checks a live run the harness starved all
// the way through: infra with the harness's detail and class starved,
// never explained as the runtime's stuck run; its stored record keeps them.
func TestStarvedRunsAreTheHarnesss(t *testing.T) {
	t.Parallel()
	sc, err := scenarios.Lookup("step-storm")
	if err != nil {
		t.Fatal(err)
	}
	c := Cell{Key: history.NewCellKey("devkit-local", "step-storm", "main"), Scenario: sc}
	end := time.Now()
	h := &history.Harness{Host: 1, Samples: 600, ELUP50: 1, ELUP99: 1, Saturated: 0.96, DelayP99Ms: 950, MachineBusy: 0.7}
	live := Run{ID: "wrun_starved", Started: end.Add(-240 * time.Second), Stopped: end, Ended: end, Stats: history.RunStats{Harness: h}}
	res := Process(c, live)
	if res.Record.Outcome != history.Infra || res.Record.Class != explain.Starved || !strings.HasPrefix(res.Record.Detail, "starved by the harness") {
		t.Errorf("live: %s class %q detail %q, want infra, starved", res.Record.Outcome, res.Record.Class, res.Record.Detail)
	}
	if ex := res.Explained; ex == nil || !strings.HasPrefix(ex.Summary, "starved: the harness starved it: its host (1) reported its event loop at 90% busy or more for 96% of the run's life") {
		t.Errorf("the starved run's explanation: %+v", ex)
	}
	again := Process(c, Stored(res.Record, nil, nil))
	if again.Record.Outcome != history.Infra || again.Record.Class != explain.Starved {
		t.Errorf("stored: %s class %q", again.Record.Outcome, again.Record.Class)
	}
	// A run its store could not start is infra for that, however busy its
	// host: not starved.
	outage := live
	outage.StartErr = eventlog.Unavailable("create the run", errors.New("connection refused"))
	res = Process(c, outage)
	if res.Record.Outcome != history.Infra || res.Record.Class == explain.Starved || res.Record.Stats.Harness.WasStarved() {
		t.Errorf("an unreachable store on a saturated host: %s class %q, starved %v; want infra, not starved", res.Record.Outcome, res.Record.Class, res.Record.Stats.Harness.WasStarved())
	}
}
