package reports

import (
	"github.com/stormctl/stormctl/forensics"
	"github.com/stormctl/stormctl/internal/eventlog"
	"github.com/stormctl/stormctl/internal/history"
)

// Tally is the one cell aggregator: it counts runs into a summary's cells
// (Cell.Add: outcomes, verdicts, findings, classes) and gathers each cell's
// commit order and mint-to-commit windows, which the cell's type pairs and
// windows come from. The storm feeds it every run as it is recorded (and a
// resumed storm's recorded runs); stormctl forensics DIR feeds it a stored
// storm's runs, their findings computed anew. A Tally is not safe for
// concurrent use.
type Tally struct {
	// Summary holds the cells; a run of a cell it lacks adds the cell.
	Summary *Summary
	cells   map[history.CellKey]*cellTally
}

// cellTally is what a Tally gathers for one cell beyond its Cell.
type cellTally struct {
	order   forensics.CommitOrder
	windows forensics.WindowSet
}

// NewTally returns a tally into s.
func NewTally(s *Summary) *Tally {
	return &Tally{Summary: s, cells: map[history.CellKey]*cellTally{}}
}

// Add counts one run into its cell: its record, its commit order and its
// final log's mint-to-commit windows (order and evs: the run's
// forensics.AnalyzeRun Order and Commits). It returns the cell.
func (t *Tally) Add(rec RunRecord, order forensics.CommitOrder, evs []forensics.CommitEvent) *Cell {
	k := rec.CellKey
	c := t.Summary.Cell(k)
	if c == nil {
		c = &Cell{CellKey: k}
		t.Summary.Cells = append(t.Summary.Cells, c)
	}
	c.Add(rec)
	ct := t.cells[k]
	if ct == nil {
		ct = &cellTally{}
		t.cells[k] = ct
	}
	order.AddTo(&ct.order)
	ct.windows.Add(evs)
	return c
}

// Order returns cell k's commit order over the runs added, every type
// pair included (zero when none was).
func (t *Tally) Order(k history.CellKey) forensics.CommitOrder {
	if ct := t.cells[k]; ct != nil {
		return ct.order
	}
	return forensics.CommitOrder{}
}

// Samples returns a copy of cell k's mint-to-commit windows per event type,
// in nanoseconds (nil when no run was added).
func (t *Tally) Samples(k history.CellKey) map[eventlog.Type][]float64 {
	if ct := t.cells[k]; ct != nil {
		return ct.windows.Samples()
	}
	return nil
}

// Keys lists the cells runs were added to, in the summary's order.
func (t *Tally) Keys() []history.CellKey {
	var ks []history.CellKey
	for _, c := range t.Summary.Cells {
		if t.cells[c.Key()] != nil {
			ks = append(ks, c.Key())
		}
	}
	return ks
}

// Finish sets the windows and the first MaxCellPairs type pairs of every
// cell runs were added to.
func (t *Tally) Finish() {
	for _, c := range t.Summary.Cells {
		if ct := t.cells[c.Key()]; ct != nil {
			pairs := ct.order.SortedPairs()
			c.Pairs = pairs[:min(len(pairs), MaxCellPairs)]
			c.Windows = ct.windows.Windows()
		}
	}
}
