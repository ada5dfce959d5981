package storm_test

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stormctl/stormctl/internal/engines/builtinengines"
	"github.com/stormctl/stormctl/internal/storm"
	"github.com/stormctl/stormctl/internal/storm/stormdir"
	"github.com/stormctl/stormctl/reports"
)

func TestShardValidate(t *testing.T) {
	tests := []struct {
		name  string
		shard stormdir.Shard
		runs  int
		want  []string // "" for valid
	}{
		{"whole", stormdir.Shard{}, 2, nil},
		{"as many shards as runs", stormdir.Shard{Index: 2, Count: 2}, 2, nil},
		{"more shards than runs", stormdir.Shard{Index: 1, Count: 3}, 2, []string{"--shard 1/3", "--runs 2", "at most 2"}},
		{"index past count", stormdir.Shard{Index: 3, Count: 2}, 4, []string{"--shard 3/2", "1 <= i <= n"}},
		{"index without count", stormdir.Shard{Index: 1}, 4, []string{"--shard 1/0"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := validConfig(t)
			c.Runs, c.Shard = tc.runs, tc.shard
			_, err := storm.NewPlan(c, testRegistry(), builtinengines.Engines())
			if tc.want == nil {
				if err != nil {
					t.Fatalf("Validate: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatal("Validate() = nil, want an error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
		})
	}
}

// TestRunShard runs a real shard: only its run indexes are run, of every
// cell, and storm.json records the shard.
func TestRunShard(t *testing.T) {
	p := plan(t, stormdir.Config{
		Worlds: []string{"local"}, Scenarios: []string{"control"}, Conditions: []string{"main", "seq"},
		Runs: 3, TimeScale: 0.1, Latency: "none", Timeout: 30 * time.Second, Seed: 5,
		Shard: stormdir.Shard{Index: 2, Count: 2},
	})
	sum := runStorm(t, p)
	for _, c := range sum.Cells {
		if c.Runs != 1 {
			t.Errorf("cell %s ran %d runs, want 1 (run index 1 of 0..2)", c.Key(), c.Runs)
		}
	}
	for _, r := range jsonLines[reports.RunRecord](t, filepath.Join(p.Config.Out, stormdir.FileRuns)) {
		if r.Index != 1 {
			t.Errorf("run %s has run index %d, which shard 2/2 does not own", r.RunID, r.Index)
		}
	}
	m, err := stormdir.ReadMeta(p.Config.Out)
	if err != nil {
		t.Fatal(err)
	}
	if m.Config.Shard != (stormdir.Shard{Index: 2, Count: 2}) {
		t.Errorf("%s records shard %q, want 2/2", stormdir.FileStorm, m.Config.Shard)
	}
}
