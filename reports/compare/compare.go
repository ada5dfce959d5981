package compare

import (
	"fmt"
	"io"
	"strconv"

	"github.com/stormctl/stormctl/internal/history"
	"github.com/stormctl/stormctl/reports"
	"github.com/stormctl/stormctl/reports/stats"
	"github.com/stormctl/stormctl/reports/table"
)

// Verdicts of a comparison, per metric and per cell. **contract**
const (
	Better     = "better"      // head's rate is lower, p < Alpha
	Worse      = "worse"       // head's rate is higher, p < Alpha
	NoEvidence = "no evidence" // p >= Alpha, or a side measured nothing
	OnlyBase   = "only in base"
	OnlyHead   = "only in head"
)

// Proportion is count runs of n, with its Wilson interval at 1-Alpha. The
// runs n are a cell's runs less its infra runs (an unreachable store
// measured nothing); with n = 0 the rate is 0 and the interval [0, 1].
type Proportion struct {
	Count int     `json:"count"`
	N     int     `json:"n"`
	Rate  float64 `json:"rate"`
	Lo    float64 `json:"lo"`
	Hi    float64 `json:"hi"`
}

func newProportion(count, n int) Proportion {
	p := Proportion{Count: count, N: n}
	if n > 0 {
		p.Rate = float64(count) / float64(n)
	}
	p.Lo, p.Hi = stats.Wilson(count, n, stats.Alpha)
	return p
}

// MetricDiff compares one rate between base and head.
type MetricDiff struct {
	Base Proportion `json:"base"`
	Head Proportion `json:"head"`
	// Diff is head's rate less base's: positive is worse.
	Diff float64 `json:"diff"`
	// P is the two-sided Fisher exact p-value; null when a side has no runs.
	P *float64 `json:"p"`
	// RunsNeeded is the runs per cell (each side) that would detect Diff at
	// p < Alpha with Power; null when Diff is 0 or a side has no runs.
	RunsNeeded *int   `json:"runs_needed"`
	Verdict    string `json:"verdict"`
}

func newMetricDiff(base, head Proportion) *MetricDiff {
	m := &MetricDiff{Base: base, Head: head, Verdict: NoEvidence}
	if base.N == 0 || head.N == 0 {
		return m
	}
	m.Diff = head.Rate - base.Rate
	p := stats.FisherExact(base.Count, base.N-base.Count, head.Count, head.N-head.Count)
	m.P = &p
	if n, ok := stats.RunsNeeded(base.Rate, head.Rate, stats.Alpha, stats.Power); ok {
		m.RunsNeeded = &n
	}
	if p < stats.Alpha {
		switch {
		case m.Diff < 0:
			m.Verdict = Better
		case m.Diff > 0:
			m.Verdict = Worse
		}
	}
	return m
}

// CellComparison compares one cell (matched by world, scenario and
// condition) between two storms.
type CellComparison struct {
	history.CellKey
	// Base and Head are the cell on each side; nil on the side it is
	// missing from.
	Base *reports.Cell `json:"base"`
	Head *reports.Cell `json:"head"`
	// Corrupted compares the corrupted rate, Bad the corrupted+silent rate;
	// both nil for a cell present on one side only.
	Corrupted *MetricDiff `json:"corrupted"`
	Bad       *MetricDiff `json:"corrupted_silent"`
	// Verdict is worse when either rate is significantly worse, better when
	// either is significantly better and neither worse, else no evidence
	// (or only in base / only in head).
	Verdict string `json:"verdict"`
	// Misclassified counts the head runs the nemesis's faults
	// misclassified (see Misclassified); nil when not counted or unknown.
	Misclassified *Misclassification `json:"misclassified,omitempty"`
}

// Comparison is compare's result: every cell of both storms, base's order
// first, then the cells only head has.
type Comparison struct {
	Base  string  `json:"base"`
	Head  string  `json:"head"`
	Alpha float64 `json:"alpha"`
	Power float64 `json:"power"`
	// Across is "base condition → head condition" when two single-condition
	// storms were compared cell by cell across their conditions.
	Across string            `json:"across,omitempty"`
	Cells  []*CellComparison `json:"cells"`
	// MisclassifiedTotal sums the cells' misclassified runs when head ran
	// under --nemesis and base did not (CountMisclassified); otherwise
	// nil, with MisclassifiedNote saying why when head ran under it.
	MisclassifiedTotal *int   `json:"misclassified,omitempty"`
	MisclassifiedNote  string `json:"misclassified_note,omitempty"`
}

// Compare compares two storms cell by cell. Rates are over the runs that
// measured something (runs less infra): the corrupted rate and the
// corrupted+silent rate, each side with its 95% Wilson interval, the
// difference, Fisher's exact test and the runs needed to detect the
// difference.
func Compare(base, head *reports.Summary) *Comparison {
	cmp := &Comparison{Alpha: stats.Alpha, Power: stats.Power}
	match := head.Cell
	if bc, hc := base.Conditions(), head.Conditions(); len(bc) == 1 && len(hc) == 1 && bc[0] != hc[0] {
		// Two storms of one condition each (say main against
		// seq+callsite+ordered): compare them cell by cell across conditions.
		cmp.Across = bc[0] + " → " + hc[0]
		match = func(k history.CellKey) *reports.Cell {
			k.Condition = hc[0]
			return head.Cell(k)
		}
	}
	matched := map[history.CellKey]bool{}
	for _, b := range base.Cells {
		cc := &CellComparison{CellKey: b.Key(), Base: b, Head: match(b.Key())}
		if cc.Head != nil {
			matched[cc.Head.Key()] = true
		}
		if cc.Head == nil {
			cc.Verdict = OnlyBase
		} else {
			h := cc.Head
			cc.Corrupted = newMetricDiff(newProportion(b.Corrupted, reports.Measured(b)), newProportion(h.Corrupted, reports.Measured(h)))
			cc.Bad = newMetricDiff(newProportion(b.Corrupted+b.Silent, reports.Measured(b)), newProportion(h.Corrupted+h.Silent, reports.Measured(h)))
			cc.Verdict = combine(cc.Corrupted.Verdict, cc.Bad.Verdict)
		}
		cmp.Cells = append(cmp.Cells, cc)
	}
	for _, h := range head.Cells {
		if !matched[h.Key()] {
			cmp.Cells = append(cmp.Cells, &CellComparison{CellKey: h.Key(), Head: h, Verdict: OnlyHead})
		}
	}
	return cmp
}

func combine(vs ...string) string {
	out := NoEvidence
	for _, v := range vs {
		switch v {
		case Worse:
			return Worse
		case Better:
			out = Better
		}
	}
	return out
}

var compareHeader = []string{
	"world", "scenario", "condition", "runs", "stuck", "infra",
	"corrupted base", "corrupted head", "Δ", "p", "runs needed",
	"corrupted+silent base", "corrupted+silent head", "Δ", "p", "runs needed",
	"verdict",
}

const dash = "—"

// String is the proportion as the tables print it: "3/24 12.5% [4.3, 31.0]".
func (p Proportion) String() string {
	if p.N == 0 {
		return "0/0"
	}
	return fmt.Sprintf("%d/%d %.1f%% [%.1f, %.1f]", p.Count, p.N, 100*p.Rate, 100*p.Lo, 100*p.Hi)
}

func (m *MetricDiff) cols() []string {
	if m == nil {
		return []string{dash, dash, dash, dash, dash}
	}
	diff, p, need := dash, dash, dash
	if m.P != nil {
		diff = fmt.Sprintf("%+.1f pp", 100*m.Diff)
		p = PValue(*m.P)
	}
	if m.RunsNeeded != nil {
		need = strconv.Itoa(*m.RunsNeeded)
	}
	return []string{m.Base.String(), m.Head.String(), diff, p, need}
}

// PValue prints a p-value with 3 significant digits.
func PValue(p float64) string {
	switch {
	case p < 0.0001:
		return "<0.0001"
	case p >= 0.9995:
		return "1"
	}
	return strconv.FormatFloat(p, 'g', 3, 64)
}

func (cc *CellComparison) row() []string {
	// sides is "base / head" of a count, — on a side without the cell.
	sides := func(n func(*reports.Cell) int) string {
		side := func(c *reports.Cell) string {
			if c == nil {
				return dash
			}
			return strconv.Itoa(n(c))
		}
		return side(cc.Base) + " / " + side(cc.Head)
	}
	r := []string{cc.World, cc.Scenario, cc.Condition, sides(func(c *reports.Cell) int { return c.Runs }),
		sides(func(c *reports.Cell) int { return c.Stuck }), sides(func(c *reports.Cell) int { return c.Infra })}
	r = append(r, cc.Corrupted.cols()...)
	r = append(r, cc.Bad.cols()...)
	return append(r, cc.Verdict)
}

// Table writes the comparison for a terminal: every statistic of every
// cell, then the legend.
func (c *Comparison) Table(w io.Writer) error {
	if err := table.Write(w, table.Right, compareHeader, c.rows()); err != nil {
		return err
	}
	if _, err := fmt.Fprintln(w, compareLegend(c)); err != nil {
		return err
	}
	return c.writeMisclassified(w, table.Right)
}

// rows are the statistics table's rows, a cell each.
func (c *Comparison) rows() [][]string {
	var rows [][]string
	for _, cc := range c.Cells {
		rows = append(rows, cc.row())
	}
	return rows
}

func compareLegend(c *Comparison) string {
	across := ""
	if c.Across != "" {
		across = "Cells matched across conditions (" + c.Across + "), rows named by the base's. "
	}
	return across + fmt.Sprintf("base %s, head %s. runs, stuck and infra are base / head; stuck and infra runs decided nothing. "+
		"Rates are over runs less infra, with %g%% Wilson intervals; Δ is head − base; "+
		"p is Fisher's exact test (two-sided); a verdict needs p < %g; runs needed per cell detect Δ at p < %g with %g%% power.",
		c.Base, c.Head, 100*(1-c.Alpha), c.Alpha, c.Alpha, 100*c.Power)
}

// Markdown writes the comparison for a PR: a seed-style table (each side's
// counts and the verdict per cell) first, the statistics folded.
func (c *Comparison) Markdown(w io.Writer) error {
	side := func(x *reports.Cell) string {
		if x == nil {
			return dash
		}
		return x.Compact()
	}
	seed := make([][]string, len(c.Cells))
	for i, cc := range c.Cells {
		seed[i] = []string{cc.World, cc.Scenario, cc.Condition, side(cc.Base), side(cc.Head), cc.Verdict}
	}
	if err := table.Write(w, table.MarkdownCompact, []string{"world", "scenario", "condition", "base", "head", "verdict"}, seed); err != nil {
		return err
	}
	if _, err := fmt.Fprint(w, "\n<details><summary>rates, intervals, p-values and runs needed per cell</summary>\n\n"); err != nil {
		return err
	}
	if err := table.Write(w, table.Markdown, compareHeader, c.rows()); err != nil {
		return err
	}
	if _, err := fmt.Fprintf(w, "\n%s\n\n</details>\n", compareLegend(c)); err != nil {
		return err
	}
	return c.writeMisclassified(w, table.MarkdownCompact)
}
