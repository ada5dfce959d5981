package compare

import (
	"fmt"
	"io"
	"strconv"

	"github.com/stormctl/stormctl/internal/history"
	"github.com/stormctl/stormctl/reports"
	"github.com/stormctl/stormctl/reports/table"
)

// This file counts what docs/faults.md ("Misclassified runs") calls
// misclassified runs: compare BASE HEAD, with HEAD run under --nemesis and BASE without.

// Misclassification is how many of a cell's runs under the nemesis (head)
// the faults misclassified, against the same cell without it (base).
type Misclassification struct {
	// Runs are head's runs and Faulted those a fault overlapped.
	Runs    int `json:"runs"`
	Faulted int `json:"faulted"`
	// Count is the misclassified runs, Outcomes the same per outcome.
	Count    int                     `json:"count"`
	Outcomes map[history.Outcome]int `json:"outcomes,omitempty"`
}

// kind is the outcome kind misclassification compares: corrupted,
// silent, gap and hole are one kind, "wrong" (a fault that turns a
// corrupted run silent has not made an unreachable store read as
// corruption: the cell was wrong without it); every other outcome is a
// kind of its own.
func kind(o history.Outcome) string {
	switch o {
	case history.Corrupted, history.Silent, history.Gap, history.Hole:
		return "wrong"
	}
	return string(o)
}

// Misclassified counts head's misclassified runs: a run a fault overlapped
// that ended neither completed nor infra, with an outcome of a kind (see
// kind) base never had, or of the wrong kind at all when target (the
// condition that must be clean: any corrupted, silent, gap or hole run
// counts); and an infra run no fault overlapped. It returns nil, unknown,
// when either cell is missing, head has no runs or base measured nothing
// (every run infra): there is no "never had" without evidence.
func Misclassified(base, head *reports.Cell, target bool) *Misclassification {
	if base == nil || head == nil || head.Runs == 0 || reports.Measured(base) == 0 {
		return nil
	}
	had := map[string]bool{}
	for _, o := range history.Outcomes() {
		if base.Count(o) > 0 {
			had[kind(o)] = true
		}
	}
	m := &Misclassification{Runs: head.Runs}
	add := func(o history.Outcome, n int) {
		if n <= 0 {
			return
		}
		if m.Outcomes == nil {
			m.Outcomes = map[history.Outcome]int{}
		}
		m.Outcomes[o] += n
		m.Count += n
	}
	for _, o := range history.Outcomes() {
		f := head.Faulted[o]
		m.Faulted += f
		switch {
		case o == history.Completed || o == history.Infra:
		case target && kind(o) == "wrong", !had[kind(o)]:
			add(o, f)
		}
	}
	add(history.Infra, head.Infra-head.Faulted[history.Infra])
	return m
}

// CountMisclassified fills in every matched cell's Misclassified when head
// ran under --nemesis (headNemesis) and base did not; target says which
// conditions must be clean. When head ran under the nemesis but the count
// cannot be made (base did too; cells matched across conditions) it says
// why in MisclassifiedNote instead. Without a nemesis head it does nothing.
func (c *Comparison) CountMisclassified(baseNemesis, headNemesis bool, target func(condition string) bool) {
	switch {
	case !headNemesis:
		return
	case baseNemesis:
		c.MisclassifiedNote = "not counted: base ran under --nemesis too (it needs the same cells without the nemesis)"
		return
	case c.Across != "":
		c.MisclassifiedNote = "not counted: cells matched across conditions (it needs the same cells without the nemesis)"
		return
	}
	total := 0
	for _, cc := range c.Cells {
		cc.Misclassified = Misclassified(cc.Base, cc.Head, target(cc.Condition))
		if cc.Misclassified != nil {
			total += cc.Misclassified.Count
		}
	}
	c.MisclassifiedTotal = &total
}

var misclassifiedHeader = []string{"world", "scenario", "condition", "without --nemesis (base)", "with --nemesis (head)", "runs a fault overlapped", "misclassified"}

// misclassifiedRows are the misclassification table's rows: every cell
// either side has ("—" where it is unknown).
func (c *Comparison) misclassifiedRows() [][]string {
	side := func(x *reports.Cell) string {
		if x == nil {
			return dash
		}
		return x.Compact()
	}
	var rows [][]string
	for _, cc := range c.Cells {
		faulted, count := dash, dash
		if m := cc.Misclassified; m != nil {
			faulted, count = fmt.Sprintf("%d/%d", m.Faulted, m.Runs), strconv.Itoa(m.Count)
		}
		rows = append(rows, []string{cc.World, cc.Scenario, cc.Condition, side(cc.Base), side(cc.Head), faulted, count})
	}
	return rows
}

const misclassifiedLegend = "A run is misclassified when a fault overlapped it and it ended neither completed nor infra with an outcome " +
	"of a kind its cell never had without the nemesis (corrupted, silent, gap and hole are one kind; under the target condition " +
	"any of them counts), or when it is infra and no fault overlapped it; — where a side has no such cell or base measured nothing."

// writeMisclassified writes the misclassification section, when there is
// one, in the table layout given.
func (c *Comparison) writeMisclassified(w io.Writer, style table.Style) error {
	if c.MisclassifiedNote != "" {
		_, err := fmt.Fprintf(w, "\nmisclassified under faults: %s\n", c.MisclassifiedNote)
		return err
	}
	if c.MisclassifiedTotal == nil {
		return nil
	}
	if _, err := fmt.Fprintf(w, "\nmisclassified under faults (head ran under --nemesis, base without): %d\n\n", *c.MisclassifiedTotal); err != nil {
		return err
	}
	if err := table.Write(w, style, misclassifiedHeader, c.misclassifiedRows()); err != nil {
		return err
	}
	_, err := fmt.Fprintf(w, "\n%s\n", misclassifiedLegend)
	return err
}
