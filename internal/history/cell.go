package history

import "regexp"

// CellKey names one cell of the matrix world x scenario x condition: the
// runs of one scenario under one condition on one world.
type CellKey struct {
	World     string `json:"world"`
	Scenario  string `json:"scenario"`
	Condition string `json:"condition"`
}

// NewCellKey returns the key of the cell of world, scenario and condition.
func NewCellKey(world, scenario, condition string) CellKey {
	return CellKey{World: world, Scenario: scenario, Condition: condition}
}

// String is the cell as tables and messages name it:
// "world/scenario/condition".
func (k CellKey) String() string { return k.World + "/" + k.Scenario + "/" + k.Condition }

var unsafeName = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

// Dir is the cell's directory name (a storm's events/<dir>, a world's
// namespace under the storm's temp dir): world, scenario and condition
// joined by "_", every run of other characters than letters, digits, ".",
// "_" and "-" replaced by one "-" (a condition's "+" and "/" among them).
func (k CellKey) Dir() string {
	return unsafeName.ReplaceAllString(k.World+"_"+k.Scenario+"_"+k.Condition, "-")
}
