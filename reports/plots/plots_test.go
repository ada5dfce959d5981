package plots

import (
	"path/filepath"
	"slices"
	"testing"

	"github.com/stormctl/stormctl/internal/eventlog"
	"github.com/stormctl/stormctl/internal/history"
	"github.com/stormctl/stormctl/reports"
)

// TestWindowsOfOneValue draws the windows plot of a storm whose every
// window is the same (a storm of two runs cut after their first write):
// the log scale's axis would be padded below zero; the plot is drawn.
func TestWindowsOfOneValue(t *testing.T) {
	t.Parallel()
	k := history.NewCellKey("local", "control", "main")
	s := reports.NewSummary([]history.CellKey{k})
	for _, windows := range [][]float64{{0.5, 0.5}, {0}, {3}} {
		dir := t.TempDir()
		d := Data{Windows: map[history.CellKey]map[eventlog.Type][]float64{k: {eventlog.RunCreated: windows}}}
		written, err := Write(dir, s, d)
		if err != nil {
			t.Fatalf("windows %v: %v", windows, err)
		}
		if !slices.Contains(written, FileWindows) {
			t.Errorf("windows %v: wrote %v, want %s", windows, written, filepath.Join(dir, FileWindows))
		}
	}
}
