package reports_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stormctl/stormctl/reports"
)

// storedWant is a testdata/storms/*/want.json: what LoadStorm must make of
// the directory beside it.
type storedWant struct {
	// Cells are "world/scenario/condition: N runs: compact", in order.
	Cells []string `json:"cells"`
	// Problems are contained, one each, in the error's *ArtifactErrors;
	// Notes likewise in Stored.Notes.
	Problems []string `json:"problems"`
	Notes    []string `json:"notes"`
}

func TestLoadStorm(t *testing.T) {
	dirs, err := filepath.Glob(filepath.Join("testdata", "storms", "*"))
	if err != nil || len(dirs) == 0 {
		t.Fatalf("no storm fixtures: %v", err)
	}
	for _, dir := range dirs {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			raw, err := os.ReadFile(filepath.Join(dir, "want.json"))
			if err != nil {
				t.Fatal(err)
			}
			var want storedWant
			if err := json.Unmarshal(raw, &want); err != nil {
				t.Fatal(err)
			}
			st, err := reports.LoadStorm(dir)
			if st == nil {
				t.Fatalf("LoadStorm = nil, %v", err)
			}
			var got []string
			for _, c := range st.Summary.Cells {
				got = append(got, fmt.Sprintf("%s: %d runs: %s", c.Key(), c.Runs, c.Compact()))
			}
			if !slices.Equal(got, want.Cells) {
				t.Errorf("cells =\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want.Cells, "\n"))
			}

			var problems []string
			for _, e := range unjoin(err) {
				var ae *reports.ArtifactError
				if !errors.As(e, &ae) {
					t.Errorf("problem %v is not an *ArtifactError", e)
				}
				// Name files relative to the fixture, as a user reads them.
				problems = append(problems, strings.TrimPrefix(e.Error(), dir+string(filepath.Separator)))
			}
			matchEach(t, "problem", problems, want.Problems)
			matchEach(t, "note", st.Notes, want.Notes)
		})
	}
	t.Run("not a storm", func(t *testing.T) {
		st, err := reports.LoadStorm(t.TempDir())
		if st != nil || !errors.Is(err, reports.ErrNotStorm) {
			t.Errorf("LoadStorm(empty dir) = %v, %v; want nil, ErrNotStorm", st, err)
		}
	})
}

// unjoin splits an errors.Join into its errors.
func unjoin(err error) []error {
	if err == nil {
		return nil
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}

// matchEach checks that got has one item per want, each containing it.
func matchEach(t *testing.T, what string, got, want []string) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%d %ss, want %d:\n%s", len(got), what, len(want), strings.Join(got, "\n"))
		return
	}
	for i := range want {
		if !strings.Contains(got[i], want[i]) {
			t.Errorf("%s %d = %q, want it to contain %q", what, i+1, got[i], want[i])
		}
	}
}

// shardOf returns a MergeShard of a testdata/storms directory owning the
// run indexes r with r mod n == i-1.
func shardOf(dir string, i, n int) reports.MergeShard {
	return reports.MergeShard{Dir: dir, Name: fmt.Sprintf("%d/%d", i, n), Owns: func(r int) bool { return r%n == i-1 }}
}

func TestMergeRefuses(t *testing.T) {
	ok := filepath.Join("testdata", "storms", "ok")
	cells := []reports.CellKey{
		{World: "local", Scenario: "control", Condition: "main"},
		{World: "local", Scenario: "control", Condition: "seq"},
		{World: "local", Scenario: "step-storm", Condition: "seq"},
	}
	tests := []struct {
		name   string
		cells  []reports.CellKey
		shards []reports.MergeShard
		want   []string
	}{
		{"a run index the shard does not own", cells, []reports.MergeShard{shardOf(ok, 1, 2)}, []string{"run index 1", "shard 1/2 does not run"}},
		{"the same runs twice", cells, []reports.MergeShard{shardOf(ok, 1, 1), shardOf(ok, 1, 1)}, []string{"run index 0 of local/control/main", "and in"}},
		{"a cell the storm does not have", cells[:1], []reports.MergeShard{shardOf(ok, 1, 1)}, []string{"local/control/seq", "not a cell of the storm"}},
		{"a cut-off runs.jsonl", cells, []reports.MergeShard{shardOf(filepath.Join("testdata", "storms", "truncated"), 1, 1)}, []string{"runs.jsonl:4"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "merged")
			res, err := reports.Merge(out, map[string]any{"schema": reports.SchemaVersion, "cells": tc.cells}, tc.cells, tc.shards)
			if err == nil {
				t.Fatalf("Merge = %+v, want an error", res)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
			if _, err := os.Stat(filepath.Join(out, reports.FileRuns)); err == nil {
				t.Errorf("a refused merge wrote %s", reports.FileRuns)
			}
		})
	}
	t.Run("a non-empty --out", func(t *testing.T) {
		out := t.TempDir()
		if err := os.WriteFile(filepath.Join(out, "x"), nil, 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := reports.Merge(out, nil, cells, []reports.MergeShard{shardOf(ok, 1, 1)})
		if err == nil || !strings.Contains(err.Error(), "not empty") {
			t.Errorf("Merge into a non-empty dir = %v, want a refusal", err)
		}
	})
}

// TestMergeCopiesTimelines: the timelines a shard's summary.md links are
// copied with its final logs, so the merged summary's links resolve.
func TestMergeCopiesTimelines(t *testing.T) {
	shard := filepath.Join(t.TempDir(), "shard")
	if err := os.CopyFS(shard, os.DirFS(filepath.Join("testdata", "storms", "ok"))); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(shard, reports.FileHistory), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	page := filepath.Join(reports.DirTimelines, "wrun_x.html")
	if err := os.MkdirAll(filepath.Join(shard, reports.DirTimelines), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(shard, page), []byte("<html></html>"), 0o644); err != nil {
		t.Fatal(err)
	}
	cells := []reports.CellKey{
		{World: "local", Scenario: "control", Condition: "main"},
		{World: "local", Scenario: "control", Condition: "seq"},
		{World: "local", Scenario: "step-storm", Condition: "seq"},
	}
	out := filepath.Join(t.TempDir(), "merged")
	if _, err := reports.Merge(out, map[string]any{"schema": reports.SchemaVersion, "cells": cells}, cells, []reports.MergeShard{shardOf(shard, 1, 1)}); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(out, page)); err != nil || string(b) != "<html></html>" {
		t.Fatalf("merged %s = %q, %v; want the shard's page", page, b, err)
	}
}
