package pipeline

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stormctl/stormctl/internal/analysis/explain"
	"github.com/stormctl/stormctl/internal/history"
	"github.com/stormctl/stormctl/reports"
)

// TestReclassifierKeep: a computed class replaces the recorded one (each
// change counted by old and new class), the first runs of a class and cell
// get a timeline written into the storm, and ChangeLine says what changed.
func TestReclassifierKeep(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	c := NewReclassifier(dir, true)
	k := history.NewCellKey("local", "step-storm", "main")
	explained := func(class string) *Explained {
		return &Explained{Input: explain.Input{RunID: "wrun_" + class}, Explanation: explain.Explanation{Class: class}}
	}
	if got := c.ChangeLine(); got != "no recorded class changed" {
		t.Errorf("ChangeLine() = %q before any change", got)
	}
	runs := []reports.RunRecord{
		{CellKey: k, RunID: "a", Class: "stale-prefix"},
		{CellKey: k, RunID: "b", Class: "stale-prefix"},
		{CellKey: k, RunID: "c"},
	}
	for i, class := range []string{"cursor-skip", "stale-prefix", "cursor-skip"} {
		if err := c.Keep(&runs[i], explained(class)); err != nil {
			t.Fatal(err)
		}
	}
	if c.Computed != 3 {
		t.Errorf("Computed = %d, want 3", c.Computed)
	}
	if got, want := c.ChangeLine(), "changed 1 stale-prefix -> cursor-skip"; got != want {
		t.Errorf("ChangeLine() = %q, want %q", got, want)
	}
	for _, r := range runs {
		if r.Timeline == "" {
			t.Errorf("run %s (%s) got no timeline", r.RunID, r.Class)
			continue
		}
		if _, err := os.Stat(filepath.Join(dir, r.Timeline)); err != nil {
			t.Errorf("run %s: timeline %s: %v", r.RunID, r.Timeline, err)
		}
	}
}
