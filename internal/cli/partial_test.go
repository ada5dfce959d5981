package cli_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stormctl/stormctl/internal/cli"
	"github.com/stormctl/stormctl/internal/history"
	"github.com/stormctl/stormctl/internal/storm/stormdir"
	"github.com/stormctl/stormctl/reports"
	"github.com/stormctl/stormctl/reports/gate"
)

// gateCells are the storm-gate workflow's storm: 2 worlds x 3 scenarios x
// 2 conditions, 12 cells, of which its target gate looks at 8 (the seq*
// cells and every control cell).
func gateCells() []history.CellKey {
	var cells []history.CellKey
	for _, w := range []string{"local", "postgres"} {
		for _, c := range []string{"main", "seq+callsite+ordered"} {
			for _, s := range []string{"step-storm", "hook-storm", "control"} {
				cells = append(cells, history.CellKey{World: w, Scenario: s, Condition: c})
			}
		}
	}
	return cells
}

// writeGateShard writes shard sh of a storm of runs runs per cell over
// gateCells into dir as storm --shard leaves it: storm.json, history.jsonl
// and runs.jsonl holding the first held run indexes the shard owns of
// every cell (0: an empty runs.jsonl and no summary.json, as a shard whose
// world failed to open leaves it). Legacy runs are corrupted, the others
// completed, the seq+callsite+ordered ones with rejections.
func writeGateShard(t *testing.T, dir string, sh stormdir.Shard, runs, held int) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	cells := gateCells()
	meta := &stormdir.Meta{Schema: reports.SchemaVersion, Version: "test", Cells: cells,
		Config: stormdir.Config{Worlds: []string{"local", "postgres"}, Scenarios: []string{"step-storm", "hook-storm", "control"},
			Conditions: []string{"main", "seq+callsite+ordered"}, Runs: runs, Seed: 1, Shard: sh, Out: dir}}
	if err := stormdir.WriteJSON(filepath.Join(dir, stormdir.FileStorm), meta); err != nil {
		t.Fatal(err)
	}
	var lines strings.Builder
	for _, k := range cells {
		n := 0
		for r := 0; r < runs && n < held; r++ {
			if !sh.Owns(r) {
				continue
			}
			n++
			rec := reports.RunRecord{CellKey: k, Index: r, RunID: fmt.Sprintf("wrun_%s_%d", k.Dir(), r), Outcome: history.Completed}
			switch {
			case k.Condition == "main" && k.Scenario != gate.ControlScenario:
				rec.Outcome = history.Corrupted
			case k.Condition != "main":
				rec.Stats.Rejections = 10
			}
			b, err := json.Marshal(rec)
			if err != nil {
				t.Fatal(err)
			}
			lines.Write(append(b, '\n'))
		}
	}
	writeFile(t, filepath.Join(dir, stormdir.FileRuns), []byte(lines.String()))
	writeFile(t, filepath.Join(dir, stormdir.FileHistory), nil)
}

// TestPartialStormNeverPasses runs the storm-gate workflow's gate job
// (merge shards/* --out storm, gate with its target rules, comment with the
// gate's JSON) on the shards of a storm of --runs 24 in 4 shards, some of
// which stopped early or were not given: the merge says which on stderr
// and records them in storm.json, the gate fails naming them, and the
// comment's headline says the storm is partial. The storm-gate defect was
// the first case: 2 shards failed before their first run, and merge, gate
// ("gate passed: 8 cells") and comment ("gate passed") all passed it.
func TestPartialStormNeverPasses(t *testing.T) {
	const gone = -1 // a shard not given to merge
	tests := []struct {
		name string
		// held is, per shard, the runs of each cell it holds (6 of 6 is
		// whole), or gone.
		held []int
		// merge, gateLines, headline: what merge's stderr holds, gate's
		// stdout lines (each containing its string, {shards} the shards'
		// directory), and the comment's first visible line.
		merge     []string
		gateCode  int
		gateLines []string
		headline  string
	}{
		{
			name: "2 of 4 shards with storm.json and an empty runs.jsonl", held: []int{6, 0, 6, 0},
			merge: []string{
				"merge: warning: shard 2/4 is incomplete: 0 of its 72 runs (it stopped early; resume it with `stormctl storm --resume {shards}/storm-shard-2`, or rerun it)\n",
				"merge: warning: shard 4/4 is incomplete: 0 of its 72 runs (it stopped early; resume it with `stormctl storm --resume {shards}/storm-shard-4`, or rerun it)\n",
				"merge: 4 shards (1/4, 2/4, 3/4, 4/4) into ",
				"  local/step-storm/main: 12 runs = 6 (1/4) + 0 (2/4) + 6 (3/4) + 0 (4/4)\n",
				"merge: warning: the merged storm is partial: 144 of 288 runs missing (shards 2/4, 4/4 incomplete); gate will not pass it\n",
			},
			gateCode: cli.ExitGateFailed,
			gateLines: []string{
				"partial: shard 2/4 is incomplete: 0 of its 72 runs (it stopped early; resume it with `stormctl storm --resume {shards}/storm-shard-2`, or rerun it)",
				"partial: shard 4/4 is incomplete: 0 of its 72 runs (it stopped early; resume it with `stormctl storm --resume {shards}/storm-shard-4`, or rerun it)",
				"partial: 144 of the 288 runs planned are missing: 12 of 12 cells have fewer runs than the 24 each was to have",
			},
			headline: "### stormctl storm: partial storm, 144 of 288 runs missing (shards 2/4, 4/4 incomplete); gate failed",
		},
		{
			name: "a shard that stopped midway", held: []int{6, 6, 6, 2},
			merge: []string{
				"merge: warning: shard 4/4 is incomplete: 24 of its 72 runs (it stopped early; resume it with `stormctl storm --resume {shards}/storm-shard-4`, or rerun it)\n",
				"merge: warning: the merged storm is partial: 48 of 288 runs missing (shard 4/4 incomplete); gate will not pass it\n",
			},
			gateCode: cli.ExitGateFailed,
			gateLines: []string{
				"partial: shard 4/4 is incomplete: 24 of its 72 runs",
				"partial: 48 of the 288 runs planned are missing: 12 of 12 cells have fewer runs than the 24 each was to have",
			},
			headline: "### stormctl storm: partial storm, 48 of 288 runs missing (shard 4/4 incomplete); gate failed",
		},
		{
			name: "a shard not given", held: []int{6, 6, gone, 6},
			merge: []string{
				"merge: warning: shard 3/4 not given",
				"merge: warning: the merged storm is partial: 72 of 288 runs missing (shard 3/4 not merged); gate will not pass it\n",
			},
			gateCode: cli.ExitGateFailed,
			gateLines: []string{
				"partial: shard 3/4 was not merged: none of its runs are here",
				"partial: 72 of the 288 runs planned are missing: 12 of 12 cells have fewer runs than the 24 each was to have",
			},
			headline: "### stormctl storm: partial storm, 72 of 288 runs missing (shard 3/4 not merged); gate failed",
		},
		{
			name: "every shard whole", held: []int{6, 6, 6, 6},
			merge:     []string{"  local/step-storm/main: 24 runs = 6 (1/4) + 6 (2/4) + 6 (3/4) + 6 (4/4)\n"},
			gateCode:  cli.ExitOK,
			gateLines: []string{"gate passed: 8 cells, 6 rules"},
			headline:  "### stormctl storm: gate passed",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			shards := filepath.Join(root, "shards")
			args := []string{"merge"}
			for i, held := range tc.held {
				if held == gone {
					continue
				}
				dir := filepath.Join(shards, fmt.Sprintf("storm-shard-%d", i+1))
				writeGateShard(t, dir, stormdir.Shard{Index: i + 1, Count: len(tc.held)}, 24, held)
				args = append(args, dir)
			}
			storm := filepath.Join(root, "storm")
			sub := strings.NewReplacer("{shards}", shards)

			code, _, stderr := run(t.Context(), append(args, "--out", storm)...)
			if code != cli.ExitOK {
				t.Fatalf("merge: exit %d, want %d (what the shards measured is merged):\n%s", code, cli.ExitOK, stderr)
			}
			for _, w := range tc.merge {
				if !strings.Contains(stderr, sub.Replace(w)) {
					t.Errorf("merge's stderr does not say %q:\n%s", sub.Replace(w), stderr)
				}
			}
			whole := tc.gateCode == cli.ExitOK
			if strings.Contains(stderr, "partial") == whole {
				t.Errorf("merge's stderr says partial: %v, want %v:\n%s", !whole, !whole, stderr)
			}

			rules := []string{"gate", storm, "--conditions", "seq*", "--max", "corrupted=0", "--max", "silent=0", "--max", "gap=0", "--max", "stuck=0",
				"--control-clean", "--require-rejections"}
			code, stdout, stderr := run(t.Context(), rules...)
			if code != tc.gateCode || stderr != "" {
				t.Errorf("gate: exit %d, stderr %q; want %d and nothing", code, stderr, tc.gateCode)
			}
			got := strings.Split(strings.TrimSuffix(stdout, "\n"), "\n")
			if len(got) != len(tc.gateLines) {
				t.Fatalf("gate printed %d lines, want %d:\n%s", len(got), len(tc.gateLines), stdout)
			}
			for i, w := range tc.gateLines {
				if !strings.Contains(got[i], sub.Replace(w)) {
					t.Errorf("gate line %d = %q, want it to contain %q", i+1, got[i], sub.Replace(w))
				}
			}

			// The base lookup's check: the same storm, no rules.
			code, stdout, stderr = run(t.Context(), "gate", storm, "--only-whole")
			wholeLines := tc.gateLines
			if whole {
				wholeLines = []string{"gate passed: the storm is whole: 12 cells, every planned run recorded"}
			}
			if got := strings.Split(strings.TrimSuffix(stdout, "\n"), "\n"); code != tc.gateCode || stderr != "" || len(got) != len(wholeLines) {
				t.Errorf("gate --only-whole: exit %d, stderr %q, stdout:\n%s\nwant exit %d and %d lines", code, stderr, stdout, tc.gateCode, len(wholeLines))
			} else {
				for i, w := range wholeLines {
					if !strings.Contains(got[i], sub.Replace(w)) {
						t.Errorf("gate --only-whole line %d = %q, want it to contain %q", i+1, got[i], sub.Replace(w))
					}
				}
			}

			code, stdout, _ = run(t.Context(), append(rules, "--format", "json")...)
			var res gate.Result
			if err := json.Unmarshal([]byte(stdout), &res); err != nil || code != tc.gateCode {
				t.Fatalf("gate --format json: exit %d, %v:\n%s", code, err, stdout)
			}
			if (res.Partial == nil) != whole {
				t.Errorf("gate's JSON partial = %+v, want it for a partial storm only", res.Partial)
			}
			gateJSON := filepath.Join(root, "gate-target.json")
			writeFile(t, gateJSON, []byte(stdout))
			for _, withGate := range []bool{true, false} {
				args := []string{"comment", storm}
				want := tc.headline
				if withGate {
					args = append(args, "--gate", gateJSON)
				} else {
					want = strings.Replace(strings.Replace(want, "gate failed", "no gate run", 1), "gate passed", "no gate run", 1)
				}
				code, stdout, stderr := run(t.Context(), args...)
				if code != cli.ExitOK {
					t.Fatalf("comment: exit %d:\n%s", code, stderr)
				}
				_, body, _ := strings.Cut(stdout, "-->\n")
				head, _, _ := strings.Cut(body, "\n")
				if head != want {
					t.Errorf("comment %v: headline %q, want %q", args[2:], head, want)
				}
				if !whole && strings.Contains(body, "gate passed") {
					t.Errorf("comment %v on a partial storm says \"gate passed\":\n%s", args[2:], body)
				}
			}
		})
	}
}
