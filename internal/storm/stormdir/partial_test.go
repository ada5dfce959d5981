package stormdir_test

import (
	"reflect"
	"testing"

	"github.com/stormctl/stormctl/internal/history"
	"github.com/stormctl/stormctl/internal/storm/stormdir"
	"github.com/stormctl/stormctl/reports"
)

// TestPartialOf: a storm is partial when a cell has fewer runs than
// storm.json planned (of a shard's directory, its shard's run indexes),
// when merge was not given a shard or was given one that stopped early,
// or when storm.json does not say its runs per cell; whole otherwise.
func TestPartialOf(t *testing.T) {
	t.Parallel()
	cells := func(runs ...int) *reports.Summary {
		s := &reports.Summary{}
		for i, n := range runs {
			s.Cells = append(s.Cells, &reports.Cell{CellKey: history.CellKey{World: "local", Scenario: "control", Condition: string(rune('a' + i))}, Runs: n})
		}
		return s
	}
	meta := func(runs int, shard stormdir.Shard, merged *stormdir.MergeInfo) *stormdir.Meta {
		return &stormdir.Meta{Config: stormdir.Config{Runs: runs, Shard: shard}, Merged: merged}
	}
	incomplete := []reports.ShardRuns{{Shard: "2/4", Dir: "shards/storm-shard-2", Runs: 0, Owned: 12}, {Shard: "4/4", Dir: "shards/storm-shard-4", Runs: 0, Owned: 12}}
	tests := []struct {
		name string
		meta *stormdir.Meta
		sum  *reports.Summary
		want *reports.Partial
	}{
		{"a whole storm with every run", meta(24, stormdir.Shard{}, nil), cells(24, 24), nil},
		{"a whole storm that stopped early", meta(24, stormdir.Shard{}, nil), cells(24, 20),
			&reports.Partial{RunsPerCell: 24, Cells: 2, ShortCells: 1, Planned: 48, Runs: 44, Missing: 4}},
		{"a shard's directory with its runs", meta(24, stormdir.Shard{Index: 2, Count: 4}, nil), cells(6, 6), nil},
		{"a shard's directory with an empty runs.jsonl", meta(24, stormdir.Shard{Index: 2, Count: 4}, nil), cells(0, 0),
			&reports.Partial{RunsPerCell: 6, Cells: 2, ShortCells: 2, Planned: 12, Missing: 12}},
		{"a shard of 5 runs owning 3", meta(5, stormdir.Shard{Index: 1, Count: 2}, nil), cells(3, 2),
			&reports.Partial{RunsPerCell: 3, Cells: 2, ShortCells: 1, Planned: 6, Runs: 5, Missing: 1}},
		{"merged: 2 of 4 shards empty (the storm-gate defect)", meta(24, stormdir.Shard{}, &stormdir.MergeInfo{Shards: []string{"1/4", "2/4", "3/4", "4/4"}, Incomplete: incomplete}), cells(12, 12),
			&reports.Partial{RunsPerCell: 24, Cells: 2, ShortCells: 2, Planned: 48, Runs: 24, Missing: 24, IncompleteShards: incomplete}},
		{"merged: a shard not given", meta(24, stormdir.Shard{}, &stormdir.MergeInfo{Shards: []string{"1/2"}, Missing: []string{"2/2"}}), cells(12, 12),
			&reports.Partial{RunsPerCell: 24, Cells: 2, ShortCells: 2, Planned: 48, Runs: 24, Missing: 24, MissingShards: []string{"2/2"}}},
		{"merged: storm.json names an incomplete shard, the counts are whole", meta(24, stormdir.Shard{}, &stormdir.MergeInfo{Incomplete: incomplete[:1]}), cells(24, 24),
			&reports.Partial{RunsPerCell: 24, Cells: 2, Planned: 48, Runs: 48, IncompleteShards: incomplete[:1]}},
		{"merged: every shard whole", meta(24, stormdir.Shard{}, &stormdir.MergeInfo{Shards: []string{"1/2", "2/2"}}), cells(24, 24), nil},
		{"no config.runs", meta(0, stormdir.Shard{}, nil), cells(24, 24),
			&reports.Partial{Cells: 2, Runs: 48}},
		{"no storm.json", nil, cells(24),
			&reports.Partial{Cells: 1, Runs: 24}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := stormdir.PartialOf(tc.meta, tc.sum)
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("PartialOf = %+v, want %+v", got, tc.want)
			}
		})
	}
}
