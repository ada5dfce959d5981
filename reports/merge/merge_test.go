package merge_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stormctl/stormctl/history"
	"github.com/stormctl/stormctl/reports"
	"github.com/stormctl/stormctl/reports/merge"
	"github.com/stormctl/stormctl/stormdir"
)

// shardOf returns a merge.Shard of a testdata/storms directory owning the
// run indexes r with r mod n == i-1.
func shardOf(dir string, i, n int) merge.Shard {
	return merge.Shard{Dir: dir, Name: fmt.Sprintf("%d/%d", i, n), Owns: func(r int) bool { return r%n == i-1 }}
}

func TestMergeRefuses(t *testing.T) {
	t.Parallel()
	ok := filepath.Join("..", "..", "stormdir", "testdata", "storms", "ok")
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
		{"a cut-off runs.jsonl", cells, []merge.Shard{shardOf(filepath.Join("..", "..", "stormdir", "testdata", "storms", "truncated"), 1, 1)}, []string{"runs.jsonl:4"}},
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
	if err := os.CopyFS(shard, os.DirFS(filepath.Join("..", "..", "stormdir", "testdata", "storms", "ok"))); err != nil {
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
