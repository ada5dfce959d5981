package history

import "testing"

// TestCellKey: a cell's text names it in tables; its directory name is a
// file name whatever its condition's overrides hold.
func TestCellKey(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		world, scenario, condition string
		text, dir                  string
	}{
		{"local", "step-storm", "main", "local/step-storm/main", "local_step-storm_main"},
		{"postgres", "control", "seq+callsite+ordered", "postgres/control/seq+callsite+ordered", "postgres_control_seq-callsite-ordered"},
		{"vercel", "hook-storm", "main/guard=count-index", "vercel/hook-storm/main/guard=count-index", "vercel_hook-storm_main-guard-count-index"},
		{"local", "control", "seq/wake=ordered/../x", "local/control/seq/wake=ordered/../x", "local_control_seq-wake-ordered-..-x"},
	} {
		k := NewCellKey(tc.world, tc.scenario, tc.condition)
		if k != (CellKey{World: tc.world, Scenario: tc.scenario, Condition: tc.condition}) {
			t.Errorf("NewCellKey(%q, %q, %q) = %+v", tc.world, tc.scenario, tc.condition, k)
		}
		if got := k.String(); got != tc.text {
			t.Errorf("%+v.String() = %q, want %q", k, got, tc.text)
		}
		if got := k.Dir(); got != tc.dir {
			t.Errorf("%+v.Dir() = %q, want %q", k, got, tc.dir)
		}
	}
}
