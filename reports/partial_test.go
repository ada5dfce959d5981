package reports_test

import (
	"reflect"
	"testing"

	"github.com/stormctl/stormctl/reports"
)

// TestPartialText: what a partial storm is missing reads the same in
// merge, gate and comment: a headline, and a reason per thing missing.
func TestPartialText(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		p        reports.Partial
		headline string
		reasons  []string
	}{
		{
			name:     "a whole storm stopped early",
			p:        reports.Partial{RunsPerCell: 24, Cells: 4, ShortCells: 1, Planned: 96, Runs: 95, Missing: 1},
			headline: "1 of 96 runs missing",
			reasons:  []string{"1 of the 96 runs planned is missing: 1 of 4 cells has fewer runs than the 24 each was to have"},
		},
		{
			name: "shards missing and incomplete",
			p: reports.Partial{RunsPerCell: 24, Cells: 2, ShortCells: 2, Planned: 48, Runs: 12, Missing: 36, MissingShards: []string{"3/4", "4/4"},
				IncompleteShards: []reports.ShardRuns{{Shard: "2/4", Dir: "shards/storm-shard-2", Runs: 0, Owned: 12}}},
			headline: "36 of 48 runs missing (shards 3/4, 4/4 not merged; shard 2/4 incomplete)",
			reasons: []string{
				"shard 3/4 was not merged: none of its runs are here (give merge its directory, or rerun it)",
				"shard 4/4 was not merged: none of its runs are here (give merge its directory, or rerun it)",
				"shard 2/4 is incomplete: 0 of its 12 runs (it stopped early; resume it with `stormctl storm --resume shards/storm-shard-2`, or rerun it)",
				"36 of the 48 runs planned are missing: 2 of 2 cells have fewer runs than the 24 each was to have",
			},
		},
		{
			name:     "runs per cell unknown",
			p:        reports.Partial{Cells: 2, Runs: 48},
			headline: "its runs per cell unknown",
			reasons:  []string{"storm.json does not say how many runs each cell was to have (no config.runs): the storm cannot be shown whole"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := tc.p.Headline(); got != tc.headline {
				t.Errorf("Headline = %q, want %q", got, tc.headline)
			}
			if got := tc.p.Reasons(); !reflect.DeepEqual(got, tc.reasons) {
				t.Errorf("Reasons =\n%q\nwant\n%q", got, tc.reasons)
			}
		})
	}
}
