package stormdir_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stormctl/stormctl/internal/history"
	"github.com/stormctl/stormctl/internal/storm/stormdir"
	"github.com/stormctl/stormctl/reports"
)

func TestRunFileName(t *testing.T) {
	tests := []struct {
		runID string
		want  bool
	}{
		{"wrun_01M8XYGNVHR83E5QDV0F11JG3J", true},
		{"..", true}, // "...jsonl" stays in its directory
		{"", false},
		{"/", false},
		{"../../../etc/x", false},
		{"a/b", false},
	}
	for _, tc := range tests {
		if got := stormdir.RunFileName(tc.runID); got != tc.want {
			t.Errorf("stormdir.RunFileName(%q) = %v, want %v", tc.runID, got, tc.want)
		}
	}
}

// TestWriteEventsRefusesPaths: a run id with a path separator writes
// nothing, anywhere.
func TestWriteEventsRefusesPaths(t *testing.T) {
	dir := t.TempDir()
	w, err := stormdir.OpenWriter(filepath.Join(dir, "storm"), &stormdir.Meta{Schema: reports.SchemaVersion})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if err := w.WriteEvents(history.CellKey{World: "local", Scenario: "control", Condition: "main"}, "../../escaped", nil); err == nil {
		t.Fatal("WriteEvents with run id ../../escaped: no error")
	}
	if _, err := os.Stat(filepath.Join(dir, "storm", "escaped.jsonl")); !os.IsNotExist(err) {
		t.Errorf("escaped.jsonl was written outside the storm (stat: %v)", err)
	}
}
