package cli

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"

	"github.com/stormctl/stormctl/internal/engine"
	"github.com/stormctl/stormctl/internal/engine/conditions"
	"github.com/stormctl/stormctl/internal/history"
	"github.com/stormctl/stormctl/internal/storm"
	"github.com/stormctl/stormctl/internal/storm/stormdir"
	"github.com/stormctl/stormctl/internal/tools/fidelity"
	"github.com/stormctl/stormctl/reports"
	"github.com/stormctl/stormctl/worlds"
)

// fidelityReference runs --reference devkit: per world the model's storm,
// then the real runtime's, then every figure side by side.
func fidelityReference(ctx context.Context, opts *FidelityOptions, reg *worlds.Registry, surface *worlds.Registry, logger *slog.Logger) error {
	storms := fidelity.Storms{Runs: opts.Runs, TimeScale: opts.TimeScale, Timeout: opts.Timeout,
		RunsInFlight: opts.RunsInFlight, Out: opts.Out}
	// Every plan is validated before any storm starts: a world the real
	// runtime does not run on is refused here, in one line.
	var plans []*storm.Plan
	real := reg.WithEngine(opts.Factory.Engines.Published())
	for _, w := range opts.Worlds {
		if !slices.Contains(real, w) {
			return usage("--world %s: the real runtime (--reference devkit) runs on %s only", w, strings.Join(real, ", "))
		}
		modelCfg, realCfg := storms.ReferenceConfigs(w, opts.ModelWorld, opts.ModelLatency, opts.ModelCondition, opts.DevkitChannel)
		for _, cfg := range []stormdir.Config{modelCfg, realCfg} {
			plan, err := storm.NewPlan(cfg, reg, opts.Factory.Engines)
			if err != nil {
				return &UsageError{Err: err}
			}
			plan.Endpoints = stormdir.StoreEndpoints(surface.Endpoints(), opts.Endpoints)
			plans = append(plans, plan)
		}
	}
	for _, l := range reg.Unused(opts.Endpoints, storm.Uses(plans...)) {
		logger.Warn(l)
	}
	sweepLeftovers(opts.IO, "fidelity")
	defer lessGC()()
	rep, stormErr := fidelity.CheckReference(ctx, plans, func(ctx context.Context, i int, plan *storm.Plan) (*reports.Summary, error) {
		side := "model"
		if i%2 == 1 {
			side = "real runtime"
		}
		label := fmt.Sprintf("fidelity: %s, %s (%d of %d)", plan.Config.Worlds[0], side, i+1, len(plans))
		return stormPlan(ctx, opts.IO, opts.Factory, reg, logger, plan, label)
	}, func(i int, err error) {
		fmt.Fprintf(opts.IO.ErrOut, "fidelity: %s: %s; its figures are compared on what it measured\n", plans[i].Config.Out, oneLine(err))
	})
	stormErr = stormError(stormErr)
	if rep.Interrupted {
		stormErr = ErrInterrupted
	}
	return finishReference(opts, rep, stormErr)
}

// finishReference writes fidelity.json (into --out, when there is one),
// prints the report, and returns the exit: err first, then 1 when a
// figure is unknown.
func finishReference(opts *FidelityOptions, rep *fidelity.ReferenceReport, err error) error {
	if opts.Out != "" {
		if werr := writeFidelity(opts.Out, rep); werr != nil && err == nil {
			err = werr
		}
	}
	if perr := opts.Format.Print(opts.IO.Out, rep); perr != nil {
		return perr
	}
	if err != nil {
		return err
	}
	if !rep.Evidenced() {
		return ErrGateFailed
	}
	return nil
}

// fidelityReferenceFrom compares stored storms: each cell goes to the side
// of the engine storm.json says ran it, when its condition's knobs (with or
// without an engine override) are that side's: --model-condition's on the
// model side, main's on the real side, whatever the condition was named;
// a cell met twice on one side is refused.
func fidelityReferenceFrom(opts *FidelityOptions, known []string) error {
	stored, loadErr, err := loadFrom(opts)
	if err != nil {
		return err
	}
	main, err := conditions.Parse(fidelity.Main)
	if err != nil {
		return fmt.Errorf("the main preset: %w", err)
	}
	modelCond, err := conditions.Parse(opts.ModelCondition)
	if err != nil {
		return usage("--model-condition: %w", err)
	}
	want := map[string]engine.Knobs{opts.Factory.Engines.Model(): modelCond.Knobs, opts.Factory.Engines.Published(): main.Knobs}
	want[opts.Factory.Engines.Model()] = withoutEngine(want[opts.Factory.Engines.Model()])
	sides := map[string]*reports.Summary{
		opts.Factory.Engines.Model():     {Schema: reports.SchemaVersion},
		opts.Factory.Engines.Published(): {Schema: reports.SchemaVersion},
	}
	from := map[string]map[string]string{} // world -> engine -> storm dirs
	seen := map[string]string{}            // engine + cell -> dir
	for _, st := range stored {
		dir := st.Dir
		if st.Meta == nil {
			return usage("--from %s: %s could not be read: which engine ran its cells is unknown", dir, stormdir.FileStorm)
		}
		for _, c := range st.Summary.Cells {
			cond, ok := st.Meta.Conditions[c.Condition]
			if !ok {
				continue
			}
			eng := storm.EngineOf(opts.Factory.Engines, st.Meta.Config, cond.Knobs)
			if withoutEngine(cond.Knobs) != want[eng] {
				continue // not the condition this side is compared under
			}
			key := eng + " " + c.World + " " + c.Scenario
			if prev, dup := seen[key]; dup {
				return usage("--from: the %s engine's %s %s cell is in both %s and %s: compare one of them", eng, c.World, c.Scenario, prev, dir)
			}
			seen[key] = dir
			cell := *c
			world := c.World
			if eng == opts.Factory.Engines.Model() && opts.ModelWorld != "" && world == opts.ModelWorld {
				world = opts.Worlds[0] // compared as the real side's world
			}
			cell.CellKey = history.NewCellKey(world, c.Scenario, fidelity.Main)
			sides[eng].Cells = append(sides[eng].Cells, &cell)
			if from[world] == nil {
				from[world] = map[string]string{}
			}
			from[world][eng] = joinDirs(from[world][eng], dir)
		}
	}
	ws := opts.Worlds
	if !opts.WorldsGiven {
		all := &reports.Summary{Cells: append(append([]*reports.Cell{}, sides[opts.Factory.Engines.Model()].Cells...), sides[opts.Factory.Engines.Published()].Cells...)}
		ws = storedWorlds(all, known)
	}
	storms := map[string]fidelity.EngineStorms{}
	for _, w := range ws {
		if f := from[w]; f != nil {
			storms[w] = fidelity.EngineStorms{Model: f[opts.Factory.Engines.Model()], Real: f[opts.Factory.Engines.Published()]}
		}
	}
	// Both sides' cells are under main's name now.
	pairs := fidelity.PairsOf(sides[opts.Factory.Engines.Model()], sides[opts.Factory.Engines.Published()], fidelity.Main, ws, fidelity.ReferenceScenarios())
	rep := fidelity.NewReferenceReport(fidelity.Compare(pairs), storms)
	rep.SetModelCondition(modelCond.Name)
	rep.JudgeContracts(fidelity.RealSpecs(sides[opts.Factory.Engines.Published()].Cells))
	return finishReference(opts, rep, loadErr)
}

// withoutEngine is k with its engine override cleared: a stored
// condition's knobs as the side that ran them compares them.
func withoutEngine(k engine.Knobs) engine.Knobs {
	k.Engine = ""
	return k
}

// joinDirs adds dir to a comma-separated list, once.
func joinDirs(list, dir string) string {
	switch list {
	case "", dir:
		return dir
	}
	return list + ", " + dir
}
