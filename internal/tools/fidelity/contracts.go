package fidelity

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/stormctl/stormctl/reports"
)

// Contract is an ordering contract the model has a condition for and a
// published runtime may carry: the spec version core stamps on a run of it
// (run_created's specVersion; 0 when no spec names it) and the model's
// condition of it. **contract** (fidelity.json's contracts)
type Contract struct {
	Name      string `json:"name"`
	Spec      int    `json:"spec,omitempty"`
	Condition string `json:"condition"`
	// Published says which installable packages carry it, as checked on
	// the registry (DOMAIN.md's upstream state).
	Published string `json:"published"`
}

// Contracts returns the contracts fidelity has a claim for, oldest first.
func Contracts() []Contract {
	return []Contract{
		{Name: "legacy", Spec: 3, Condition: Main,
			Published: "stable channel: @workflow/core 4.8.9 stamps spec 3"},
		{Name: "slot ids, sealed log", Spec: 7, Condition: "slot+noop",
			Published: "beta channel: @workflow/core 5.0.0-beta.55 stamps spec 7"},
		{Name: "single orchestrator", Spec: 9, Condition: "single-orchestrator",
			Published: "none: upstream source only, not on the registry (checked 2026-12-06)"},
		{Name: "event_{seq} (the seed's design)", Condition: Target,
			Published: "none: a design, no package carries it"},
	}
}

// ChannelContract returns the contract whose condition is preset when
// the devkit channel's packages carry it (the beta channel's core stamps
// spec 7: slot+noop), so that a reference check may run the model under
// it against the real runtime on those packages; false for main (always
// allowed) and for any other preset.
func ChannelContract(preset, channel string) (Contract, bool) {
	spec := 3
	if channel == "beta" {
		spec = 7
	}
	for _, c := range Contracts() {
		if c.Condition == preset && c.Spec == spec && preset != Main {
			return c, true
		}
	}
	return Contract{}, false
}

// ContractClaim is one contract's claim: the model's condition of it
// orders runs as the real runtime does on packages of that contract, at
// this size: no figure of a world whose real runs all ran the contract
// has the two sides' intervals separated. Pass needs such figures
// compared; it is unknown while no package carrying the contract ran here
// (none is installable, or this check ran another), or the model ran
// another condition. **contract** (fidelity.json's contracts)
type ContractClaim struct {
	Contract Contract `json:"contract"`
	Verdict  Verdict  `json:"verdict"`
	Evidence string   `json:"evidence"`
}

// JudgeContracts sets the report's contract claims from its figures, the
// model's condition (ModelCondition, "" for main) and the spec versions
// the real side's runs were stamped with, per world (runs per spec).
func (r *ReferenceReport) JudgeContracts(realSpecs map[string]map[int]int) {
	modelCond := r.ModelCondition
	if modelCond == "" {
		modelCond = Main
	}
	r.Contracts = nil
	for _, c := range Contracts() {
		r.Contracts = append(r.Contracts, judgeContract(c, r.Figures, modelCond, realSpecs))
	}
}

func judgeContract(c Contract, figs []Figure, modelCond string, realSpecs map[string]map[int]int) ContractClaim {
	claim := ContractClaim{Contract: c, Verdict: Unknown}
	var worlds []string // the worlds whose real runs all ran spec c.Spec
	for _, w := range slices.Sorted(maps.Keys(realSpecs)) {
		if specs := realSpecs[w]; c.Spec != 0 && len(specs) == 1 && specs[c.Spec] > 0 {
			worlds = append(worlds, w)
		}
	}
	switch {
	case c.Spec == 0:
		claim.Evidence = "no spec version names it, so no real run can be told to carry it (" + c.Published + ")"
		return claim
	case len(worlds) == 0:
		claim.Evidence = fmt.Sprintf("no real run here ran spec %d (real runs: %s); installable: %s", c.Spec, specsText(realSpecs), c.Published)
		return claim
	case modelCond != c.Condition:
		claim.Evidence = fmt.Sprintf("the model ran %s, not %s: run fidelity --reference devkit --model-condition %s on a channel of spec %d", modelCond, c.Condition, c.Condition, c.Spec)
		return claim
	}
	var compared, separated, undecided []string
	off, measured := 0, 0
	for _, f := range figs {
		if !slices.Contains(worlds, f.World) {
			continue
		}
		if f.Name == outcomeFigure && f.Gap == NoMeasure {
			undecided = append(undecided, f.World+" "+f.Scenario)
		}
		if f.Gap != Within && f.Gap != Off && f.Gap != BothZero {
			continue
		}
		if f.Gap != BothZero {
			measured++
		}
		if f.Gap == Off {
			off++
		}
		compared = append(compared, f.World+" "+f.Scenario+" "+f.Name)
		if f.Separated {
			separated = append(separated, f.World+" "+f.Scenario+" "+f.Name)
		}
	}
	switch {
	case len(undecided) > 0:
		claim.Evidence = fmt.Sprintf("a side decided no run of %s: its outcome rate is no evidence", strings.Join(undecided, ", "))
	case measured == 0:
		claim.Evidence = fmt.Sprintf("no figure of %s was measured above 0 on both sides", strings.Join(worlds, ", "))
	case len(separated) > 0:
		claim.Verdict = Fail
		claim.Evidence = fmt.Sprintf("%d of %d figures on %s have the sides' intervals separated: %s", len(separated), len(compared), strings.Join(worlds, ", "), strings.Join(separated, "; "))
	default:
		claim.Verdict = Pass
		claim.Evidence = fmt.Sprintf("%d figures on %s compared, none with the sides' intervals separated", len(compared), strings.Join(worlds, ", "))
		if off > 0 {
			claim.Evidence += fmt.Sprintf(" (%d off by more than %gx: seen, not established at this size)", off, OffFactor)
		}
	}
	return claim
}

// specsText names the spec versions the real runs of each world were
// stamped with: "devkit-local spec 7 x12; devkit-postgres spec 5 x12", or
// "none recorded".
func specsText(realSpecs map[string]map[int]int) string {
	var parts []string
	for _, w := range slices.Sorted(maps.Keys(realSpecs)) {
		var ss []string
		for _, v := range slices.Sorted(maps.Keys(realSpecs[w])) {
			ss = append(ss, fmt.Sprintf("spec %d x%d", v, realSpecs[w][v]))
		}
		if len(ss) > 0 {
			parts = append(parts, w+" "+strings.Join(ss, ", "))
		}
	}
	if len(parts) == 0 {
		return "none recorded"
	}
	return strings.Join(parts, "; ")
}

// outcomeFigure is the figure a contract claim cannot pass without: a
// cell whose outcome rate a side could not measure (every run stuck,
// failed or infra) decided nothing, whatever its other figures say.
const outcomeFigure = "corrupted+silent of decided runs"

// RealSpecs gathers the spec versions of a summary's cells, per world.
func RealSpecs(cells []*reports.Cell) map[string]map[int]int {
	out := map[string]map[int]int{}
	for _, c := range cells {
		for v, n := range c.SpecVersions {
			if out[c.World] == nil {
				out[c.World] = map[int]int{}
			}
			out[c.World][v] += n
		}
	}
	return out
}
