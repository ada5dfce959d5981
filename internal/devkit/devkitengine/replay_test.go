package devkitengine_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stormctl/stormctl/forensics"
	"github.com/stormctl/stormctl/internal/analysis/verdict"
	"github.com/stormctl/stormctl/internal/devkit/devkitengine"
	"github.com/stormctl/stormctl/internal/engines/builtinengines"
	"github.com/stormctl/stormctl/internal/history"
	"github.com/stormctl/stormctl/internal/prodlog"
	"github.com/stormctl/stormctl/internal/storm"
	"github.com/stormctl/stormctl/internal/storm/stormdir"
	"github.com/stormctl/stormctl/internal/tools/evidence"
	"github.com/stormctl/stormctl/internal/tools/jsrepro"
	"github.com/stormctl/stormctl/internal/tools/replay"
	"github.com/stormctl/stormctl/internal/tools/rtshrink"
	"github.com/stormctl/stormctl/reports"
	"github.com/stormctl/stormctl/worlds/devkitworld"
)

// TestReplayThroughRuntime: a small step-storm of the published runtime
// on devkit-local, and every run of it replayed through the same runtime
// from its recorded operations, and prefix by prefix from its final log. A corrupted run's recorded divergence
// (core's own CORRUPTED_EVENT_LOG, its text the runtime's) reproduces
// every time; every invocation that was not cut by the run's end does
// again what it recorded. A storm whose runs all happen to stay clean
// replays them all the same and skips the corrupted case, saying so.
func TestReplayThroughRuntime(t *testing.T) {
	needs(t)
	if testing.Short() {
		t.Skip("skipping in -short: storms the published runtime for a few minutes")
	}
	t.Setenv("TMPDIR", t.TempDir())
	reg := registry(t)
	cfg := stormdir.Config{Worlds: []string{devkitworld.LocalName}, Scenarios: []string{"step-storm"}, Conditions: []string{"main"},
		Runs: 4, Rounds: 3, TimeScale: 1, Latency: "none", Timeout: 3 * time.Minute, Seed: 11, Engine: devkitengine.Name,
		Out: filepath.Join(t.TempDir(), "storm")}
	p, err := storm.NewPlan(cfg.Defaults(), reg, builtinengines.Engines())
	if err != nil {
		t.Fatal(err)
	}
	_, err = storm.Run(t.Context(), p, storm.Deps{Worlds: reg, Version: "test"})
	skipOnPrerequisite(t, err)
	if err != nil {
		t.Fatalf("storm: %v", err)
	}
	dir, err := stormdir.Open(cfg.Out)
	if err != nil {
		t.Fatal(err)
	}
	runs, err := dir.Runs()
	if err != nil {
		t.Fatal(err)
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		t.Fatal(err)
	}
	judged := checkJudged(t, cfg.Out, runs)
	corrupted := 0
	shrunk := false
	for _, rec := range runs {
		if rec.Outcome != history.Corrupted && rec.Outcome != history.Completed {
			continue // stuck or infra: a record cut anywhere
		}
		sr, err := evidence.Load(cfg.Out, rec.RunID)
		if err != nil {
			t.Fatal(err)
		}
		in := sr.ReplayInput()
		if err := replay.Servable(in); err != nil {
			t.Fatalf("run %s: %v", rec.RunID, err)
		}
		rt, err := devkitengine.ReplayerFor(t.Context(), cache, sr.Runtime, rec.CellKey.World, rec.CellKey.Scenario, nil)
		skipOnPrerequisite(t, err)
		if err != nil {
			t.Fatal(err)
		}
		in.Runtime = rt
		if rec.Outcome == history.Corrupted && !shrunk {
			shrunk = checkShrinkEmit(t, cache, in, rt, sr)
		}
		rep, err := replay.Run(t.Context(), in, replay.Options{Repeat: 2})
		if err != nil {
			rt.Close()
			t.Fatalf("replay %s: %v", rec.RunID, err)
		}
		// Its final log, as a production store holds it, replays prefix by
		// prefix through the same runtime: a divergence there is core's.
		prefixes, err := replay.Prefixes(t.Context(), replay.StoredLog{Log: prodlog.Log{RunID: rec.RunID, Source: "test", Events: sr.Final}, Scenario: rec.CellKey.Scenario,
			Runtime: rt}, replay.PrefixOptions{})
		rt.Close()
		if err != nil {
			t.Fatalf("replay the prefixes of %s: %v", rec.RunID, err)
		}
		if f := prefixes.First; prefixes.Failed != nil || (f != nil && !strings.HasPrefix(f.Error, "Workflow replay diverged ")) {
			t.Errorf("run %s: prefixes %s", rec.RunID, prefixes.Summary)
		}
		t.Logf("run %s (%s): %s", rec.RunID, rec.Outcome, prefixes.Summary)
		for _, inv := range rep.Invocations {
			if inv.Verdict != replay.Every && inv.Verdict != replay.Cut {
				t.Errorf("run %s (%s): %s replayed %s: %+v", rec.RunID, rec.Outcome, inv.Actor, inv.Verdict, inv.Behaviours)
			}
		}
		if rec.Outcome != history.Corrupted {
			continue
		}
		corrupted++
		// The recorded divergence is core's CORRUPTED_EVENT_LOG, in the
		// runtime's own words (the model never says "Workflow replay
		// diverged"), and the replay raises it again, word for word.
		if rep.Recorded == nil || !strings.HasPrefix(rep.Recorded.Error, "Workflow replay diverged ") || rep.Recorded.Error != rec.Detail {
			t.Fatalf("run %s: recorded divergence %+v; want the runtime's run_failed message %q", rec.RunID, rep.Recorded, rec.Detail)
		}
		if rep.Verdict != replay.Every || rep.Reproduced != 2 {
			t.Errorf("run %s: the recorded divergence reproduced %d of 2 times (%s): %s", rec.RunID, rep.Reproduced, rep.Verdict, rep.Summary)
		}
		for _, inv := range rep.Invocations {
			if !inv.Failed {
				continue
			}
			d := inv.Behaviours[0].Divergence
			if d == nil || d.Kind != "corrupted_event_log" || d.Error != rep.Recorded.Error || d.ID == "" {
				t.Errorf("run %s: %s's replay raised %+v; want the recorded CORRUPTED_EVENT_LOG at its event", rec.RunID, inv.Actor, d)
			}
		}
	}
	if judged == 0 {
		t.Skipf("no write was refused in this %d-run step-storm (outcomes emerge): its judging checked nothing", len(runs))
	}
	if corrupted == 0 {
		t.Skipf("no run of this %d-run step-storm was corrupted (outcomes emerge): its runs replayed as recorded, but there was no recorded divergence to reproduce", len(runs))
	}
	if !shrunk {
		t.Skipf("no corrupted run of this storm could be written as one log (each needed its recorded pages): shrink's written test checked nothing")
	}
}

// checkShrinkEmit shrinks a corrupted run through its runtime and writes
// it as a node-test reproduction, which node's own test runner then runs
// against the kit's @workflow/core: it must fail, with the runtime's own
// CORRUPTED_EVENT_LOG text. It reports whether the run's failure
// reproduced and shrank (a run whose failure needs its recorded paging
// writes nothing, said in the log).
func checkShrinkEmit(t *testing.T, cache string, in replay.Input, rt *devkitengine.Replayer, sr *evidence.Run) bool {
	t.Helper()
	f, err := replay.FailingScript(in)
	if err != nil {
		t.Fatalf("run %s: %v", sr.Record.RunID, err)
	}
	res, err := rtshrink.Shrink(t.Context(), rt, f, rtshrink.Options{Budget: 90 * time.Second})
	if err != nil {
		t.Fatalf("shrink %s: %v", sr.Record.RunID, err)
	}
	if res.Case == nil {
		t.Logf("run %s: %+v: not written", sr.Record.RunID, res.Phases)
		return false
	}
	if res.After.Events >= res.Before.Events || res.Failure.Code != rtshrink.CorruptedEventLog {
		t.Errorf("run %s: shrank %+v -> %+v, failing with %+v", sr.Record.RunID, res.Before, res.After, res.Failure)
	}
	code, err := rt.WorkflowCode(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "repro")
	if _, err := jsrepro.Write(dir, jsrepro.Fixture{Form: jsrepro.NodeTest, Title: "repro " + sr.Record.RunID, Case: *res.Case,
		Failure: res.Failure, Layer: "world", Class: sr.Record.Class, Versions: sr.Runtime.Versions,
		WorkflowName: "workflow//./workflows/step-storm//stepStorm", WorkflowCode: code}); err != nil {
		t.Fatal(err)
	}
	// The kit's packages stand in for the README's npm install.
	ch, kind, err := devkitengine.RuntimeOf(sr.Runtime, sr.Record.CellKey.World)
	if err != nil {
		t.Fatal(err)
	}
	kit, err := devkitengine.Prepare(t.Context(), cache, ch, kind, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(kit.Dir, "node_modules"), filepath.Join(dir, "node_modules")); err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(t.Context(), "node", "--test")
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatalf("run %s: its reproduction passed on the runtime it came from:\n%s", sr.Record.RunID, out)
	}
	want := firstLine(res.Failure.Message)
	if !strings.Contains(string(out), "CORRUPTED_EVENT_LOG") || !strings.Contains(string(out), want) {
		t.Errorf("run %s: node --test failed without the runtime's text %q:\n%s", sr.Record.RunID, want, out)
	}
	t.Logf("run %s: shrank %d -> %d events in %d replays; node --test fails with %q", sr.Record.RunID, res.Before.Events, res.After.Events, res.Tests, want)
	return true
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// checkJudged checks the storm's rejections: every write the world refused
// a run (history.jsonl) before the storm's last rewrite of runs.jsonl is
// one of the run's rejections, those refused after its record too, and
// the storm judged them all through the runtime (none pending, each with
// its reason; at most 10% unknown, the bar).
func checkJudged(t *testing.T, dir string, runs []reports.RunRecord) (judged int) {
	t.Helper()
	st, err := os.Stat(filepath.Join(dir, stormdir.FileRuns))
	if err != nil {
		t.Fatal(err)
	}
	total, unknown := 0, 0
	for _, rec := range runs {
		sr, err := evidence.Load(dir, rec.RunID)
		if err != nil {
			t.Fatal(err)
		}
		refused := 0
		for _, op := range sr.Ops {
			if forensics.IsRefusal(op) && op.End.Before(st.ModTime()) {
				refused++
			}
		}
		if int(rec.Stats.Rejections) != len(rec.Verdicts) || len(rec.Verdicts) < refused {
			t.Errorf("run %s: %d rejections, %d verdicts; its history holds %d writes refused before the storm rewrote runs.jsonl", rec.RunID, rec.Stats.Rejections, len(rec.Verdicts), refused)
		}
		for _, j := range rec.Verdicts {
			if j.Pending || j.Reason == "" || strings.Contains(j.Reason, verdict.NotJudgedYet) {
				t.Errorf("run %s: a rejection not judged: %+v", rec.RunID, j)
				break
			}
			if j.Verdict == verdict.Unknown {
				unknown++
			}
		}
		total += len(rec.Verdicts)
	}
	t.Logf("%d rejections judged, %d unknown", total, unknown)
	if unknown*10 > total {
		t.Errorf("%d of %d rejections unknown: more than 10%%", unknown, total)
	}
	return total - unknown
}
