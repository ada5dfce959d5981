package table

import (
	"fmt"
	"strings"

	"github.com/stormctl/stormctl/internal/history"
	"github.com/stormctl/stormctl/reports"
)

// hasFaulted reports whether a nemesis fault overlapped any run.
func hasFaulted(s *reports.Summary) bool {
	for _, c := range s.Cells {
		if len(c.Faulted) > 0 {
			return true
		}
	}
	return false
}

// withFaulted appends the faulted column to a header or row when the
// summary has one.
func withFaulted(cols []string, faulted bool, v string) []string {
	if !faulted {
		return cols
	}
	return append(cols, v)
}

// FaultedNote is a cell's faulted runs in one cell of a table: "5: 3
// completed, 2 infra" (worst outcome first), "0" when no fault overlapped
// a run of the cell.
func FaultedNote(c *reports.Cell) string {
	n := 0
	var parts []string
	for _, o := range []history.Outcome{history.Corrupted, history.Silent, history.Gap, history.Hole, history.Failed, history.Stuck, history.Infra, history.Completed} {
		if k := c.Faulted[o]; k > 0 {
			n += k
			parts = append(parts, fmt.Sprintf("%d %s", k, o))
		}
	}
	if n == 0 {
		return "0"
	}
	return fmt.Sprintf("%d: %s", n, strings.Join(parts, ", "))
}
