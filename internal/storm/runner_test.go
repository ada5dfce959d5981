package storm_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/stormctl/stormctl/internal/base/filetest"
	"github.com/stormctl/stormctl/internal/engines/builtinengines"
	"github.com/stormctl/stormctl/internal/eventlog"
	"github.com/stormctl/stormctl/internal/history"
	"github.com/stormctl/stormctl/internal/storm"
	"github.com/stormctl/stormctl/internal/storm/stormdir"
	"github.com/stormctl/stormctl/reports"
	"github.com/stormctl/stormctl/worlds"
	"github.com/stormctl/stormctl/worlds/local"
)

// TestMain checks that no goroutine of a storm (runner, runtimes, drivers,
// worlds) outlives the tests.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// plan validates cfg against a registry holding the real local world. The
// worlds' scratch directories (os.MkdirTemp) go under a test temp dir too.
func plan(t *testing.T, cfg stormdir.Config) *storm.Plan {
	t.Helper()
	t.Setenv("TMPDIR", t.TempDir())
	var reg worlds.Registry
	local.Register(&reg)
	cfg.Out = filepath.Join(t.TempDir(), "storm")
	p, err := storm.NewPlan(cfg.Defaults(), &reg, builtinengines.Engines())
	if err != nil {
		t.Fatalf("Validate: %v", err)
	}
	return p
}

func deps() storm.Deps {
	var reg worlds.Registry
	local.Register(&reg)
	return storm.Deps{Worlds: &reg, Version: "test"}
}

// jsonLines decodes every line of path into a fresh T, failing on any line
// that does not parse (unknown fields included).
func jsonLines[T any](t *testing.T, path string) []T {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []T
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 16<<20)
	for n := 1; sc.Scan(); n++ {
		dec := json.NewDecoder(bytes.NewReader(sc.Bytes()))
		dec.DisallowUnknownFields()
		var v T
		if err := dec.Decode(&v); err != nil {
			t.Fatalf("%s line %d does not parse: %v\n%s", filepath.Base(path), n, err, sc.Bytes())
		}
		out = append(out, v)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func readSummary(t *testing.T, dir string) reports.Summary {
	t.Helper()
	var s reports.Summary
	filetest.ReadJSON(t, filepath.Join(dir, stormdir.FileSummary), &s)
	return s
}

// runStorm runs the storm p plans, within 45 s, and returns its summary.
func runStorm(t *testing.T, p *storm.Plan) *reports.Summary {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 45*time.Second)
	defer cancel()
	sum, err := storm.Run(ctx, p, deps())
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	return sum
}

// noScratchLeft fails if a storm left its worlds' scratch directories.
func noScratchLeft(t *testing.T) {
	t.Helper()
	left, _ := filepath.Glob(filepath.Join(os.Getenv("TMPDIR"), "stormctl-*"))
	if len(left) > 0 {
		t.Errorf("the storm left scratch directories behind: %v", left)
	}
}

func TestRunControlStorm(t *testing.T) {
	p := plan(t, stormdir.Config{
		Worlds: []string{"local"}, Scenarios: []string{"control"}, Conditions: []string{"main", "seq"},
		Runs: 2, TimeScale: 0.1, Latency: "none", Timeout: 30 * time.Second, Seed: 11,
	})
	dir := p.Config.Out
	sum := runStorm(t, p)
	noScratchLeft(t)

	// The returned summary and summary.json agree: 2 cells of 2 completed runs.
	onDisk := readSummary(t, dir)
	for name, s := range map[string]*reports.Summary{"returned": sum, stormdir.FileSummary: &onDisk} {
		if s.Interrupted || len(s.Cells) != 2 {
			t.Fatalf("%s summary: interrupted %v, %d cells; want a whole storm of 2 cells", name, s.Interrupted, len(s.Cells))
		}
		for _, c := range s.Cells {
			if c.Runs != 2 || c.Completed != 2 {
				t.Errorf("%s summary: cell %s has %d runs, %d completed (%s); want 2, 2", name, c.Key(), c.Runs, c.Completed, c.Compact())
			}
			if c.Gaps != 0 || c.Duplicates != 0 {
				t.Errorf("%s summary: cell %s has %d gaps, %d duplicates", name, c.Key(), c.Gaps, c.Duplicates)
			}
			// Every event of these runs was minted and committed: each cell
			// carries the windows of its run_created events at least.
			if w := c.Windows[eventlog.RunCreated]; w.N != 2 || w.Max < w.P50 {
				t.Errorf("%s summary: cell %s windows %+v, want run_created over its 2 runs", name, c.Key(), c.Windows)
			}
			if len(c.Pairs) > reports.MaxCellPairs {
				t.Errorf("%s summary: cell %s lists %d type pairs, at most %d", name, c.Key(), len(c.Pairs), reports.MaxCellPairs)
			}
		}
	}
	for _, cond := range []string{"main", "seq"} {
		if sum.Cell(history.CellKey{World: "local", Scenario: "control", Condition: cond}) == nil {
			t.Errorf("no cell for condition %s", cond)
		}
	}

	runs := jsonLines[reports.RunRecord](t, filepath.Join(dir, stormdir.FileRuns))
	if len(runs) != 4 {
		t.Fatalf("runs.jsonl has %d lines, want 4", len(runs))
	}
	runIDs := map[string]bool{}
	condOf := map[string]string{}
	for _, r := range runs {
		condOf[r.RunID] = r.Condition
		if r.Outcome != history.Completed {
			t.Errorf("run %s (%s) is %s: %s", r.RunID, r.Condition, r.Outcome, r.Detail)
		}
		if r.Findings.Reads == 0 || r.Stats.Invocations == 0 || r.Events == 0 {
			t.Errorf("run %s recorded no reads, invocations or events: %+v", r.RunID, r)
		}
		// Every rejection the engine counted has its verdict, and no more:
		// a rejection that returned as the run ended is still one.
		if int64(len(r.Verdicts)) != r.Stats.Rejections {
			t.Errorf("run %s: %d rejections counted, %d verdicts", r.RunID, r.Stats.Rejections, len(r.Verdicts))
		}
		runIDs[r.RunID] = true
	}
	if len(runIDs) != 4 {
		t.Errorf("run ids are not unique: %v", runIDs)
	}

	finals, err := filepath.Glob(filepath.Join(dir, stormdir.DirEvents, "*", "*.jsonl"))
	if err != nil || len(finals) != 4 {
		t.Fatalf("events/ holds %d final logs (%v), want 4", len(finals), err)
	}
	for _, f := range finals {
		runID := strings.TrimSuffix(filepath.Base(f), ".jsonl")
		if !runIDs[runID] {
			t.Errorf("final log %s is of no recorded run", f)
		}
		evs := jsonLines[eventlog.Event](t, f)
		if err := completedLog(evs, p.Conditions[condOf[runID]].Knobs.Policy.Fenced()); err != nil {
			t.Errorf("final log %s: %v", f, err)
		}
	}

	ops := jsonLines[history.Op](t, filepath.Join(dir, stormdir.FileHistory))
	lists := 0
	for _, op := range ops {
		if !runIDs[op.RunID] {
			t.Errorf("history op %+v is of no recorded run", op)
		}
		if op.Kind == history.OpList && op.Read != nil && strings.HasPrefix(op.Actor, "inv-") {
			lists++
		}
	}
	if lists == 0 {
		t.Error("history.jsonl holds no invocation reads")
	}
	if _, err := os.Stat(filepath.Join(dir, stormdir.FileStorm)); err != nil {
		t.Errorf("no %s: %v", stormdir.FileStorm, err)
	}
}

func TestRunInterrupted(t *testing.T) {
	p := plan(t, stormdir.Config{
		Worlds: []string{"local"}, Scenarios: []string{"step-storm"}, Conditions: []string{"main"},
		Runs: 6, RunsInFlight: 1, TimeScale: 0.2, Latency: "none", Timeout: 30 * time.Second, Seed: 3,
	})
	dir := p.Config.Out
	r := interruptAfter(t, p, 1)
	runsFile := filepath.Join(dir, stormdir.FileRuns)
	noScratchLeft(t)

	if !errors.Is(r.err, storm.ErrInterrupted) {
		t.Fatalf("Run = %v, want ErrInterrupted", r.err)
	}
	if r.sum == nil || !r.sum.Interrupted || len(r.sum.Cells) != 1 {
		t.Fatalf("partial summary %+v, want one cell, marked interrupted", r.sum)
	}
	runs := jsonLines[reports.RunRecord](t, runsFile)
	c := r.sum.Cells[0]
	if len(runs) == 0 || len(runs) >= 6 || c.Runs != len(runs) {
		t.Errorf("%d runs recorded, the summary counts %d; want the same number, at least 1 and fewer than 6", len(runs), c.Runs)
	}
	for _, rec := range runs {
		if rec.Outcome == history.Stuck || rec.Outcome == history.Infra {
			t.Errorf("interrupting the storm recorded run %s as %s: %s", rec.RunID, rec.Outcome, rec.Detail)
		}
	}
	if onDisk := readSummary(t, dir); !onDisk.Interrupted || onDisk.Cells[0].Runs != c.Runs {
		t.Errorf("%s: interrupted %v, %d runs; want interrupted, %d runs", stormdir.FileSummary, onDisk.Interrupted, onDisk.Cells[0].Runs, c.Runs)
	}
	jsonLines[history.Op](t, filepath.Join(dir, stormdir.FileHistory))
}

// runResult is what storm.Run returned.
type runResult struct {
	sum *reports.Summary
	err error
}

// interruptAfter runs p's storm and cancels its context (Ctrl-C) once n
// runs are recorded in runs.jsonl; it returns what Run returned.
func interruptAfter(t *testing.T, p *storm.Plan, n int) runResult {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	done := make(chan runResult, 1)
	go func() {
		sum, err := storm.Run(ctx, p, deps())
		done <- runResult{sum, err}
	}()
	runsFile := filepath.Join(p.Config.Out, stormdir.FileRuns)
	deadline := time.Now().Add(45 * time.Second)
	for {
		raw, _ := os.ReadFile(runsFile)
		if bytes.Count(raw, []byte("\n")) >= n {
			break
		}
		select {
		case r := <-done:
			t.Fatalf("Run ended before %d runs were recorded: %v", n, r.err)
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d runs were not recorded in time", n)
		}
	}
	cancel()
	select {
	case r := <-done:
		return r
	case <-time.After(30 * time.Second):
		t.Fatal("Run did not return after its context ended")
	}
	return runResult{}
}

// completedLog checks a completed run's final log: run_created first, one
// terminal event, run_completed. A fact may follow it (a wait's completion
// or a step's result written by a writer that loaded the log before the
// run completed, as in the real engine, whose stores take facts for an
// ended run); under a fence (fenced) a decision may not.
func completedLog(evs []eventlog.Event, fenced bool) error {
	if len(evs) == 0 || evs[0].Type != eventlog.RunCreated {
		return fmt.Errorf("does not start with run_created (%d events)", len(evs))
	}
	end := -1
	for i, e := range evs {
		if !e.Type.IsTerminal() {
			continue
		}
		if end >= 0 || e.Type != eventlog.RunCompleted {
			return fmt.Errorf("terminal event %s at %d (run_completed at %d)", e.Type, i, end)
		}
		end = i
	}
	if end < 0 {
		return fmt.Errorf("has no run_completed")
	}
	for _, e := range evs[end+1:] {
		if fenced && e.Type.IsDecision() {
			return fmt.Errorf("decision %s %s (seq %d) follows run_completed under a fence", e.Type, e.CorrelationID, e.Seq)
		}
	}
	return nil
}

func TestCompletedLog(t *testing.T) {
	ev := func(typ eventlog.Type) eventlog.Event { return eventlog.Event{Type: typ} }
	created, step, started, done, failed := ev(eventlog.RunCreated), ev(eventlog.StepCreated), ev(eventlog.StepStarted), ev(eventlog.RunCompleted), ev(eventlog.RunFailed)
	tests := []struct {
		name   string
		evs    []eventlog.Event
		fenced bool
		ok     bool
	}{
		{"ends with run_completed", []eventlog.Event{created, step, started, done}, true, true},
		{"a fact after it", []eventlog.Event{created, step, done, started}, true, true},
		{"a decision after it, unfenced", []eventlog.Event{created, done, step}, false, true},
		{"a decision after it, fenced", []eventlog.Event{created, done, step}, true, false},
		{"empty", nil, false, false},
		{"no run_created first", []eventlog.Event{step, created, done}, false, false},
		{"no terminal", []eventlog.Event{created, step}, false, false},
		{"failed", []eventlog.Event{created, failed}, false, false},
		{"two terminals", []eventlog.Event{created, done, done}, false, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if err := completedLog(tc.evs, tc.fenced); (err == nil) != tc.ok {
				t.Errorf("completedLog = %v, want ok %v", err, tc.ok)
			}
		})
	}
}
