package reports_test

import (
	"testing"

	"github.com/stormctl/stormctl/reports"
)

// cellOf counts runs of the given outcomes into a cell.
func cellOf(runs map[reports.Outcome]int) *reports.Cell {
	c := &reports.Cell{World: "local", Scenario: "step-storm", Condition: "seq"}
	for o, n := range runs {
		for range n {
			c.Add(reports.RunRecord{Outcome: o})
		}
	}
	return c
}

// TestDecided: one definition of a decided run (completed, corrupted,
// silent, gap, hole), and a cell is evidence only with at least 80% of its
// runs decided, and at least one.
func TestDecided(t *testing.T) {
	for _, o := range reports.Outcomes() {
		want := o != reports.Stuck && o != reports.Failed && o != reports.Infra
		if o.Decided() != want {
			t.Errorf("%s.Decided() = %v, want %v", o, o.Decided(), want)
		}
	}
	tests := []struct {
		name     string
		runs     map[reports.Outcome]int
		rate     float64
		decided  int
		min      int
		evidence bool
		text     string
	}{
		{"all completed", map[reports.Outcome]int{reports.Completed: 24}, 0.8, 24, 20, true,
			"24 decided runs of 24; at least 20 needed"},
		{"every decided outcome counts", map[reports.Outcome]int{reports.Completed: 1, reports.Corrupted: 1, reports.Silent: 1, reports.Gap: 1, reports.Hole: 1}, 0.8, 5, 4, true,
			"5 decided runs of 5; at least 4 needed"},
		{"all stuck", map[reports.Outcome]int{reports.Stuck: 24}, 0.8, 0, 20, false,
			"0 decided runs of 24 (24 stuck); at least 20 needed"},
		{"all infra", map[reports.Outcome]int{reports.Infra: 48}, 0.8, 0, 39, false,
			"0 decided runs of 48 (48 infra); at least 39 needed"},
		{"exactly 80%", map[reports.Outcome]int{reports.Completed: 8, reports.Stuck: 1, reports.Failed: 1}, 0.8, 8, 8, true,
			"8 decided runs of 10 (1 stuck, 1 failed); at least 8 needed"},
		{"just under 80%", map[reports.Outcome]int{reports.Completed: 19, reports.Stuck: 3, reports.Infra: 2}, 0.8, 19, 20, false,
			"19 decided runs of 24 (3 stuck, 2 infra); at least 20 needed"},
		{"rate 0 still needs one", map[reports.Outcome]int{reports.Stuck: 3}, 0, 0, 1, false,
			"0 decided runs of 3 (3 stuck); at least 1 needed"},
		{"rate 0, one decided", map[reports.Outcome]int{reports.Stuck: 3, reports.Completed: 1}, 0, 1, 1, true, ""},
		{"no runs", nil, 0.8, 0, 1, false, "0 decided runs of 0; at least 1 needed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := cellOf(tt.runs)
			if got := c.Decided(); got != tt.decided {
				t.Errorf("Decided = %d, want %d", got, tt.decided)
			}
			if got := reports.MinDecided(c.Runs, tt.rate); got != tt.min {
				t.Errorf("MinDecided(%d, %g) = %d, want %d", c.Runs, tt.rate, got, tt.min)
			}
			if got := c.Evidenced(tt.rate); got != tt.evidence {
				t.Errorf("Evidenced(%g) = %v, want %v", tt.rate, got, tt.evidence)
			}
			if got := c.Evidence(tt.rate); tt.text != "" && got != tt.text {
				t.Errorf("Evidence(%g) = %q, want %q", tt.rate, got, tt.text)
			}
		})
	}
}
