package fidelity

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/stormctl/stormctl/reports"
)

// The scenarios the claims read, in the order their cells run.
const (
	StepStorm = "step-storm"
	HookStorm = "hook-storm"
	Control   = "control"
)

// The conditions the claims read, in the order their cells run.
const (
	Main      = "main"
	Callsite  = "callsite"
	Seq       = "seq"
	TailFence = "tail-fence"
	Target    = "seq+callsite+ordered"
)

// Postgres is the world the seed's phase A-C numbers were measured on; the
// claims resting on them hold there only.
const Postgres = "postgres"

// Factor is how much a fix must cut a rate by, in the "cuts by" claims.
const Factor = 5

// Alpha is the one-sided significance level of the "not worse" and "not
// better" claims.
const Alpha = reports.Alpha

// Verdict is a claim's judgement on one world. **contract** (fidelity.json)
type Verdict string

// The three verdicts.
const (
	Pass    Verdict = "pass"
	Fail    Verdict = "fail"
	Unknown Verdict = "unknown" // a cell the claim reads measured nothing
)

// Result is one claim judged on one world. **contract** (fidelity.json)
type Result struct {
	World string `json:"world"`
	// Claim is the claim's id, Text what it says.
	Claim string `json:"claim"`
	Text  string `json:"text"`
	// Reference is the published number the claim rests on, with its
	// source; Measured is stormctl's own, side by side.
	Reference string  `json:"reference"`
	Measured  string  `json:"measured"`
	Verdict   Verdict `json:"verdict"`
	// Reason says why the verdict is what it is.
	Reason string `json:"reason"`
	// Note says what else a reader should know: infra or stuck runs in
	// the claim's cells (judged anyway).
	Note string `json:"note,omitempty"`
}

// Cell is a scenario and condition a claim reads, on the world it is
// judged on.
type Cell struct{ Scenario, Condition string }

// Claim is one ordering claim: what the real engine was measured to do,
// which cells show it, and how stormctl's numbers are judged against it.
type Claim struct {
	ID   string
	Text string
	// Worlds are the worlds the claim holds on; nil: every world.
	Worlds []string
	Cells  []Cell
	// references is the published number per world; "" is every world's.
	references map[string]string
	judge      func(cs []cell) judgement
}

// AppliesTo says whether the claim is judged on world.
func (c Claim) AppliesTo(world string) bool {
	return c.Worlds == nil || slices.Contains(c.Worlds, world)
}

// Reference returns the published numbers the claim rests on, for world.
func (c Claim) Reference(world string) string {
	if r, ok := c.references[world]; ok {
		return r
	}
	return c.references[""]
}

// Claims returns the claim table, in the order results are reported.
// Sources: DOMAIN.md ("Reference numbers", "Measured on their CI") and the
// seed's phase A-C storm (24 attempts per cell).
func Claims() []Claim {
	controls := make([]Cell, 0, len(Conditions()))
	for _, cond := range Conditions() {
		controls = append(controls, Cell{Control, cond})
	}
	return []Claim{
		{
			ID: "main-step-corrupted", Text: "main step-storm is heavily corrupted: corrupted+silent ≥ 50% of runs",
			Cells: []Cell{{StepStorm, Main}},
			references: map[string]string{"": "583/600 CI",
				"local": "583/600 CI; 24/24 seed (local)", Postgres: "583/600 CI; 20/24 seed (postgres)"},
			judge: judgeHeavy,
		},
		{
			ID: "control-clean", Text: "control is clean: corrupted+silent+gap = 0 in every condition",
			Cells: controls, references: map[string]string{"": "0/200 CI"}, judge: judgeClean,
		},
		{
			ID: "callsite-step", Text: "callsite cuts main's step-storm corrupted+silent ≥ 5x; callsite silent = 0",
			Cells:      []Cell{{StepStorm, Main}, {StepStorm, Callsite}},
			references: map[string]string{"": "554 → 87 of 600 CI (6.4x)"}, judge: judgeCut(bad, "corrupted+silent", true),
		},
		{
			ID: "callsite-hook", Text: "callsite cuts main's hook-storm corrupted+silent ≥ 5x; callsite silent = 0",
			Cells:      []Cell{{HookStorm, Main}, {HookStorm, Callsite}},
			references: map[string]string{"": "177 → 8 of 600 CI (22x)"}, judge: judgeCut(bad, "corrupted+silent", true),
		},
		{
			ID: "seq-step", Text: "seq cuts main's step-storm corrupted ≥ 5x", Worlds: []string{Postgres},
			Cells:      []Cell{{StepStorm, Main}, {StepStorm, Seq}},
			references: map[string]string{"": "20 → 2 of 24 seed (postgres)"}, judge: judgeCut(corrupted, "corrupted", false),
		},
		{
			ID: "seq-hook-not-worse", Text: "seq's hook-storm corrupted is not worse than main's", Worlds: []string{Postgres},
			Cells:      []Cell{{HookStorm, Main}, {HookStorm, Seq}},
			references: map[string]string{"": "5 → 0 of 24 seed (postgres)"}, judge: judgeShift(corrupted, "corrupted", higher),
		},
		{
			ID: "tail-fence-hook-not-better", Text: "tail-fence's hook-storm corrupted+silent is not better than main's",
			Cells:      []Cell{{HookStorm, Main}, {HookStorm, TailFence}},
			references: map[string]string{"": "177 → 252 of 600 CI"}, judge: judgeShift(bad, "corrupted+silent", lower),
		},
		{
			ID: "target-clean", Text: "seq+callsite+ordered: 0 corrupted, 0 silent, 0 gap; rejections > 0",
			Cells:      []Cell{{StepStorm, Target}, {HookStorm, Target}, {Control, Target}},
			references: map[string]string{"": "0 bad, fence fires (the seed's target)"}, judge: judgeTarget,
		},
	}
}

// Scenarios returns the scenarios the claims read, in run order.
func Scenarios() []string { return []string{StepStorm, HookStorm, Control} }

// Conditions returns the conditions the claims read, in run order.
func Conditions() []string { return []string{Main, Callsite, Seq, TailFence, Target} }

// CellsFor returns the cells the claims judged on world read, each once,
// in scenario then condition order: the reference cells a fidelity storm
// of that world runs.
func CellsFor(world string) []reports.CellKey {
	need := map[Cell]bool{}
	for _, c := range Claims() {
		if c.AppliesTo(world) {
			for _, cl := range c.Cells {
				need[cl] = true
			}
		}
	}
	var out []reports.CellKey
	for _, s := range Scenarios() {
		for _, cond := range Conditions() {
			if need[Cell{s, cond}] {
				out = append(out, reports.CellKey{World: world, Scenario: s, Condition: cond})
			}
		}
	}
	return out
}

// Evaluate judges every claim that applies to each of worlds on the
// summary's cells; with no worlds given, on the worlds of the summary's
// cells, in the order they first appear. A world the summary has no cells
// of is judged too: every claim unknown.
func Evaluate(s *reports.Summary, worlds ...string) []Result {
	if len(worlds) == 0 {
		for _, c := range s.Cells {
			if !slices.Contains(worlds, c.World) {
				worlds = append(worlds, c.World)
			}
		}
	}
	var out []Result
	for _, w := range worlds {
		for _, cl := range Claims() {
			if !cl.AppliesTo(w) {
				continue
			}
			cs := make([]cell, len(cl.Cells))
			for i, x := range cl.Cells {
				k := reports.CellKey{World: w, Scenario: x.Scenario, Condition: x.Condition}
				cs[i] = cell{key: k, Cell: s.Cell(k)}
			}
			j := cl.judge(cs)
			out = append(out, Result{World: w, Claim: cl.ID, Text: cl.Text, Reference: cl.Reference(w),
				Measured: j.measured, Verdict: j.verdict, Reason: j.reason, Note: note(cs)})
		}
	}
	return out
}

// judgement is what a judge makes of a claim's cells.
type judgement struct {
	measured string
	verdict  Verdict
	reason   string
}

// cell is a claim's cell on one world: its key, and its summary row (nil
// when the summary has none).
type cell struct {
	key reports.CellKey
	*reports.Cell
}

// n is the runs that measured something: runs less infra.
func (c cell) n() int {
	if c.Cell == nil {
		return 0
	}
	return c.Runs - c.Infra
}

// unmeasured says why the cell measured nothing, or "".
func (c cell) unmeasured() string {
	switch {
	case c.Cell == nil:
		return c.key.String() + " is not in the storm"
	case c.Runs == 0:
		return c.key.String() + " has no runs (interrupted?)"
	case c.n() == 0:
		return fmt.Sprintf("%s: all %d runs were infra", c.key, c.Runs)
	}
	return ""
}

// unknown is the judgement of a claim some of whose cells measured
// nothing, or ok false when all of them measured something.
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

// note tells of infra and stuck runs among the claim's cells.
func note(cs []cell) string {
	infra, stuck := 0, 0
	for _, c := range cs {
		if c.Cell != nil {
			infra += c.Infra
			stuck += c.Stuck
		}
	}
	var had, how []string
	if infra > 0 {
		had = append(had, plural(infra, "infra run"))
		how = append(how, "infra runs are left out of n")
	}
	if stuck > 0 {
		had = append(had, plural(stuck, "stuck run"))
		how = append(how, "stuck runs count as not corrupted")
	}
	if had == nil {
		return ""
	}
	return fmt.Sprintf("judged with %s in its cells: %s", strings.Join(had, " and "), strings.Join(how, ", "))
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
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
		if c.unmeasured() != "" {
			continue
		}
		cells++
		b := c.Corrupted + c.Silent + c.Gap
		k, n = k+b, n+c.n()
		if b > 0 {
			dirty = append(dirty, fmt.Sprintf("%s: %d corrupted, %d silent, %d gap", c.key.Condition, c.Corrupted, c.Silent, c.Gap))
		}
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
// d from cell 0's: it fails only when the rate moved that way and the
// one-sided Fisher exact test gives p < Alpha.
func judgeShift(m metric, name string, d direction) func([]cell) judgement {
	return func(cs []cell) judgement {
		if j, ok := unknown(cs); ok {
			return j
		}
		base, other := cs[0], cs[1]
		bk, bn, xk, xn := m(base.Cell), base.n(), m(other.Cell), other.n()
		var moved bool
		var p float64
		if d == higher {
			moved, p = xk*bn > bk*xn, reports.FisherGreater(xk, xn-xk, bk, bn-bk)
		} else {
			moved, p = xk*bn < bk*xn, reports.FisherGreater(bk, bn-bk, xk, xn-xk)
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
		if x.unmeasured() != "" {
			continue
		}
		cells++
		c, s, g, n, rej = c+x.Corrupted, s+x.Silent, g+x.Gap, n+x.n(), rej+x.Rejections
		if x.Corrupted+x.Silent+x.Gap > 0 {
			dirty = append(dirty, fmt.Sprintf("%s: %d corrupted, %d silent, %d gap", x.key.Scenario, x.Corrupted, x.Silent, x.Gap))
		}
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
