package fidelity

// The judges: how a claim's cells become a verdict, and the measured text
// printed beside the reference.

import (
	"fmt"
	"math"
	"strings"

	"github.com/stormctl/stormctl/internal/base/plural"
	"github.com/stormctl/stormctl/internal/history"
	"github.com/stormctl/stormctl/reports"
	"github.com/stormctl/stormctl/reports/stats"
)

// judgement is what a judge makes of a claim's cells.
type judgement struct {
	measured string
	verdict  Verdict
	reason   string
}

// cell is a claim's cell on one world: its key, and its summary row (nil
// when the summary has none).
type cell struct {
	key history.CellKey
	*reports.Cell
}

// n is the runs that decided something (reports.Cell.Decided): a stuck,
// failed or infra run is no evidence either way.
func (c cell) n() int {
	if c.Cell == nil {
		return 0
	}
	return c.Decided()
}

// unmeasured says why the cell is no evidence, or "": it is not in the
// storm, has no runs, or too few of its runs decided something (fewer
// than reports.DefaultMinDecided of them, or none), as gate has it.
func (c cell) unmeasured() string {
	switch {
	case c.Cell == nil:
		return c.key.String() + " is not in the storm"
	case c.Runs == 0:
		return c.key.String() + " has no runs (interrupted?)"
	case !c.Evidenced(reports.DefaultMinDecided):
		return fmt.Sprintf("%s: not enough evidence: %s", c.key, c.Evidence(reports.DefaultMinDecided))
	}
	return ""
}

// unknown is the judgement of a claim some of whose cells are no
// evidence, or ok false when all of them are.
func unknown(cs []cell) (j judgement, ok bool) {
	var why []string
	for _, c := range cs {
		if w := c.unmeasured(); w != "" {
			why = append(why, w)
		}
	}
	if why == nil {
		return judgement{}, false
	}
	return judgement{measured: "not measured", verdict: Unknown, reason: strings.Join(why, "; ")}, true
}

// note tells of the runs that decided nothing (infra, stuck, failed)
// among the claim's cells.
func note(cs []cell) string {
	var had []string
	for _, o := range history.Outcomes() {
		if o.Decided() {
			continue
		}
		n := 0
		for _, c := range cs {
			if c.Cell != nil {
				n += c.Count(o)
			}
		}
		if n > 0 {
			had = append(had, plural.Count(n, string(o)+" run"))
		}
	}
	if had == nil {
		return ""
	}
	return fmt.Sprintf("judged with %s in its cells: runs that decided nothing are left out of n", joinAnd(had))
}

// joinAnd joins "a", "a and b", "a, b and c".
func joinAnd(xs []string) string {
	if len(xs) < 2 {
		return strings.Join(xs, "")
	}
	return strings.Join(xs[:len(xs)-1], ", ") + " and " + xs[len(xs)-1]
}

// A metric counts a cell's runs of some kind.
type metric func(*reports.Cell) int

func bad(c *reports.Cell) int       { return c.Corrupted + c.Silent }
func corrupted(c *reports.Cell) int { return c.Corrupted }

// frac is "k/n (rate)".
func frac(k, n int) string { return fmt.Sprintf("%d/%d (%s)", k, n, pct(k, n)) }

func pct(k, n int) string {
	if n == 0 {
		return "—"
	}
	r := 100 * float64(k) / float64(n)
	if r == math.Trunc(r) {
		return fmt.Sprintf("%.0f%%", r)
	}
	return fmt.Sprintf("%.1f%%", r)
}

// judgeHeavy: corrupted+silent is at least half the runs.
func judgeHeavy(cs []cell) judgement {
	if j, ok := unknown(cs); ok {
		return j
	}
	c := cs[0]
	k, n := bad(c.Cell), c.n()
	j := judgement{measured: frac(k, n)}
	if 2*k >= n {
		j.verdict, j.reason = Pass, fmt.Sprintf("corrupted+silent %s ≥ 50%%", pct(k, n))
	} else {
		j.verdict, j.reason = Fail, fmt.Sprintf("corrupted+silent %s < 50%%: the model's storm is not sharp here", pct(k, n))
	}
	return j
}

// judgeClean: no cell has a corrupted, silent or gap run. A dirty cell
// fails the claim even when another cell measured nothing.
func judgeClean(cs []cell) judgement {
	k, n, cells := 0, 0, 0
	var dirty []string
	for _, c := range cs {
		if c.Cell == nil {
			continue
		}
		// A dirty run is evidence even in a cell with too few decided
		// runs to show it clean.
		b := c.Corrupted + c.Silent + c.Gap
		if b > 0 {
			dirty = append(dirty, fmt.Sprintf("%s: %d corrupted, %d silent, %d gap", c.key.Condition, c.Corrupted, c.Silent, c.Gap))
		}
		if c.unmeasured() != "" {
			continue
		}
		cells++
		k, n = k+b, n+c.n()
	}
	j := judgement{measured: fmt.Sprintf("%d/%d over %d of %d cells", k, n, cells, len(cs))}
	switch cells {
	case 0:
		j.measured = "not measured"
	case len(cs):
		j.measured = fmt.Sprintf("%d/%d over %d cells", k, n, cells)
	}
	switch u, unmeasured := unknown(cs); {
	case dirty != nil:
		j.verdict, j.reason = Fail, "a dirty control means the harness is broken: "+strings.Join(dirty, "; ")
	case unmeasured:
		j.verdict, j.reason = Unknown, u.reason
	default:
		j.verdict, j.reason = Pass, "0 in every condition"
	}
	return j
}

// judgeCut: cell 1 cuts cell 0's rate of m by at least Factor (and, with
// silentZero, has no silent run).
func judgeCut(m metric, name string, silentZero bool) func([]cell) judgement {
	return func(cs []cell) judgement {
		if j, ok := unknown(cs); ok {
			return j
		}
		base, fix := cs[0], cs[1]
		bk, bn, fk, fn := m(base.Cell), base.n(), m(fix.Cell), fix.n()
		j := judgement{measured: fmt.Sprintf("%s → %s", frac(bk, bn), frac(fk, fn))}
		if bk > 0 {
			j.measured += " " + cutBy(bk, bn, fk, fn)
		}
		if silentZero {
			j.measured += fmt.Sprintf("; %s silent %d", fix.key.Condition, fix.Silent)
		}
		if bk == 0 {
			j.verdict, j.reason = Fail, base.key.Condition+" did not corrupt"
			return j
		}
		var broken []string
		if bk*fn < Factor*fk*bn {
			broken = append(broken, fmt.Sprintf("%s cut %s only %s, needs ≥ %dx", fix.key.Condition, name, cutBy(bk, bn, fk, fn), Factor))
		}
		if silentZero && fix.Silent > 0 {
			broken = append(broken, fmt.Sprintf("%s silent %d, needs 0", fix.key.Condition, fix.Silent))
		}
		if broken != nil {
			j.verdict, j.reason = Fail, strings.Join(broken, "; ")
		} else {
			j.verdict, j.reason = Pass, fmt.Sprintf("%s cut %s %s ≥ %dx", fix.key.Condition, name, cutBy(bk, bn, fk, fn), Factor)
			if silentZero {
				j.reason += ", silent 0"
			}
		}
		if !silentZero { // say where the silent runs went, since they are not held to 0
			j.reason += fmt.Sprintf(" (%s only, as the reference counts; silent %d → %d)", name, base.Silent, fix.Silent)
		}
		return j
	}
}

// cutBy is base's rate over fix's: "(6.4x)", or "(to 0)".
func cutBy(bk, bn, fk, fn int) string {
	if fk == 0 {
		return "(to 0)"
	}
	return fmt.Sprintf("(%.1fx)", (float64(bk)/float64(bn))/(float64(fk)/float64(fn)))
}

// A direction is the way a shift would break a "not worse"/"not better"
// claim: cell 1's rate higher, or lower, than cell 0's.
type direction int

const (
	higher direction = iota
	lower
)

func (d direction) String() string {
	if d == higher {
		return "higher"
	}
	return "lower"
}

// judgeShift: cell 1's rate of m is not significantly shifted in direction
// d from cell 0's: it fails when the rate moved that way and the one-sided
// Fisher exact test gives p < Alpha, and when cell 0 (the reference side)
// has none of m: a shift from 0 proves nothing.
func judgeShift(m metric, name string, d direction) func([]cell) judgement {
	return func(cs []cell) judgement {
		if j, ok := unknown(cs); ok {
			return j
		}
		base, other := cs[0], cs[1]
		bk, bn, xk, xn := m(base.Cell), base.n(), m(other.Cell), other.n()
		if bk == 0 {
			// Both sides at 0 would pass "not worse" and "not better" on
			// nothing: the reference side must show the race first.
			return judgement{measured: fmt.Sprintf("%s → %s", frac(bk, bn), frac(xk, xn)), verdict: Fail,
				reason: fmt.Sprintf("%s did not corrupt (%s 0 of %d): there is no rate to hold %s's against", base.key.Condition, name, bn, other.key.Condition)}
		}
		var moved bool
		var p float64
		if d == higher {
			moved, p = xk*bn > bk*xn, stats.FisherGreater(xk, xn-xk, bk, bn-bk)
		} else {
			moved, p = xk*bn < bk*xn, stats.FisherGreater(bk, bn-bk, xk, xn-xk)
		}
		j := judgement{measured: fmt.Sprintf("%s → %s, p=%.3g", frac(bk, bn), frac(xk, xn), p)}
		who := fmt.Sprintf("%s's %s", other.key.Condition, name)
		switch {
		case !moved:
			j.verdict, j.reason = Pass, fmt.Sprintf("%s is not %s than %s's", who, d, base.key.Condition)
		case p < Alpha:
			j.verdict, j.reason = Fail, fmt.Sprintf("%s is significantly %s than %s's: one-sided Fisher p=%.3g < %g", who, d, base.key.Condition, p, Alpha)
		default:
			j.verdict, j.reason = Pass, fmt.Sprintf("%s is %s than %s's, but not significantly: one-sided Fisher p=%.3g ≥ %g", who, d, base.key.Condition, p, Alpha)
		}
		return j
	}
}

// judgeTarget: no corrupted, silent or gap run in any cell, and the fence
// rejected something over the cells (a fence that never rejects has told us
// nothing). A dirty cell fails the claim even when another measured nothing.
func judgeTarget(cs []cell) judgement {
	var c, s, g, n, rej, cells int
	var dirty []string
	for _, x := range cs {
		if x.Cell == nil {
			continue
		}
		if x.Corrupted+x.Silent+x.Gap > 0 { // evidence even in a cell with too few decided runs
			dirty = append(dirty, fmt.Sprintf("%s: %d corrupted, %d silent, %d gap", x.key.Scenario, x.Corrupted, x.Silent, x.Gap))
		}
		if x.unmeasured() != "" {
			continue
		}
		cells++
		c, s, g, n, rej = c+x.Corrupted, s+x.Silent, g+x.Gap, n+x.n(), rej+x.Rejections
	}
	j := judgement{measured: fmt.Sprintf("%d corrupted, %d silent, %d gap of %d runs; %d rejections", c, s, g, n, rej)}
	if cells == 0 {
		j.measured = "not measured"
	}
	switch u, unmeasured := unknown(cs); {
	case dirty != nil:
		j.verdict, j.reason = Fail, "the target is not clean: "+strings.Join(dirty, "; ")
	case unmeasured:
		j.verdict, j.reason = Unknown, u.reason
	case rej == 0:
		j.verdict, j.reason = Fail, "the fence never rejected a write: a fenced condition that never rejects has told us nothing"
	default:
		j.verdict, j.reason = Pass, fmt.Sprintf("clean, and the fence rejected %d writes", rej)
	}
	return j
}
