package merge_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/stormctl/stormctl/internal/base/filetest"
	"github.com/stormctl/stormctl/internal/history"
	"github.com/stormctl/stormctl/internal/storm/stormdir"
	"github.com/stormctl/stormctl/reports"
	"github.com/stormctl/stormctl/reports/merge"
)

// shardOf returns a merge.Shard of a testdata/storms directory owning the
// run indexes r with r mod n == i-1.
func shardOf(dir string, i, n int) merge.Shard {
	return merge.Shard{Dir: dir, Name: fmt.Sprintf("%d/%d", i, n), Owns: func(r int) bool { return r%n == i-1 }}
}

func TestMergeRefuses(t *testing.T) {
	t.Parallel()
	ok := filetest.Repo("internal", "storm", "stormdir", "testdata", "storms", "ok")
	cells := []history.CellKey{
		{World: "local", Scenario: "control", Condition: "main"},
		{World: "local", Scenario: "control", Condition: "seq"},
		{World: "local", Scenario: "step-storm", Condition: "seq"},
	}
	tests := []struct {
		name   string
		cells  []history.CellKey
		shards []merge.Shard
		want   []string
	}{
		{"a run index the shard does not own", cells, []merge.Shard{shardOf(ok, 1, 2)}, []string{"run index 1", "shard 1/2 does not run"}},
		{"the same runs twice", cells, []merge.Shard{shardOf(ok, 1, 1), shardOf(ok, 1, 1)}, []string{"run index 0 of local/control/main", "and in"}},
		{"a cell the storm does not have", cells[:1], []merge.Shard{shardOf(ok, 1, 1)}, []string{"local/control/seq", "not a cell of the storm"}},
		{"a cut-off runs.jsonl", cells, []merge.Shard{shardOf(filetest.Repo("internal", "storm", "stormdir", "testdata", "storms", "truncated"), 1, 1)}, []string{"runs.jsonl:4"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			out := filepath.Join(t.TempDir(), "merged")
			res, err := merge.Merge(out, &stormdir.Meta{Schema: reports.SchemaVersion, Cells: tc.cells}, tc.cells, tc.shards, stormdir.LoadStorm)
			if err == nil {
				t.Fatalf("Merge = %+v, want an error", res)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
			if _, err := os.Stat(filepath.Join(out, stormdir.FileRuns)); err == nil {
				t.Errorf("a refused merge wrote %s", stormdir.FileRuns)
			}
		})
	}
	t.Run("a non-empty --out", func(t *testing.T) {
		t.Parallel()
		out := t.TempDir()
		if err := os.WriteFile(filepath.Join(out, "x"), nil, 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := merge.Merge(out, nil, cells, []merge.Shard{shardOf(ok, 1, 1)}, stormdir.LoadStorm)
		if err == nil || !strings.Contains(err.Error(), "not empty") {
			t.Errorf("Merge into a non-empty dir = %v, want a refusal", err)
		}
	})
}

// TestMergeCopiesTimelines: the timelines a shard's summary.md links are
// copied with its final logs, so the merged summary's links resolve.
func TestMergeCopiesTimelines(t *testing.T) {
	t.Parallel()
	shard := filepath.Join(t.TempDir(), "shard")
	if err := os.CopyFS(shard, os.DirFS(filetest.Repo("internal", "storm", "stormdir", "testdata", "storms", "ok"))); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(shard, stormdir.FileHistory), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	page := filepath.Join(stormdir.DirTimelines, "wrun_x.html")
	if err := os.MkdirAll(filepath.Join(shard, stormdir.DirTimelines), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(shard, page), []byte("<html></html>"), 0o644); err != nil {
		t.Fatal(err)
	}
	cells := []history.CellKey{
		{World: "local", Scenario: "control", Condition: "main"},
		{World: "local", Scenario: "control", Condition: "seq"},
		{World: "local", Scenario: "step-storm", Condition: "seq"},
	}
	out := filepath.Join(t.TempDir(), "merged")
	if _, err := merge.Merge(out, &stormdir.Meta{Schema: reports.SchemaVersion, Cells: cells}, cells, []merge.Shard{shardOf(shard, 1, 1)}, stormdir.LoadStorm); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(out, page)); err != nil || string(b) != "<html></html>" {
		t.Fatalf("merged %s = %q, %v; want the shard's page", page, b, err)
	}
}

// writeShard writes shard sh of a storm of runs runs per cell over cells
// into dir as a storm --shard would leave it: storm.json, history.jsonl
// (empty) and runs.jsonl with the first held[c] run indexes the shard owns
// of cell c (none: an empty runs.jsonl, as a shard that failed before its
// first run leaves it).
func writeShard(t *testing.T, dir string, sh stormdir.Shard, runs int, cells []history.CellKey, held []int) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	meta := &stormdir.Meta{Schema: reports.SchemaVersion, Version: "test", Cells: cells,
		Config: stormdir.Config{Runs: runs, Seed: 1, Shard: sh, Out: dir}}
	if err := stormdir.WriteJSON(filepath.Join(dir, stormdir.FileStorm), meta); err != nil {
		t.Fatal(err)
	}
	var lines []string
	for i, k := range cells {
		n := 0
		for r := 0; r < runs && n < held[i]; r++ {
			if !sh.Owns(r) {
				continue
			}
			n++
			b, err := json.Marshal(reports.RunRecord{CellKey: k, Index: r, RunID: fmt.Sprintf("wrun_%s_%d", k.Dir(), r), Outcome: history.Completed})
			if err != nil {
				t.Fatal(err)
			}
			lines = append(lines, string(b)+"\n")
		}
	}
	for name, text := range map[string]string{stormdir.FileRuns: strings.Join(lines, ""), stormdir.FileHistory: ""} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestMergeIncompleteShards: a shard that holds fewer runs of a cell than
// it owns is merged all the same and named, with its counts, in the
// result and in the merged storm.json's merged.incomplete; the merged
// storm reads back as partial. A shard with storm.json and an empty
// runs.jsonl is the storm-gate defect: 2 of 4 shards failed before their
// first run and the merge said nothing.
func TestMergeIncompleteShards(t *testing.T) {
	t.Parallel()
	cells := []history.CellKey{
		{World: "postgres", Scenario: "step-storm", Condition: "seq+callsite+ordered"},
		{World: "postgres", Scenario: "control", Condition: "main"},
	}
	const gone = -1 // a shard not given to merge
	tests := []struct {
		name string
		runs int
		// held is, per shard (index i-1 of n), the runs of each cell it
		// holds, or {gone}.
		held           [][]int
		wantIncomplete []reports.ShardRuns // Dir is the shard's name under the test's root
		wantPartial    *reports.Partial
	}{
		{
			name: "2 of 4 shards with storm.json and an empty runs.jsonl", runs: 24,
			held: [][]int{{6, 6}, {0, 0}, {6, 6}, {0, 0}},
			wantIncomplete: []reports.ShardRuns{
				{Shard: "2/4", Dir: "shard-2", Runs: 0, Owned: 12},
				{Shard: "4/4", Dir: "shard-4", Runs: 0, Owned: 12},
			},
			wantPartial: &reports.Partial{RunsPerCell: 24, Cells: 2, ShortCells: 2, Planned: 48, Runs: 24, Missing: 24,
				IncompleteShards: []reports.ShardRuns{
					{Shard: "2/4", Dir: "shard-2", Runs: 0, Owned: 12},
					{Shard: "4/4", Dir: "shard-4", Runs: 0, Owned: 12},
				}},
		},
		{
			name: "a shard that stopped midway", runs: 24,
			held:           [][]int{{12, 12}, {5, 4}},
			wantIncomplete: []reports.ShardRuns{{Shard: "2/2", Dir: "shard-2", Runs: 9, Owned: 24}},
			wantPartial: &reports.Partial{RunsPerCell: 24, Cells: 2, ShortCells: 2, Planned: 48, Runs: 33, Missing: 15,
				IncompleteShards: []reports.ShardRuns{{Shard: "2/2", Dir: "shard-2", Runs: 9, Owned: 24}}},
		},
		{
			name: "a shard one run short in one cell", runs: 5,
			held:           [][]int{{3, 2}, {2, 2}},
			wantIncomplete: []reports.ShardRuns{{Shard: "1/2", Dir: "shard-1", Runs: 5, Owned: 6}},
			wantPartial: &reports.Partial{RunsPerCell: 5, Cells: 2, ShortCells: 1, Planned: 10, Runs: 9, Missing: 1,
				IncompleteShards: []reports.ShardRuns{{Shard: "1/2", Dir: "shard-1", Runs: 5, Owned: 6}}},
		},
		{
			name: "a shard not given, the others whole", runs: 24,
			held:        [][]int{{8, 8}, {8, 8}, {gone}},
			wantPartial: &reports.Partial{RunsPerCell: 24, Cells: 2, ShortCells: 2, Planned: 48, Runs: 32, Missing: 16, MissingShards: []string{"3/3"}},
		},
		{
			name: "every shard whole", runs: 5,
			held: [][]int{{3, 3}, {2, 2}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			root := t.TempDir()
			var dirs []stormdir.ShardDir
			var shards []merge.Shard
			for i, held := range tc.held {
				sh := stormdir.Shard{Index: i + 1, Count: len(tc.held)}
				if held[0] == gone {
					continue
				}
				dir := filepath.Join(root, fmt.Sprintf("shard-%d", i+1))
				writeShard(t, dir, sh, tc.runs, cells, held)
				m, err := stormdir.ReadMeta(dir)
				if err != nil {
					t.Fatal(err)
				}
				dirs = append(dirs, stormdir.ShardDir{Dir: dir, Meta: m})
				shards = append(shards, merge.Shard{Dir: dir, Name: sh.String(), Owns: sh.Owns})
			}
			out := filepath.Join(root, "merged")
			meta, err := stormdir.MergeMeta(dirs, out)
			if err != nil {
				t.Fatal(err)
			}
			res, err := merge.Merge(out, meta, cells, shards, stormdir.LoadStorm)
			if err != nil {
				t.Fatalf("Merge: %v (an incomplete shard is merged, not refused)", err)
			}
			if meta.Merged.Incomplete != nil {
				t.Errorf("Merge changed its meta: merged.incomplete = %+v", meta.Merged.Incomplete)
			}
			rel := func(in []reports.ShardRuns) []reports.ShardRuns {
				var outs []reports.ShardRuns
				for _, s := range in {
					s.Dir = strings.TrimPrefix(s.Dir, root+string(filepath.Separator))
					outs = append(outs, s)
				}
				return outs
			}
			if got := rel(res.Incomplete); !reflect.DeepEqual(got, tc.wantIncomplete) {
				t.Errorf("Incomplete = %+v, want %+v", got, tc.wantIncomplete)
			}
			back, err := stormdir.ReadMeta(out)
			if err != nil {
				t.Fatal(err)
			}
			if got := rel(back.Merged.Incomplete); !reflect.DeepEqual(got, tc.wantIncomplete) {
				t.Errorf("storm.json's merged.incomplete = %+v, want %+v", got, tc.wantIncomplete)
			}
			if res.Partial != nil {
				res.Partial.IncompleteShards = rel(res.Partial.IncompleteShards)
			}
			if !reflect.DeepEqual(res.Partial, tc.wantPartial) {
				t.Errorf("Partial = %+v, want %+v", res.Partial, tc.wantPartial)
			}
		})
	}
}
