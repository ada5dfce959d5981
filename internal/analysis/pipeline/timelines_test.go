package pipeline

import (
	"testing"

	"github.com/stormctl/stormctl/internal/history"
	"github.com/stormctl/stormctl/reports"
)

// TestTimelines: the first reports.MaxTimelines runs of a class in a cell
// get a timeline, counting those written already; a run without a class
// gets none.
func TestTimelines(t *testing.T) {
	t.Parallel()
	a, b := history.NewCellKey("local", "step-storm", "main"), history.NewCellKey("local", "control", "main")
	tl := Timelines{}
	tl.Add(a, "stale-prefix")
	for i := 1; i < reports.MaxTimelines; i++ {
		if !tl.Take(a, "stale-prefix") {
			t.Fatalf("timeline %d of %d refused", i+1, reports.MaxTimelines)
		}
	}
	if tl.Take(a, "stale-prefix") {
		t.Error("a timeline past reports.MaxTimelines taken")
	}
	if !tl.Take(a, "cursor-skip") || !tl.Take(b, "stale-prefix") {
		t.Error("another class or cell has its own quota")
	}
	if tl.Take(b, "") {
		t.Error("a run without a class took a timeline")
	}
}
