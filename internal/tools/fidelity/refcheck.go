package fidelity

import (
	"context"
	"path/filepath"

	"github.com/stormctl/stormctl/internal/engines/builtinengines"
	"github.com/stormctl/stormctl/internal/history"
	"github.com/stormctl/stormctl/internal/storm"
	"github.com/stormctl/stormctl/internal/storm/stormdir"
	"github.com/stormctl/stormctl/reports"
)

// DefaultReferenceRuns is --reference devkit's runs per cell: a real run
// takes seconds of Node (docs/results/2026-12-04-devkit-engine.md measured
// 12 runs per cell of these scenarios on two worlds in about 15 minutes on
// 2 cores).
const DefaultReferenceRuns = 12

// Sides are the directory names, under Out/<world>/, of a reference
// check's two storms.
const (
	ModelSide = "model"
	RealSide  = "real"
)

// ReferenceConfigs are the two storms of world in a reference check: the
// model at modelLatency (its default profile unless told) under
// modelCondition (a --condition item: main, or main with a model knob
// moved, such as main/writes=parallel) and the real runtime of channel at
// --latency none (its windows emerge from the real stores) under main,
// both over ReferenceScenarios, seed stormdir.DefaultSeed, into
// Out/<world>/model and Out/<world>/real.
//
// modelWorld, when not "", is the world the model side runs on instead of
// world (a contract's condition whose scheme the package's world does not
// serve, such as slot+noop, runs on the model's own world of that
// storage); CheckReference compares its cells as world's.
func (s Storms) ReferenceConfigs(world, modelWorld, modelLatency, modelCondition, channel string) (model, real stormdir.Config) {
	base := stormdir.Config{
		Worlds: []string{world}, Scenarios: ReferenceScenarios(), Conditions: []string{Main},
		Seed: stormdir.DefaultSeed,
	}
	model, real = base, base
	model.Conditions = []string{modelCondition}
	if modelWorld != "" {
		model.Worlds = []string{modelWorld}
	}
	model.Engine, model.Latency, model.Out = builtinengines.Engines().Model(), modelLatency, filepath.Join(s.Out, world, ModelSide)
	real.Engine, real.Latency, real.DevkitChannel, real.Out = builtinengines.Engines().Published(), "none", channel, filepath.Join(s.Out, world, RealSide)
	model, real = model.Defaults(), real.Defaults()
	for _, c := range []*stormdir.Config{&model, &real} {
		// Set after Defaults, as Config does.
		c.Runs, c.TimeScale, c.Timeout, c.RunsInFlight = s.Runs, s.TimeScale, s.Timeout, s.RunsInFlight
	}
	return model, real
}

// CheckReference runs each world's two storms (plans in pairs: the
// model's, then the real runtime's, as ReferenceConfigs makes them; see
// RunAll for failures and interrupts) and compares every figure of theirs:
// the model's cells of its plan's one condition against the real main's.
func CheckReference(ctx context.Context, plans []*storm.Plan, run func(ctx context.Context, i int, p *storm.Plan) (*reports.Summary, error), failed func(i int, err error)) (*ReferenceReport, error) {
	stormed, err := RunAll(ctx, plans, run, failed)
	storms := map[string]EngineStorms{}
	var pairs []Pair
	var realCells []*reports.Cell
	// Every model plan is of the one condition the check was given
	// (ReferenceConfigs): its first pair's says which.
	modelCondition := Main
	if len(plans) >= 2 {
		modelCondition = plans[0].Config.Conditions[0]
	}
	for i := 0; i+1 < len(plans); i += 2 {
		world := plans[i+1].Config.Worlds[0]
		storms[world] = EngineStorms{Model: plans[i].Config.Out, Real: plans[i+1].Config.Out}
		model := AsWorld(stormed.Summaries[i], plans[i].Config.Worlds[0], world)
		pairs = append(pairs, PairsOf(model, stormed.Summaries[i+1], modelCondition, []string{world}, ReferenceScenarios())...)
		if s := stormed.Summaries[i+1]; s != nil {
			realCells = append(realCells, s.Cells...)
		}
	}
	rep := NewReferenceReport(Compare(pairs), storms)
	rep.SetModelCondition(modelCondition)
	rep.JudgeContracts(RealSpecs(realCells))
	rep.Interrupted = stormed.Interrupted
	return rep, err
}

// AsWorld returns s with its cells of world from relabelled as world to
// (the model side of a check whose model ran on another world than the
// real side); s itself when they are one world or s is nil.
func AsWorld(s *reports.Summary, from, to string) *reports.Summary {
	if s == nil || from == to {
		return s
	}
	out := *s
	out.Cells = nil
	for _, c := range s.Cells {
		cell := *c
		if c.World == from {
			cell.CellKey = history.NewCellKey(to, c.Scenario, c.Condition)
		}
		out.Cells = append(out.Cells, &cell)
	}
	return &out
}

// DevkitWorlds are the worlds --reference devkit storms by default: the
// real world packages the real runtime runs on.
func DevkitWorlds() []string { return []string{"devkit-local", "devkit-postgres"} }
