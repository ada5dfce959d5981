package reports

// Measured is the number of a cell's runs that measured something: its runs
// less its infra runs (an unreachable store measured nothing), the
// denominator of every rate compare, gate and fidelity compute.
func Measured(c *Cell) int { return c.Runs - c.Infra }
