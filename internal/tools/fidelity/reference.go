package fidelity

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/stormctl/stormctl/internal/eventlog"
	"github.com/stormctl/stormctl/internal/history"
	"github.com/stormctl/stormctl/reports"
	"github.com/stormctl/stormctl/reports/stats"
)

// This file compares the model with the real engine (fidelity --reference
// devkit): the same scenarios stormed by both engines on the same world and
// machine, and every regime figure of each side by side, with intervals.
// Nothing here judges a claim: the figures are measurements, and a figure
// the model is off on by more than OffFactor is named, with whether the
// two sides' intervals separate.

// OffFactor is how far apart (either way) the model's and the real
// engine's figures must be for the figure to be named off.
const OffFactor = 2.0

// ReferenceScenarios are the scenarios fidelity --reference devkit storms
// with both engines.
func ReferenceScenarios() []string { return []string{StepStorm, HookStorm, Control} }

// Gap says how a figure's two sides compare. **contract** (fidelity.json)
type Gap string

// The gaps.
const (
	Within    Gap = "within"     // the sides are within OffFactor of each other
	Off       Gap = "off"        // more than OffFactor apart
	BothZero  Gap = "both-zero"  // both sides measured 0
	NoMeasure Gap = "unknown"    // a side has nothing to measure it on
	Shown     Gap = "shown-only" // a figure shown side by side, not compared (the class mix; a window one side has none of, or one under the clock's resolution)
)

// Side is one engine's value of a figure: Value, and for a proportion
// K of N with its Wilson interval [Lo, Hi] at 95%. Text is as printed.
type Side struct {
	Value float64 `json:"value"`
	K     int     `json:"k,omitempty"`
	N     int     `json:"n"`
	Lo    float64 `json:"lo,omitempty"`
	Hi    float64 `json:"hi,omitempty"`
	Text  string  `json:"text"`
}

// Figure is one regime figure of one world and scenario under both
// engines. **contract** (fidelity.json's figures)
type Figure struct {
	World    string `json:"world"`
	Scenario string `json:"scenario"`
	Name     string `json:"figure"`
	Model    Side   `json:"model"`
	Real     Side   `json:"real"`
	// Ratio is the model's value over the real engine's; 0 when the real
	// engine's is 0 (see Gap).
	Ratio float64 `json:"ratio,omitempty"`
	Gap   Gap     `json:"gap"`
	// Separated says the two sides' intervals do not overlap: the
	// difference is established at this size, not only seen (proportions
	// only).
	Separated bool `json:"separated,omitempty"`
	// Note says what a reader must know to read the figure (runs that
	// decided nothing, a window's clock resolution).
	Note string `json:"note,omitempty"`
}

// Pair is one world and scenario's cells under the model and under the
// real engine (nil: not stormed, or no run reached it).
type Pair struct {
	World, Scenario string
	Model, Real     *reports.Cell
}

// Compare measures every figure of every pair, in the pairs' order.
func Compare(pairs []Pair) []Figure {
	var out []Figure
	for _, p := range pairs {
		out = append(out, compare(p)...)
	}
	return out
}

// proportion is a figure that is a count over a count: its numerator and
// denominator of one cell.
type proportion struct {
	name string
	of   func(c *reports.Cell) (k, n int)
	note func(model, real *reports.Cell) string
}

// proportions are the regime figures that are rates, in print order.
func proportions() []proportion {
	return []proportion{
		{outcomeFigure, func(c *reports.Cell) (int, int) { return c.Corrupted + c.Silent, c.Decided() }, undecidedNote},
		{"stuck of runs", func(c *reports.Cell) (int, int) { return c.Stuck, c.Runs }, nil},
		{"non-prefix reads of reads", func(c *reports.Cell) (int, int) { return c.NonPrefixReads, c.Reads }, nil},
		{"cursor skips of reads", func(c *reports.Cell) (int, int) { return c.CursorSkips, c.Reads }, nil},
	}
}

// mean is a figure that is a per-run mean of one count of a cell.
type mean struct {
	name string
	of   func(c *reports.Cell) int
}

// means are the regime figures that are per-run means, in print order.
func means() []mean {
	return []mean{
		{"dup creates per run (world layer)", func(c *reports.Cell) int { return c.DuplicateCreates }},
		{"invocations per run", func(c *reports.Cell) int { return c.Invocations }},
	}
}

// windowNote is the caveat of every mint-to-commit window of the real
// engine's legacy ids: a ULID carries its mint time in milliseconds.
const windowNote = "the real engine's ULID ids carry their mint time in whole milliseconds: its windows read up to 1 ms long"

func compare(p Pair) []Figure {
	fig := func(name string) Figure { return Figure{World: p.World, Scenario: p.Scenario, Name: name} }
	var out []Figure
	for _, pr := range proportions() {
		f := fig(pr.name)
		f.Model, f.Real = proportionSide(p.Model, pr.of), proportionSide(p.Real, pr.of)
		judgeGap(&f, true)
		if pr.note != nil {
			f.Note = pr.note(p.Model, p.Real)
		}
		out = append(out, f)
	}
	for _, m := range means() {
		f := fig(m.name)
		f.Model, f.Real = meanSide(p.Model, m.of), meanSide(p.Real, m.of)
		judgeGap(&f, false)
		out = append(out, f)
	}
	mix := fig("class mix of wrong and stuck runs")
	mix.Model, mix.Real = mixSide(p.Model), mixSide(p.Real)
	mix.Gap = Shown
	switch {
	case p.Model == nil || p.Real == nil:
		mix.Gap = NoMeasure
	case mix.Model.N > 0 && mix.Real.N > 0:
		mix.Note = fmt.Sprintf("total variation distance %.2f", classDistance(p.Model, p.Real))
	}
	out = append(out, mix)
	for _, t := range windowTypes(p.Model, p.Real) {
		f := fig("mint-to-commit p50 " + string(t))
		f.Model, f.Real = windowSide(p.Model, t), windowSide(p.Real, t)
		f.Note = windowNote
		switch {
		case p.Model == nil || p.Real == nil:
			f.Gap = NoMeasure
		case f.Model.N == 0 || f.Real.N == 0:
			// A type one engine writes and the other does not (or not with
			// a mint time): a difference to show, not a figure to compare.
			f.Gap, f.Note = Shown, "written (with a mint time) by one engine only"
		case f.Model.Value <= 0 || f.Real.Value <= 0:
			f.Gap, f.Note = Shown, "a p50 at or under 0: the window is under the commit clock's resolution"
		default:
			judgeGap(&f, false)
		}
		out = append(out, f)
	}
	return out
}

// undecidedNote names the runs that decided nothing on either side: they
// are left out of the rate's n.
func undecidedNote(model, real *reports.Cell) string {
	var parts []string
	for _, s := range []struct {
		name string
		c    *reports.Cell
	}{{"model", model}, {"real", real}} {
		if s.c == nil {
			continue
		}
		if left := s.c.Runs - s.c.Decided(); left > 0 {
			thin := ""
			if !s.c.Evidenced(reports.DefaultMinDecided) {
				thin = ", fewer decided than the gate's 80%: thin evidence"
			}
			parts = append(parts, fmt.Sprintf("%s: %d of %d runs decided nothing (stuck, failed, infra)%s", s.name, left, s.c.Runs, thin))
		}
	}
	return strings.Join(parts, "; ")
}

func proportionSide(c *reports.Cell, of func(*reports.Cell) (int, int)) Side {
	if c == nil {
		return Side{Text: "not measured"}
	}
	k, n := of(c)
	if n == 0 {
		return Side{Text: "n = 0"}
	}
	lo, hi := stats.Wilson(k, n, stats.Alpha)
	v := float64(k) / float64(n)
	return Side{Value: v, K: k, N: n, Lo: lo, Hi: hi,
		Text: fmt.Sprintf("%d/%d %s [%s, %s]", k, n, percent(v), percent(lo), percent(hi))}
}

func meanSide(c *reports.Cell, of func(*reports.Cell) int) Side {
	if c == nil {
		return Side{Text: "not measured"}
	}
	if c.Runs == 0 {
		return Side{Text: "n = 0"}
	}
	v := float64(of(c)) / float64(c.Runs)
	return Side{Value: v, N: c.Runs, Text: fmt.Sprintf("%.1f (%d runs)", v, c.Runs)}
}

func windowSide(c *reports.Cell, t eventlog.Type) Side {
	if c == nil {
		return Side{Text: "not measured"}
	}
	w, ok := c.Windows[t]
	if !ok || w.N == 0 {
		return Side{Text: "n = 0"}
	}
	return Side{Value: float64(w.P50), N: w.N,
		Text: fmt.Sprintf("%s (p90 %s, n %d)", duration(w.P50), duration(w.P90), w.N)}
}

// mixSide is a cell's classified runs (wrong and stuck: explain's
// classes) by class, most first: "class n, ...". A cell with wrong or
// stuck runs and no class recorded says so rather than "none".
func mixSide(c *reports.Cell) Side {
	if c == nil {
		return Side{Text: "not measured"}
	}
	n := 0
	for _, k := range c.Classes {
		n += k
	}
	switch {
	case n == 0 && c.Corrupted+c.Silent+c.Gap+c.Hole+c.Stuck > 0:
		return Side{Text: "not classified"}
	case n == 0:
		return Side{Text: "none"}
	}
	names := slices.Sorted(maps.Keys(c.Classes))
	slices.SortStableFunc(names, func(a, b string) int { return c.Classes[b] - c.Classes[a] })
	parts := make([]string, 0, len(names))
	for _, name := range names {
		parts = append(parts, fmt.Sprintf("%s %d", name, c.Classes[name]))
	}
	return Side{N: n, Text: strings.Join(parts, ", ")}
}

// classDistance is the total variation distance between two cells' class
// distributions: 0 the same mix, 1 no class in common.
func classDistance(a, b *reports.Cell) float64 {
	share := func(c *reports.Cell) map[string]float64 {
		n := 0
		for _, k := range c.Classes {
			n += k
		}
		out := map[string]float64{}
		for name, k := range c.Classes {
			out[name] = float64(k) / float64(n)
		}
		return out
	}
	sa, sb := share(a), share(b)
	d := 0.0
	for name := range sa {
		d += math.Abs(sa[name] - sb[name])
	}
	for name := range sb {
		if _, ok := sa[name]; !ok {
			d += sb[name]
		}
	}
	return d / 2
}

// windowTypes are the event types either cell has windows of, sorted.
func windowTypes(a, b *reports.Cell) []eventlog.Type {
	seen := map[eventlog.Type]bool{}
	for _, c := range []*reports.Cell{a, b} {
		if c == nil {
			continue
		}
		for t, w := range c.Windows {
			if w.N > 0 {
				seen[t] = true
			}
		}
	}
	return slices.Sorted(maps.Keys(seen))
}

// judgeGap sets a figure's ratio, gap and (for a proportion) whether the
// intervals separate.
func judgeGap(f *Figure, proportion bool) {
	m, r := f.Model, f.Real
	switch {
	case m.N == 0 || r.N == 0:
		f.Gap = NoMeasure
		return
	case m.Value == 0 && r.Value == 0:
		f.Gap = BothZero
		return
	case r.Value == 0:
		f.Gap = Off // any rate over none is off by more than any factor
	default:
		f.Ratio = m.Value / r.Value
		f.Gap = Within
		if f.Ratio > OffFactor || f.Ratio < 1/OffFactor {
			f.Gap = Off
		}
	}
	if proportion {
		f.Separated = m.Hi < r.Lo || r.Hi < m.Lo
	}
}

// PairsOf pairs the cells of a model storm's summary with a real storm's,
// per world in worlds' order and per scenario in scenarios' order; the real
// side's cell is the one of condition main (the legacy contract the real
// runtime runs), the model's the one of modelCondition (main, or main with
// a model knob moved, such as main/writes=parallel). A world and scenario
// neither side has is left out; one side only makes a pair whose figures
// are unknown.
func PairsOf(model, real *reports.Summary, modelCondition string, worlds, scenarios []string) []Pair {
	var out []Pair
	for _, w := range worlds {
		for _, s := range scenarios {
			p := Pair{World: w, Scenario: s}
			if model != nil {
				p.Model = model.Cell(history.NewCellKey(w, s, modelCondition))
			}
			if real != nil {
				p.Real = real.Cell(history.NewCellKey(w, s, Main))
			}
			if p.Model != nil || p.Real != nil {
				out = append(out, p)
			}
		}
	}
	return out
}

func percent(v float64) string { return fmt.Sprintf("%.1f%%", 100*v) }

// duration prints a window at a precision a reader can take in.
func duration(d time.Duration) string {
	switch {
	case d >= time.Second:
		return d.Round(10 * time.Millisecond).String()
	case d >= time.Millisecond:
		return d.Round(10 * time.Microsecond).String()
	}
	return d.Round(time.Microsecond).String()
}
