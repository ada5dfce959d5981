package reports_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stormctl/stormctl/forensics"
	"github.com/stormctl/stormctl/internal/eventlog"
	"github.com/stormctl/stormctl/internal/history"
	"github.com/stormctl/stormctl/reports"
)

// TestTally: a tally counts each run into its cell (a cell the summary
// lacks is added after the others), sums the cell's commit order with every
// type pair, and when finished gives each cell with runs its windows and
// its first MaxCellPairs pairs; a cell without runs is left as it was.
func TestTally(t *testing.T) {
	t.Parallel()
	main := history.CellKey{World: "local", Scenario: "step-storm", Condition: "main"}
	idle := history.CellKey{World: "local", Scenario: "control", Condition: "main"}
	late := history.CellKey{World: "local", Scenario: "hook-storm", Condition: "main"}
	tally := reports.NewTally(reports.NewSummary([]history.CellKey{main, idle}))

	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	evs := []forensics.CommitEvent{{ID: "a", Type: eventlog.StepCreated, MintedAt: t0, CommitAt: t0.Add(2 * time.Millisecond)}}
	order := forensics.CommitOrder{Events: 5, InvertedPairs: 2, Pairs: map[forensics.TypePair]forensics.PairStat{}}
	for i := range reports.MaxCellPairs + 2 {
		order.Pairs[forensics.TypePair{Overtaking: eventlog.Type(fmt.Sprint("t", i)), Overtaken: eventlog.StepCreated}] = forensics.PairStat{Count: i + 1}
	}
	rec := func(k history.CellKey, o history.Outcome) reports.RunRecord {
		return reports.RunRecord{CellKey: history.NewCellKey(k.World, k.Scenario, k.Condition), Outcome: o,
			Findings: forensics.RunFindings{Reads: 3, Inversions: 2}}
	}
	tally.Add(rec(main, history.Corrupted), order, evs)
	tally.Add(rec(main, history.Completed), order, evs)
	if c := tally.Add(rec(late, history.Completed), forensics.CommitOrder{}, nil); c.Key() != late {
		t.Errorf("Add returned cell %v, want %v", c.Key(), late)
	}
	tally.Finish()

	s := tally.Summary
	if len(s.Cells) != 3 || s.Cells[2].Key() != late {
		t.Fatalf("cells %v, want main, idle, then the late one", tally.Keys())
	}
	if got := tally.Keys(); len(got) != 2 || got[0] != main || got[1] != late {
		t.Errorf("Keys = %v, want the cells with runs", got)
	}
	c := s.Cell(main)
	if c.Runs != 2 || c.Corrupted != 1 || c.Completed != 1 || c.Reads != 6 || c.Inversions != 4 {
		t.Errorf("main cell %+v", c)
	}
	if o := tally.Order(main); o.Events != 10 || o.InvertedPairs != 4 || len(o.Pairs) != reports.MaxCellPairs+2 {
		t.Errorf("main's order %+v, want both runs' with every pair", o)
	}
	if len(c.Pairs) != reports.MaxCellPairs || c.Pairs[0].Count != 2*(reports.MaxCellPairs+2) {
		t.Errorf("main's pairs %+v, want the %d most", c.Pairs, reports.MaxCellPairs)
	}
	if w := c.Windows[eventlog.StepCreated]; w.N != 2 || w.Max != 2*time.Millisecond {
		t.Errorf("main's windows %+v", c.Windows)
	}
	if xs := tally.Samples(main)[eventlog.StepCreated]; len(xs) != 2 {
		t.Errorf("main's samples %v", xs)
	}
	if c := s.Cell(idle); c.Runs != 0 || c.Windows != nil || c.Pairs != nil || tally.Samples(idle) != nil {
		t.Errorf("a cell without runs was changed: %+v", c)
	}
}
