package fidelity

import (
	"slices"

	"github.com/stormctl/stormctl/internal/history"
	"github.com/stormctl/stormctl/reports"
	"github.com/stormctl/stormctl/reports/gate"
	"github.com/stormctl/stormctl/reports/stats"
)

// The scenarios the claims read, in the order their cells run.
const (
	StepStorm = "step-storm"
	HookStorm = "hook-storm"
	Control   = gate.ControlScenario
)

// The conditions the claims read, in the order their cells run.
const (
	Main      = "main"
	Callsite  = "callsite"
	Seq       = "seq"
	TailFence = "tail-fence"
	Target    = "seq+callsite+ordered"
)

// Postgres and Local are the worlds the seed's phase A-C numbers were
// measured on (world-postgres, world-local); the claims resting on them
// hold on their own world only.
const (
	Postgres = "postgres"
	Local    = "local"
)

// Vercel is the world fidelity storms at a run count of its own
// (DefaultVercelRuns): a vercel run takes several times a local one.
const Vercel = "vercel"

// DefaultVercelRuns is fidelity's runs per cell on the vercel world: its
// 12 cells x 18 = 216 runs, the size of the vercel storm measured at 7m42s
// on 2 cores, 8 in flight (docs/results/2026-12-02-vercel-world.md); a
// 12-run probe of these cells averaged 18 s a run, which also puts 216
// runs at about 8 minutes: within the 10 minutes a check should take, with
// room for a slower machine.
const DefaultVercelRuns = 18

// Worlds are the worlds fidelity storms and judges; DefaultWorlds those it
// does when none is named (they need no network and start in seconds;
// Vercel is opt-in).
func Worlds() []string { return []string{Local, Postgres, Vercel} }

// DefaultWorlds are the worlds fidelity storms and judges by default.
func DefaultWorlds() []string { return []string{Local, Postgres} }

// runsOn is the runs per cell of world's storm: vercelRuns on Vercel, runs
// on every other world.
func runsOn(world string, runs, vercelRuns int) int {
	if world == Vercel {
		return vercelRuns
	}
	return runs
}

// Factor is how much a fix must cut a rate by, in the "cuts by" claims.
const Factor = 5

// Alpha is the one-sided significance level of the "not worse" and "not
// better" claims.
const Alpha = stats.Alpha

// Verdict is a claim's judgement on one world. **contract** (fidelity.json)
type Verdict string

// The three verdicts.
const (
	Pass    Verdict = "pass"
	Fail    Verdict = "fail"
	Unknown Verdict = "unknown" // a cell the claim reads is no evidence: missing, or too few decided runs
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
	// Note says what else a reader should know: runs that decided nothing
	// (infra, stuck, failed) in the claim's cells, left out of the rates.
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
			// On world-local seq barely moved step-storm (24 → 23 of 24):
			// its residue there is the wake-order class, which a dense log
			// does not fix. A model whose seq clears local step-storm
			// disagrees with the real engine.
			ID: "seq-step-local-not-better", Text: "local: seq's step-storm corrupted is not better than main's (seq does not fix wake-order skew)",
			Worlds:     []string{Local},
			Cells:      []Cell{{StepStorm, Main}, {StepStorm, Seq}},
			references: map[string]string{"": "24 → 23 of 24 seed (local)"}, judge: judgeShift(corrupted, "corrupted", lower),
		},
		{
			ID: "seq-hook-local-not-worse", Text: "local: seq's hook-storm corrupted is not worse than main's", Worlds: []string{Local},
			Cells:      []Cell{{HookStorm, Main}, {HookStorm, Seq}},
			references: map[string]string{"": "18 → 9 of 24 seed (local)"}, judge: judgeShift(corrupted, "corrupted", higher),
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
func CellsFor(world string) []history.CellKey {
	need := map[Cell]bool{}
	for _, c := range Claims() {
		if c.AppliesTo(world) {
			for _, cl := range c.Cells {
				need[cl] = true
			}
		}
	}
	var out []history.CellKey
	for _, s := range Scenarios() {
		for _, cond := range Conditions() {
			if need[Cell{s, cond}] {
				out = append(out, history.NewCellKey(world, s, cond))
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
		worlds = s.Worlds()
	}
	var out []Result
	for _, w := range worlds {
		for _, cl := range Claims() {
			if !cl.AppliesTo(w) {
				continue
			}
			cs := make([]cell, len(cl.Cells))
			for i, x := range cl.Cells {
				k := history.NewCellKey(w, x.Scenario, x.Condition)
				cs[i] = cell{key: k, Cell: s.Cell(k)}
			}
			j := cl.judge(cs)
			out = append(out, Result{World: w, Claim: cl.ID, Text: cl.Text, Reference: cl.Reference(w),
				Measured: j.measured, Verdict: j.verdict, Reason: j.reason, Note: note(cs)})
		}
	}
	return out
}
