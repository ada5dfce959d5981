package cli_test

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stormctl/stormctl/internal/analysis/explain"
	"github.com/stormctl/stormctl/internal/analysis/timeline"
	"github.com/stormctl/stormctl/internal/cli"
	"github.com/stormctl/stormctl/internal/engines/builtinengines"
	"github.com/stormctl/stormctl/internal/history"
	"github.com/stormctl/stormctl/internal/storm"
	"github.com/stormctl/stormctl/internal/storm/stormdir"
	"github.com/stormctl/stormctl/reports"
	"github.com/stormctl/stormctl/worlds"
	"github.com/stormctl/stormctl/worlds/local"
)

// sharpStorm runs step-storm under main on the local world at a quarter of
// its time (the seed's latency windows stay as measured, so the race is
// sharper still) into dir.
func sharpStorm(ctx context.Context, t *testing.T, dir string) {
	t.Helper()
	var reg worlds.Registry
	local.Register(&reg)
	p, err := storm.NewPlan(stormdir.Config{
		Worlds: []string{"local"}, Scenarios: []string{"step-storm"}, Conditions: []string{"main"},
		Runs: 3, TimeScale: 0.25, Timeout: 60 * time.Second, Seed: 3, Out: dir,
	}.Defaults(), &reg, builtinengines.Engines())
	if err != nil {
		t.Fatalf("NewPlan: %v", err)
	}
	ctx, cancel := context.WithTimeout(ctx, 90*time.Second)
	defer cancel()
	if _, err := storm.Run(ctx, p, storm.Deps{Worlds: &reg, Version: testVersion}); err != nil {
		t.Fatalf("storm: %v", err)
	}
}

// TestExplainCommand: a storm classifies its bad runs and links their
// timelines; explain prints a run's narrative or its JSON, writes a
// timeline, and refuses an unknown run or a broken storm directory with
// exit 2 and one line.
func TestExplainCommand(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir())
	dir := filepath.Join(t.TempDir(), "storm")
	sharpStorm(t.Context(), t, dir)
	runs, err := openStorm(t, dir).Runs()
	if err != nil || len(runs) == 0 {
		t.Fatalf("runs: %v", err)
	}
	var bad, good *reports.RunRecord
	for i := range runs {
		switch {
		case explain.Explains(runs[i].Outcome) && bad == nil:
			bad = &runs[i]
		case runs[i].Outcome == history.Completed && good == nil:
			good = &runs[i]
		}
		if explain.Explains(runs[i].Outcome) && runs[i].Class == "" {
			t.Errorf("run %s (%s) was recorded without a class", runs[i].RunID, runs[i].Outcome)
		}
	}
	if bad == nil {
		t.Skip("no run of this step-storm went wrong: nothing to explain")
	}
	if bad.Timeline == "" {
		t.Errorf("the first %s run has no timeline", bad.Class)
	} else if st, err := os.Stat(filepath.Join(dir, bad.Timeline)); err != nil || st.Size() > timeline.MaxBytes {
		t.Errorf("timeline %s: %v (size cap %d)", bad.Timeline, err, timeline.MaxBytes)
	}
	if md := string(readFile(t, filepath.Join(dir, stormdir.FileMD))); !strings.Contains(md, "("+bad.Timeline+")") || !strings.Contains(md, "classes: ") {
		t.Errorf("summary.md neither counts classes nor links %s:\n%s", bad.Timeline, md)
	}

	t.Run("narrative", func(t *testing.T) {
		code, stdout, stderr := run(t.Context(), "explain", dir, bad.RunID)
		if code != cli.ExitOK || stderr != "" {
			t.Fatalf("exit %d, stderr %q", code, stderr)
		}
		for _, want := range []string{bad.RunID, bad.Class + ": ", "  1. let ", "evidence: "} {
			if !strings.Contains(stdout, want) {
				t.Errorf("narrative lacks %q:\n%s", want, stdout)
			}
		}
	})
	t.Run("json", func(t *testing.T) {
		code, stdout, _ := run(t.Context(), "explain", dir, bad.RunID, "--format", "json")
		var ex explain.Explanation
		if err := json.Unmarshal([]byte(stdout), &ex); code != cli.ExitOK || err != nil {
			t.Fatalf("exit %d, %v:\n%s", code, err, stdout)
		}
		if ex.Run != bad.RunID || ex.Class != bad.Class || len(ex.Steps) == 0 {
			t.Errorf("explanation %s %s with %d steps, want %s %s", ex.Run, ex.Class, len(ex.Steps), bad.RunID, bad.Class)
		}
	})
	t.Run("timeline", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "run.html")
		if code, _, stderr := run(t.Context(), "explain", dir, bad.RunID, "--timeline", path); code != cli.ExitOK {
			t.Fatalf("exit %d: %s", code, stderr)
		}
		page := string(readFile(t, path))
		if !strings.Contains(page, "<svg") || strings.Contains(page, "<script") || len(page) > timeline.MaxBytes {
			t.Errorf("not a self-contained page under %d bytes (%d bytes)", timeline.MaxBytes, len(page))
		}
	})
	if good != nil {
		t.Run("completed", func(t *testing.T) {
			code, stdout, _ := run(t.Context(), "explain", dir, good.RunID)
			if code != cli.ExitOK || !strings.Contains(stdout, "nothing to explain") {
				t.Errorf("exit %d:\n%s", code, stdout)
			}
		})
	}

	t.Run("forensics computes the classes a storm lacks", func(t *testing.T) {
		d := filepath.Join(t.TempDir(), "storm")
		if err := os.CopyFS(d, os.DirFS(dir)); err != nil {
			t.Fatal(err)
		}
		// A storm recorded before runs had classes.
		var lines []string
		for _, r := range runs {
			r.Class, r.Timeline = "", ""
			b, _ := json.Marshal(r)
			lines = append(lines, string(b))
		}
		writeFile(t, filepath.Join(d, stormdir.FileRuns), []byte(strings.Join(lines, "\n")+"\n"))
		os.RemoveAll(filepath.Join(d, stormdir.DirTimelines))
		code, stdout, stderr := run(t.Context(), "forensics", d)
		if code != cli.ExitOK || !strings.Contains(stdout, "classes (runs.jsonl's, computed now where it has none): ") {
			t.Fatalf("exit %d, stderr %q; stdout lacks a classes line saying whose:\n%s", code, stderr, stdout)
		}
		var sum reports.Summary
		if err := json.Unmarshal(readFile(t, filepath.Join(d, stormdir.FileSummary)), &sum); err != nil {
			t.Fatal(err)
		}
		if got := sum.Cells[0].Classes[bad.Class]; got == 0 || len(sum.Cells[0].Timelines[bad.Class]) == 0 {
			t.Errorf("summary.json counts %d %s runs with timelines %v", got, bad.Class, sum.Cells[0].Timelines)
		}
		if _, err := os.Stat(filepath.Join(d, stormdir.DirTimelines, bad.RunID+".html")); err != nil {
			t.Errorf("no timeline written: %v", err)
		}
		// report and gate read the classes back from summary.json.
		if code, stdout, _ := run(t.Context(), "gate", d, "--max", "class:"+bad.Class+"=0", "--conditions", "main"); code != cli.ExitGateFailed || !strings.Contains(stdout, "class:"+bad.Class) {
			t.Errorf("gate --max class:%s=0: exit %d\n%s", bad.Class, code, stdout)
		}
	})

	t.Run("forensics --reclassify replaces recorded classes", func(t *testing.T) {
		d := filepath.Join(t.TempDir(), "storm")
		if err := os.CopyFS(d, os.DirFS(dir)); err != nil {
			t.Fatal(err)
		}
		// A storm whose classes an older build got wrong: every explained
		// run recorded as "wake-order" (or "hole" where it is wake-order).
		wrong := explain.WakeOrder
		if bad.Class == wrong {
			wrong = explain.Hole
		}
		var lines []string
		for _, r := range runs {
			if r.Class != "" {
				r.Class = wrong
			}
			b, _ := json.Marshal(r)
			lines = append(lines, string(b))
		}
		writeFile(t, filepath.Join(d, stormdir.FileRuns), []byte(strings.Join(lines, "\n")+"\n"))
		// Without the flag the recorded classes stand.
		if code, stdout, stderr := run(t.Context(), "forensics", d); code != cli.ExitOK || !strings.Contains(stdout, wrong) {
			t.Fatalf("exit %d, stderr %q; stdout lacks the recorded %s:\n%s", code, stderr, wrong, stdout)
		}
		// A timeline no run links any more (another run of the class had it)
		// is pruned.
		stale := filepath.Join(d, stormdir.DirTimelines, "wrun_stale.html")
		writeFile(t, stale, []byte("<html></html>"))
		code, stdout, stderr := run(t.Context(), "forensics", d, "--reclassify")
		if code != cli.ExitOK || !strings.Contains(stderr, wrong+" -> "+bad.Class) || strings.Contains(stdout, wrong) || !strings.Contains(stdout, "classes (this build's): ") {
			t.Fatalf("exit %d, stderr %q (want a %s -> %s change); stdout:\n%s", code, stderr, wrong, bad.Class, stdout)
		}
		// Afterwards a plain forensics prints runs.jsonl's classes, as
		// recorded, and says that summary.json's (report's, gate's) differ.
		code, stdout, stderr = run(t.Context(), "forensics", d)
		if code != cli.ExitOK || !strings.Contains(stdout, "classes (runs.jsonl's): ") || !strings.Contains(stdout, wrong) ||
			!strings.Contains(stderr, "summary.json counts other classes than runs.jsonl records in 1 cells") {
			t.Fatalf("exit %d, stderr %q (want the classes' difference named); stdout:\n%s", code, stderr, stdout)
		}
		var sum reports.Summary
		if err := json.Unmarshal(readFile(t, filepath.Join(d, stormdir.FileSummary)), &sum); err != nil {
			t.Fatal(err)
		}
		if c := sum.Cells[0]; c.Classes[wrong] != 0 || c.Classes[bad.Class] == 0 {
			t.Errorf("summary.json classes %v after --reclassify, want %s and no %s", c.Classes, bad.Class, wrong)
		}
		if _, err := os.Stat(stale); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("the unlinked timeline is still there: %v", err)
		}
		for _, p := range sum.Cells[0].Timelines[bad.Class] {
			if _, err := os.Stat(filepath.Join(d, p)); err != nil {
				t.Errorf("linked timeline %s: %v", p, err)
			}
		}
	})

	broken := func(t *testing.T, damage func(dir string)) string {
		t.Helper()
		d := filepath.Join(t.TempDir(), "storm")
		if err := os.CopyFS(d, os.DirFS(dir)); err != nil {
			t.Fatal(err)
		}
		damage(d)
		return d
	}
	for _, tc := range []struct {
		name string
		dir  func(t *testing.T) string
		run  string
		want string
	}{
		{"unknown run", func(*testing.T) string { return dir }, "wrun_nobody", "run wrun_nobody is not in"},
		{"not a storm", func(t *testing.T) string { return t.TempDir() }, bad.RunID, stormdir.ErrNotStorm.Error()},
		{"final log missing", func(t *testing.T) string {
			return broken(t, func(d string) { os.RemoveAll(filepath.Join(d, stormdir.DirEvents)) })
		}, bad.RunID, "the final log of " + bad.RunID},
		{"history cut off", func(t *testing.T) string {
			return broken(t, func(d string) {
				p := filepath.Join(d, stormdir.FileHistory)
				b := readFile(t, p)
				i := strings.LastIndex(string(b[:len(b)-1]), bad.RunID)
				writeFile(t, p, b[:i+len(bad.RunID)])
			})
		}, bad.RunID, "the history of " + bad.RunID},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := run(t.Context(), "explain", tc.dir(t), tc.run)
			if code != cli.ExitUsage || stdout != "" || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, tc.want) {
				t.Errorf("exit %d, stdout %q, stderr %q; want exit 2 and one line with %q", code, stdout, stderr, tc.want)
			}
		})
	}
}

// openStorm opens the storm directory dir for reading, failing the test
// when it is none.
func openStorm(t *testing.T, dir string) *stormdir.Dir {
	t.Helper()
	d, err := stormdir.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	return d
}
