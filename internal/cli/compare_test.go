package cli_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stormctl/stormctl/internal/cli"
	"github.com/stormctl/stormctl/internal/history"
	"github.com/stormctl/stormctl/internal/storm/stormdir"
	"github.com/stormctl/stormctl/reports"
	"github.com/stormctl/stormctl/reports/compare"
)

func TestCompareCommand(t *testing.T) {
	base, head := fixtureStorm(t, "clean"), fixtureStorm(t, "seq-worse")
	want := map[string]string{
		"local/step-storm/main":                 compare.NoEvidence,
		"local/control/main":                    compare.NoEvidence,
		"local/step-storm/seq+callsite+ordered": compare.Worse,
		"local/control/seq+callsite+ordered":    compare.NoEvidence,
		"local/hook-storm/seq+callsite+ordered": compare.OnlyHead,
	}
	code, stdout, stderr := run(t.Context(), "compare", base, head, "--format", "json")
	if code != cli.ExitOK || stderr != "" {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	var cmp compare.Comparison
	if err := json.Unmarshal([]byte(stdout), &cmp); err != nil {
		t.Fatalf("not a comparison: %v\n%s", err, stdout)
	}
	if cmp.Base != base || cmp.Head != head || len(cmp.Cells) != len(want) {
		t.Fatalf("comparison of %s and %s with %d cells, want %d:\n%s", cmp.Base, cmp.Head, len(cmp.Cells), len(want), stdout)
	}
	for _, cc := range cmp.Cells {
		if w := want[cc.CellKey.String()]; cc.Verdict != w {
			t.Errorf("%s: verdict %q, want %q", cc.CellKey, cc.Verdict, w)
		}
	}
	worse := cmp.Cells[2].Corrupted
	if worse == nil || worse.P == nil || worse.RunsNeeded == nil || *worse.RunsNeeded != 33 ||
		worse.Base.Hi < 0.137 || worse.Base.Hi > 0.139 {
		t.Errorf("the worse cell's statistics: %+v", worse)
	}

	for _, format := range []string{"table", "markdown"} {
		code, stdout, _ := run(t.Context(), "compare", base, head, "--format", format)
		if code != cli.ExitOK {
			t.Errorf("%s: exit %d", format, code)
		}
		for _, w := range []string{"worse", "only in head", "0/24 0.0% [0.0, 13.8]", "5/24 20.8% [9.2, 40.5]", "+20.8 pp", "0.0496", "33", "—"} {
			if !strings.Contains(stdout, w) {
				t.Errorf("%s output lacks %q:\n%s", format, w, stdout)
			}
		}
	}
}

// writeStorm writes a storm directory of runs (each run's Faults as given)
// whose storm.json names the nemesis kinds given (none: no nemesis).
func writeStorm(t *testing.T, name string, nemesisKinds []string, runs []reports.RunRecord) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	var cells []history.CellKey
	var lines []string
	for i, r := range runs {
		k := r.CellKey
		if !slices.Contains(cells, k) {
			cells = append(cells, k)
		}
		r.Index, r.RunID, r.Started, r.Ended, r.Millis = i, fmt.Sprintf("wrun_%s_%d", name, i), at, at.Add(time.Second), 1000
		b, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		lines = append(lines, string(b))
	}
	cfg := map[string]any{}
	if len(nemesisKinds) > 0 {
		cfg["nemesis"] = map[string]any{"kinds": nemesisKinds}
	}
	meta, _ := json.Marshal(map[string]any{"schema": reports.SchemaVersion, "version": "test", "cells": cells, "started": at, "config": cfg})
	if err := os.WriteFile(filepath.Join(dir, stormdir.FileStorm), meta, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, stormdir.FileRuns), []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// runsOf are n runs of one cell with outcome o, the first faulted of them
// overlapped by a fault.
func runsOf(scenario, condition string, o history.Outcome, n, faulted int) []reports.RunRecord {
	var rs []reports.RunRecord
	for i := range n {
		r := reports.RunRecord{CellKey: history.NewCellKey("postgres", scenario, condition), Outcome: o}
		if i < faulted {
			r.Faults = []string{"pg-terminate#1"}
		}
		rs = append(rs, r)
	}
	return rs
}

// TestCompareMisclassified: compare of a storm without the nemesis (base)
// and one with it (head) counts the runs the faults misclassified, per
// cell and in all, as docs/faults.md ("Misclassified runs") defines them.
func TestCompareMisclassified(t *testing.T) {
	const target = "seq+callsite+ordered"
	base := writeStorm(t, "base", nil, slices.Concat(
		runsOf("hook-storm", "main", history.Completed, 7, 0), runsOf("hook-storm", "main", history.Corrupted, 5, 0),
		runsOf("step-storm", target, history.Completed, 12, 0),
		runsOf("control", "main", history.Completed, 12, 0)))
	head := writeStorm(t, "head", []string{"pg-terminate"}, slices.Concat(
		// main's wrong runs stay its own, whichever of corrupted and silent
		runsOf("hook-storm", "main", history.Completed, 2, 2), runsOf("hook-storm", "main", history.Corrupted, 4, 4), runsOf("hook-storm", "main", history.Silent, 6, 6),
		// a faulted corrupted run of the target: 1
		runsOf("step-storm", target, history.Completed, 11, 11), runsOf("step-storm", target, history.Corrupted, 1, 1),
		// a faulted stuck run the control never had, an infra run no fault overlapped: 2
		runsOf("control", "main", history.Completed, 10, 10), runsOf("control", "main", history.Stuck, 1, 1), runsOf("control", "main", history.Infra, 1, 0)))

	code, stdout, stderr := run(t.Context(), "compare", base, head, "--format", "json")
	if code != cli.ExitOK || stderr != "" {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	var cmp compare.Comparison
	if err := json.Unmarshal([]byte(stdout), &cmp); err != nil {
		t.Fatal(err)
	}
	if cmp.MisclassifiedTotal == nil || *cmp.MisclassifiedTotal != 3 {
		t.Fatalf("misclassified total %v, want 3:\n%s", cmp.MisclassifiedTotal, stdout)
	}
	want := map[string]int{"postgres/hook-storm/main": 0, "postgres/step-storm/" + target: 1, "postgres/control/main": 2}
	for _, cc := range cmp.Cells {
		if cc.Misclassified == nil || cc.Misclassified.Count != want[cc.CellKey.String()] {
			t.Errorf("%s: misclassified %+v, want %d", cc.CellKey, cc.Misclassified, want[cc.CellKey.String()])
		}
	}

	_, table, _ := run(t.Context(), "compare", base, head)
	for _, w := range []string{"misclassified under faults (head ran under --nemesis, base without): 3", "12/12", "11/12"} {
		if !strings.Contains(table, w) {
			t.Errorf("table lacks %q:\n%s", w, table)
		}
	}
	// Without a nemesis head compare prints what it always printed.
	_, plain, _ := run(t.Context(), "compare", base, base)
	if strings.Contains(plain, "misclassified") {
		t.Errorf("compare of two storms without the nemesis mentions misclassification:\n%s", plain)
	}
}

// TestCompareConditionsOfOneStorm: one storm given twice with
// --base-condition and --head-condition compares two of its conditions
// cell by cell; a condition the storm does not hold is refused.
func TestCompareConditionsOfOneStorm(t *testing.T) {
	code, stdout, stderr := run(t.Context(), "compare", schema1Storm, schema1Storm,
		"--base-condition", "main", "--head-condition", "seq+callsite+ordered", "--format", "json")
	if code != cli.ExitOK {
		t.Fatalf("exit %d, want 0\nstderr:\n%s", code, stderr)
	}
	var cmp struct {
		Across string `json:"across"`
		Cells  []struct {
			Verdict string `json:"verdict"`
		} `json:"cells"`
	}
	if err := json.Unmarshal([]byte(stdout), &cmp); err != nil {
		t.Fatalf("stdout is not a comparison: %v\n%s", err, stdout)
	}
	if cmp.Across != "main → seq+callsite+ordered" || len(cmp.Cells) == 0 {
		t.Fatalf("across %q with %d cells, want main → seq+callsite+ordered over the storm's cells", cmp.Across, len(cmp.Cells))
	}
	matched := 0
	for _, c := range cmp.Cells {
		if c.Verdict != "only in base" && c.Verdict != "only in head" {
			matched++
		}
	}
	if matched == 0 { // the fixture's control has both conditions
		t.Errorf("no cell matched across the two conditions: %s", stdout)
	}
	code, _, stderr = run(t.Context(), "compare", schema1Storm, schema1Storm, "--head-condition", "single-orchestrator")
	if code != cli.ExitUsage || !strings.Contains(stderr, "holds no cell of it") {
		t.Errorf("a condition the storm lacks: exit %d, stderr %q", code, stderr)
	}
}
