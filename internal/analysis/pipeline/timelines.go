package pipeline

import (
	"github.com/stormctl/stormctl/internal/history"
	"github.com/stormctl/stormctl/reports"
)

// Timelines counts the timelines a storm directory holds per cell and
// class: the first reports.MaxTimelines explained runs of each class in
// each cell get one (the storm as its runs end, forensics DIR for the runs
// it classifies). Not safe for concurrent use.
type Timelines map[history.CellKey]map[string]int

// Take reserves a timeline for a run of class in cell k: false when the
// run has no class or the cell has its fill of the class.
func (t Timelines) Take(k history.CellKey, class string) bool {
	if class == "" || t[k][class] >= reports.MaxTimelines {
		return false
	}
	t.Add(k, class)
	return true
}

// Add counts a timeline written already (a resumed storm's).
func (t Timelines) Add(k history.CellKey, class string) {
	if t[k] == nil {
		t[k] = map[string]int{}
	}
	t[k][class]++
}
