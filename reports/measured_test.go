package reports_test

import (
	"testing"

	"github.com/stormctl/stormctl/internal/history"
	"github.com/stormctl/stormctl/reports"
)

// cellOf counts runs of the given outcomes into a cell.
func cellOf(runs map[history.Outcome]int) *reports.Cell {
	c := &reports.Cell{CellKey: history.NewCellKey("local", "step-storm", "seq")}
	for o, n := range runs {
		for range n {
			c.Add(reports.RunRecord{Outcome: o})
		}
	}
	return c
}

// TestDecided: a cell is evidence only with at least 80% of its runs
// decided (history.Outcome.Decided), and at least one.
func TestDecided(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		runs     map[history.Outcome]int
		rate     float64
		decided  int
		min      int
		evidence bool
		text     string
	}{
		{"all completed", map[history.Outcome]int{history.Completed: 24}, 0.8, 24, 20, true,
			"24 decided runs of 24; at least 20 needed"},
		{"every decided outcome counts", map[history.Outcome]int{history.Completed: 1, history.Corrupted: 1, history.Silent: 1, history.Gap: 1, history.Hole: 1}, 0.8, 5, 4, true,
			"5 decided runs of 5; at least 4 needed"},
		{"all stuck", map[history.Outcome]int{history.Stuck: 24}, 0.8, 0, 20, false,
			"0 decided runs of 24 (24 stuck); at least 20 needed"},
		{"all infra", map[history.Outcome]int{history.Infra: 48}, 0.8, 0, 39, false,
			"0 decided runs of 48 (48 infra); at least 39 needed"},
		{"exactly 80%", map[history.Outcome]int{history.Completed: 8, history.Stuck: 1, history.Failed: 1}, 0.8, 8, 8, true,
			"8 decided runs of 10 (1 stuck, 1 failed); at least 8 needed"},
		{"just under 80%", map[history.Outcome]int{history.Completed: 19, history.Stuck: 3, history.Infra: 2}, 0.8, 19, 20, false,
			"19 decided runs of 24 (3 stuck, 2 infra); at least 20 needed"},
		{"rate 0 still needs one", map[history.Outcome]int{history.Stuck: 3}, 0, 0, 1, false,
			"0 decided runs of 3 (3 stuck); at least 1 needed"},
		{"rate 0, one decided", map[history.Outcome]int{history.Stuck: 3, history.Completed: 1}, 0, 1, 1, true, ""},
		{"no runs", nil, 0.8, 0, 1, false, "0 decided runs of 0; at least 1 needed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
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
