package comment_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stormctl/stormctl/reports"
	"github.com/stormctl/stormctl/reports/comment"
	"github.com/stormctl/stormctl/reports/gate"
)

// TestPartialHeadline: a partial storm's comment never reads "gate
// passed": its first line says the storm is partial and what it misses,
// whether its own storm.json says so, a gate's JSON does, or both, and
// even when a gate that did not check completeness passed it.
func TestPartialHeadline(t *testing.T) {
	t.Parallel()
	partial := &reports.Partial{RunsPerCell: 24, Cells: 2, ShortCells: 2, Planned: 48, Runs: 24, Missing: 24,
		IncompleteShards: []reports.ShardRuns{{Shard: "2/2", Dir: "shards/storm-shard-2", Runs: 0, Owned: 24}}}
	passed := &gate.Result{Passed: true, Cells: 2, Rules: 5, Calibration: gate.Calibration{Claim: gate.Calibrated, LegacyCells: 1, Runs: 24, Found: 3}}
	sawPartial := &gate.Result{Passed: false, Cells: 2, Rules: 5, Calibration: passed.Calibration, Partial: partial,
		Broken: []gate.Breach{{Rule: gate.RulePartial, Reason: partial.Reasons()[0]}, {Rule: gate.RulePartial, Reason: partial.Reasons()[1]}}}
	const head = "### stormctl storm at `abc1234`: "
	const missing = "partial storm, 24 of 48 runs missing (shard 2/2 incomplete); "
	tests := []struct {
		name    string
		partial *reports.Partial // the storm's own
		gates   []*gate.Result
		want    string // the first visible line
		gate    string // the history row's verdict
		lines   []string
	}{
		{"a whole storm, its gate passed", nil, []*gate.Result{passed}, head + "gate passed", comment.GatePassed, []string{"gate passed: 2 cells, 5 rules"}},
		{"a partial storm, no gate", partial, nil, head + missing + "no gate run", comment.GateNone,
			[]string{"- partial: shard 2/2 is incomplete: 0 of its 24 runs (it stopped early; resume it with `stormctl storm --resume shards/storm-shard-2`, or rerun it)\n",
				"- partial: 24 of the 48 runs planned are missing: 2 of 2 cells have fewer runs than the 24 each was to have\n"}},
		{"a partial storm, its gate saw it", partial, []*gate.Result{sawPartial}, head + missing + "gate failed", comment.GateFailed,
			[]string{"- partial: shard 2/2 is incomplete", "- on every condition: partial, and no other rule broken on the runs it holds: 2 cells, 5 rules; calibrated"}},
		{"the gate's JSON alone says partial", nil, []*gate.Result{sawPartial}, head + missing + "gate failed", comment.GateFailed,
			[]string{"- partial: 24 of the 48 runs planned are missing"}},
		{"a partial storm a gate passed without checking", partial, []*gate.Result{passed}, head + missing + "gate failed", comment.GateFailed,
			[]string{"- partial: shard 2/2 is incomplete", "- on every condition: no rule broken on the runs the storm holds (2 cells, 5 rules), but this gate did not check that the storm is whole"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := comment.Comment{Summary: twoCells(), Partial: tc.partial, Gates: tc.gates, Commit: "abc1234", Keep: 1}
			var b bytes.Buffer
			if err := c.Markdown(&b); err != nil {
				t.Fatal(err)
			}
			_, body, _ := strings.Cut(b.String(), "-->\n")
			first, _, _ := strings.Cut(body, "\n")
			if first != tc.want {
				t.Errorf("first line %q, want %q", first, tc.want)
			}
			if got := c.Gate(); got != tc.gate {
				t.Errorf("Gate() = %q, want %q", got, tc.gate)
			}
			for _, l := range tc.lines {
				if !strings.Contains(body, l) {
					t.Errorf("the comment does not say %q:\n%s", l, body)
				}
			}
			if c.Partial != nil || tc.gates != nil && tc.gates[0].Partial != nil {
				if strings.Contains(body, "gate passed") {
					t.Errorf("a partial storm's comment says \"gate passed\":\n%s", body)
				}
			}
		})
	}
}
