package reports

import (
	"fmt"
	"math"
	"strings"

	"github.com/stormctl/stormctl/internal/history"
)

// Measured is the number of a cell's runs that measured something: its runs
// less its infra runs (an unreachable store measured nothing), the
// denominator of compare's rates.
func Measured(c *Cell) int { return c.Runs - c.Infra }

// Decided is the number of the cell's decided runs (Outcome.Decided): the
// denominator of gate's evidence rule and of fidelity's rates.
func (c *Cell) Decided() int {
	n := 0
	for _, o := range history.Outcomes() {
		if o.Decided() {
			n += c.Count(o)
		}
	}
	return n
}

// DefaultMinDecided is the share of a cell's runs that must be decided for
// the cell to count as evidence (gate --min-decided, fidelity).
const DefaultMinDecided = 0.8

// MinDecided is the fewest decided runs that make a cell of runs runs
// evidence at share rate: ⌈rate × runs⌉, and at least 1 (nothing is never
// evidence).
func MinDecided(runs int, rate float64) int {
	// The small slack keeps 0.8 × 10 at 8, not 9 (0.8 is not exact in
	// binary).
	return max(1, int(math.Ceil(rate*float64(runs)-1e-9)))
}

// Evidenced reports whether the cell has enough decided runs to count as
// evidence at share rate: at least MinDecided(c.Runs, rate).
func (c *Cell) Evidenced(rate float64) bool { return c.Decided() >= MinDecided(c.Runs, rate) }

// Evidence says how much of the cell decided something, for a line naming
// a cell without enough: "3 decided runs of 24 (15 stuck, 6 infra); at
// least 20 needed".
func (c *Cell) Evidence(rate float64) string {
	var undecided []string
	for _, o := range history.Outcomes() {
		if n := c.Count(o); n > 0 && !o.Decided() {
			undecided = append(undecided, fmt.Sprintf("%d %s", n, o))
		}
	}
	s := fmt.Sprintf("%d decided runs of %d", c.Decided(), c.Runs)
	if undecided != nil {
		s += " (" + strings.Join(undecided, ", ") + ")"
	}
	return s + fmt.Sprintf("; at least %d needed", MinDecided(c.Runs, rate))
}
