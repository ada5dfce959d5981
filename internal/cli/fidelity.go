package cli

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/stormctl/stormctl/internal/engine/conditions"
	"github.com/stormctl/stormctl/internal/engines"
	"github.com/stormctl/stormctl/internal/storm"
	"github.com/stormctl/stormctl/internal/storm/stormdir"
	"github.com/stormctl/stormctl/internal/tools/fidelity"
	"github.com/stormctl/stormctl/reports"
	"github.com/stormctl/stormctl/worlds"
)

// FidelityFile is the machine-readable result fidelity writes into --out.
const FidelityFile = "fidelity.json"

// DefaultVercelRuns is fidelity's --vercel-runs default
// (fidelity.DefaultVercelRuns).
const DefaultVercelRuns = fidelity.DefaultVercelRuns

// FidelityOptions are the fidelity command's options.
type FidelityOptions struct {
	IO      *IOStreams
	Factory *Factory
	// Worlds are the worlds to storm and judge (--world).
	Worlds []string
	// WorldsGiven says --world was given (with --from it narrows the
	// stored worlds; without it every stored world is judged).
	WorldsGiven bool
	// Runs is the runs per cell; VercelRuns on fidelity.Vercel.
	Runs       int
	VercelRuns int
	TimeScale  float64
	// Timeout bounds one run, as storm --timeout (it does not scale with
	// TimeScale).
	Timeout time.Duration
	// RunsInFlight bounds each world's storm; 0: the world's own default.
	RunsInFlight int
	// Out is the directory the storms (Out/<world>/) and fidelity.json go
	// to; with From, only fidelity.json, and only when given.
	Out    string
	Format Format
	// From are stored storm directories to judge instead of storming.
	From []string
	// Endpoints are the values of the worlds' endpoint flags.
	Endpoints worlds.Values
	// Reference is what the model is checked against (--reference):
	// fidelity.ReferenceClaims, the published numbers' claims, or
	// fidelity.ReferenceDevkit, the real runtime stormed beside it.
	Reference string
	// DevkitChannel and ModelLatency shape --reference devkit's storms:
	// the real runtime's channel, the model's latency profile.
	DevkitChannel string
	ModelLatency  string
	// ModelCondition is the condition the model side runs under
	// (--model-condition): main, or main with a model knob moved; the
	// real side runs main.
	ModelCondition string
	// ModelWorld is the world the model side runs on (--model-world;
	// "": each --world's own), for one --world.
	ModelWorld string
}

// NewCmdFidelity returns `stormctl fidelity`. runF replaces runFidelity in tests.
func NewCmdFidelity(f *Factory, runF func(context.Context, *FidelityOptions) error) *cobra.Command {
	opts := &FidelityOptions{IO: f.IO, Factory: f, Endpoints: worlds.Values{}}
	cmd := &cobra.Command{
		Use:   "fidelity",
		Short: "Check that stormctl's model orders its conditions as the real engine does",
		Long: `Check stormctl's model against the real engine: storm the reference cells on
each world, then judge ordering claims that rest on published numbers (the
engine team's CI storms and the seed's phase A-C storm) and print, per world,
stormctl's numbers next to the reference with PASS, FAIL or unknown per claim,
then "fidelity: N of M claims pass".

Claims, per world (rates are over decided runs: completed, corrupted, silent,
gap, hole; bad = corrupted + silent):
  main-step-corrupted         main step-storm bad >= 50%          (CI 583/600)
  control-clean               control bad+gap = 0, every condition (CI 0/200)
  callsite-step/-hook         main's bad >= 5 x callsite's, callsite silent 0
                              (CI 554 -> 87 and 177 -> 8 of 600); main must corrupt
  seq-step                    postgres: main's corrupted >= 5 x seq's (seed 20 -> 2 of 24)
  seq-hook-not-worse          postgres: seq's hook-storm corrupted not higher with
                              one-sided Fisher p < 0.05 (seed 5 -> 0 of 24)
  seq-step-local-not-better   local: seq's step-storm corrupted not lower with
                              one-sided Fisher p < 0.05 (seed 24 -> 23 of 24)
  seq-hook-local-not-worse    local: seq's hook-storm corrupted not higher with
                              one-sided Fisher p < 0.05 (seed 18 -> 9 of 24)
  tail-fence-hook-not-better  tail-fence's hook-storm bad not lower with one-sided
                              Fisher p < 0.05 (CI 177 -> 252 of 600)
  target-clean                seq+callsite+ordered: 0 corrupted, silent, gap;
                              rejections > 0 over its cells
A shift claim whose reference side (main) did not corrupt fails: a shift from
0 proves nothing. A claim whose cell has too few decided runs (fewer than 80%
of its runs, or none: an interrupted storm, stuck or infra runs) is unknown,
never a pass; stuck, failed and infra runs are left out of the rates and
noted.

One storm per world, one after another, each a normal storm directory in
--out/<world>/ (stormctl report and gate read it), then --out/fidelity.json.
Only the cells the world's claims read are run: 12 per world, 14 on postgres
and local.
The default worlds, local and postgres, need no network and start in
seconds; vercel is opt-in (--world vercel) and runs --vercel-runs per cell.
--from judges stored storms instead: a storm directory, or a fidelity --out
holding one per world; nothing runs and nothing is written unless --out.

Exit 0 when every claim passes, 1 when one fails or is unknown, 2 for bad
usage, 3 when a store is unavailable, 130 when interrupted (Ctrl-C: the
claims are judged on what was measured).

--reference devkit checks the model against the real runtime instead of
the claims: per world (default devkit-local,devkit-postgres) two storms of
step-storm, hook-storm and control under condition main, the model at its
latency profile (--model-latency) into OUT/<world>/model and the published
@workflow/core (storm --engine devkit, --latency none) into
OUT/<world>/real, --runs 12 per cell unless given; then per world and
scenario every regime figure side by side with 95% Wilson intervals:
corrupted+silent of decided runs, stuck, non-prefix reads, cursor skips,
dup creates (a world-layer defect), invocations per run, the class mix of
the bad runs and the mint-to-commit p50 per event type. A figure more than
2x apart is OFF (separated when the intervals do not overlap). Exit 0 when
every figure was measured on both sides, 1 when one is unknown (a side
with no run, no read, no decided run). --from judges stored storms: each
cell's engine is what storm.json says ran it. Derive the model's latency
profile from the real side's windows with
  stormctl forensics OUT/<world>/real --derive-latency profile.json
and rerun with --model-latency file:profile.json (docs/fidelity.md).
--model-condition runs the model side under main with model knobs moved
(main/writes=parallel: its suspensions write as core 4.8.9's do); the real
side runs main, and --from pairs the model's cells of that condition's
knobs with the real side's main.`,
		Example: `  # local and postgres, 24 runs per cell (an estimated 10 minutes on 2 cores)
  stormctl fidelity

  # the vercel world too, at its own run count
  stormctl fidelity --world local,postgres,vercel --vercel-runs 18

  # a quick look: every verdict is weak at this size
  stormctl fidelity --world local --runs 4 --time-scale 0.5 --timeout 60s --out /tmp/fid

  # judge stored storms without running anything (CI, or a second look)
  stormctl fidelity --from storms/fidelity-20261202-141100
  stormctl fidelity --from storms/pg-storm --world postgres --format markdown

  # the model against the real runtime on the real world packages (~20 min)
  stormctl fidelity --reference devkit
  stormctl fidelity --reference devkit --world devkit-postgres --runs 6 --model-latency file:real.json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			fl := cmd.Flags()
			opts.WorldsGiven = fl.Changed("world")
			if err := referenceDefaults(fl, opts); err != nil {
				return err
			}
			if len(opts.From) > 0 {
				for _, name := range append([]string{"runs", "vercel-runs", "time-scale", "timeout", "runs-in-flight"}, endpointFlagNames()...) {
					if fl.Changed(name) {
						return usage("--%s applies to storms fidelity runs; --from judges stored storms and runs nothing", name)
					}
				}
			}
			switch {
			case opts.Runs < 1:
				return usage("--runs must be at least 1, got %d", opts.Runs)
			case opts.VercelRuns < 1:
				return usage("--vercel-runs must be at least 1, got %d", opts.VercelRuns)
			case fl.Changed("runs-in-flight") && opts.RunsInFlight < 1:
				return usage("--runs-in-flight must be at least 1, got %d", opts.RunsInFlight)
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return runFidelity(cmd.Context(), opts)
		},
	}
	fl := cmd.Flags()
	d := stormdir.Config{}.Defaults() // a storm's defaults, as storm's flags take them
	fl.StringSliceVar(&opts.Worlds, "world", fidelity.DefaultWorlds(), fmt.Sprintf("worlds to storm and judge, comma-separated: %s (%s is opt-in: slower, see --vercel-runs)",
		strings.Join(fidelity.Worlds(), ", "), fidelity.Vercel))
	fl.IntVar(&opts.Runs, "runs", d.Runs, fmt.Sprintf("runs per cell on %s (the seed's phase A-C storm ran 24)", joinAnd(fidelity.DefaultWorlds())))
	fl.IntVar(&opts.VercelRuns, "vercel-runs", fidelity.DefaultVercelRuns, fmt.Sprintf("runs per cell on %s (%d: 216 runs, about the 8-minute vercel storm measured in docs/results)", fidelity.Vercel, fidelity.DefaultVercelRuns))
	fl.Float64Var(&opts.TimeScale, "time-scale", d.TimeScale, "multiply every scenario duration by this (as storm --time-scale)")
	fl.DurationVar(&opts.Timeout, "timeout", d.Timeout, "a run without a terminal event after this is stuck (as storm --timeout; not scaled by --time-scale)")
	fl.IntVar(&opts.RunsInFlight, "runs-in-flight", 0, fidelityRunsInFlightHelp(declaredWorlds()))
	fl.StringVar(&opts.Out, "out", "", "directory for the storms (OUT/<world>/) and fidelity.json (default storms/fidelity-<UTC time>; with --from, fidelity.json only, and only when given)")
	addFormatFlag(cmd, &opts.Format, map[Format]string{FormatJSON: "fidelity.json's document"})
	fl.StringSliceVar(&opts.From, "from", nil, "judge stored storms instead of running: storm directories, or fidelity --out directories holding one per world")
	fl.StringVar(&opts.Reference, "reference", fidelity.ReferenceClaims, "what the model is checked against: "+joinOr(fidelity.References())+" (devkit: the published @workflow/core stormed beside it, every regime figure side by side)")
	fl.StringVar(&opts.DevkitChannel, "devkit-channel", "", "with --reference devkit: the real runtime's packages, "+joinOr(channelNames())+" (default stable)")
	fl.StringVar(&opts.ModelCondition, "model-condition", fidelity.Main, "with --reference devkit: the model side's condition, as a storm --condition item over main's contract (such as main/writes=parallel), or the contract the channel's packages carry (slot+noop with --devkit-channel beta); the real side runs main")
	fl.StringVar(&opts.ModelWorld, "model-world", "", "with --reference devkit and one --world: the world the model side runs on (or, with --from, whose cells it reads), compared as the --world's; for a contract the package's world does not serve (--model-condition slot+noop --model-world local against devkit-local)")
	fl.StringVar(&opts.ModelLatency, "model-latency", d.Latency, "with --reference devkit: the model's latency profile, as storm --latency ("+joinOr(worlds.LatencyForms())+")")
	addSpecs(fl, declaredWorlds().Specs(), opts.Endpoints)
	return cmd
}

// referenceDefaults checks --reference and applies --reference devkit's
// defaults to what the flags leave unset: its worlds, its runs per cell.
func referenceDefaults(fl *pflag.FlagSet, opts *FidelityOptions) error {
	switch opts.Reference {
	case fidelity.ReferenceClaims:
		for _, name := range []string{"devkit-channel", "model-latency", "model-condition", "model-world"} {
			if fl.Changed(name) {
				return usage("--%s applies to --reference devkit only", name)
			}
		}
		return nil
	case fidelity.ReferenceDevkit:
	default:
		return usage("--reference: unknown %q (valid: %s)", opts.Reference, strings.Join(fidelity.References(), ", "))
	}
	if fl.Changed("vercel-runs") {
		return usage("--vercel-runs applies to --reference claims; --reference devkit storms every world at --runs")
	}
	if err := checkEngines(opts.Factory.Engines, engines.Options{Channel: opts.DevkitChannel}, nil, nil); err != nil {
		return &UsageError{Err: err}
	}
	if _, err := worlds.ParseProfile(opts.ModelLatency, stormdir.DefaultSeed); err != nil {
		return usage("--model-latency: %w", err)
	}
	if err := checkModelCondition(opts.ModelCondition, opts.DevkitChannel, opts.Factory.Engines); err != nil {
		return err
	}
	if !opts.WorldsGiven {
		opts.Worlds = fidelity.DevkitWorlds()
	}
	if opts.ModelWorld != "" && len(opts.Worlds) != 1 {
		return usage("--model-world %s: give one --world, the real side's it is compared as (got %d)", opts.ModelWorld, len(opts.Worlds))
	}
	if !fl.Changed("runs") {
		opts.Runs = fidelity.DefaultReferenceRuns
	}
	return nil
}

// checkModelCondition refuses a --model-condition that does not parse, or
// that would not run the model on main's contract: another preset (the
// real runtime has no other), or engine=devkit.
func checkModelCondition(item, channel string, engs *engines.Registry) error {
	c, err := conditions.Parse(item)
	if err != nil {
		return usage("--model-condition: %w", err)
	}
	preset, _, _ := strings.Cut(c.Name, "/")
	if _, ok := fidelity.ChannelContract(preset, channel); preset != fidelity.Main && !ok {
		return usage("--model-condition %s: the model side must run the contract the real runtime runs: main with /key=value overrides (such as main/writes=parallel), or slot+noop against --devkit-channel beta (spec 7)", c.Name)
	}
	if engs.Traits(c.Knobs.Engine).Published {
		return usage("--model-condition %s: engine=devkit is the real side; the model side runs the model", c.Name)
	}
	if err := engs.CheckKnobs(c.Knobs); err != nil {
		return usage("--model-condition %s: %w", c.Name, err)
	}
	return nil
}

func runFidelity(ctx context.Context, opts *FidelityOptions) error {
	opts.Worlds = trimList(opts.Worlds)
	if d, ok := storm.FirstDuplicate(opts.Worlds); ok {
		return usage("--world: %q is given twice", d)
	}
	surface := declaredWorlds()
	if err := surface.ValidateEndpoints(opts.Endpoints); err != nil {
		return &UsageError{Err: err}
	}
	out := opts.Out
	if out == "" && len(opts.From) == 0 {
		out = filepath.Join("storms", "fidelity-"+time.Now().UTC().Format("20060102-150405"))
		opts.Out = out // the --out flag now names the directory, for an internal error's message
	}
	logger := opts.Factory.Logger()
	reg, stopWorlds := opts.Factory.Worlds(worlds.Setup{Endpoints: opts.Endpoints, Progress: opts.IO.ErrOut}, logger) // nothing starts until a world opens
	defer func() {
		if err := stopWorlds(); err != nil {
			logger.Warn("stopping the embedded servers", "err", err)
		}
	}()
	for _, w := range opts.Worlds {
		if _, err := reg.Lookup(w); err != nil {
			return usage("--world: %w", err)
		}
	}
	if len(opts.From) > 0 {
		if opts.Out != "" {
			if err := creatable(opts.Out); err != nil {
				return usage("--out %s: %w", opts.Out, err)
			}
		}
		if opts.Reference == fidelity.ReferenceDevkit {
			return fidelityReferenceFrom(opts, reg.Names())
		}
		return fidelityFrom(opts, reg.Names())
	}
	if len(opts.Worlds) == 0 {
		return usage("--world: no world given (valid: %s)", strings.Join(reg.Names(), ", "))
	}
	if opts.Reference == fidelity.ReferenceDevkit {
		return fidelityReference(ctx, opts, reg, surface, logger)
	}
	// Every world's plan is validated before any storm starts.
	storms := fidelity.Storms{Runs: opts.Runs, VercelRuns: opts.VercelRuns, TimeScale: opts.TimeScale, Timeout: opts.Timeout,
		RunsInFlight: opts.RunsInFlight, Out: out}
	plans := make([]*storm.Plan, len(opts.Worlds))
	for i, w := range opts.Worlds {
		plan, err := storm.NewPlan(storms.Config(w), reg, opts.Factory.Engines)
		if err != nil {
			return &UsageError{Err: err}
		}
		if err := plan.Only(fidelity.CellsFor(w)); err != nil {
			return err
		}
		plan.Endpoints = stormdir.StoreEndpoints(surface.Endpoints(), opts.Endpoints)
		plans[i] = plan
	}
	for _, l := range reg.Unused(opts.Endpoints, storm.Uses(plans...)) {
		logger.Warn(l)
	}
	sweepLeftovers(opts.IO, "fidelity")
	defer lessGC()()
	rep, stormErr := fidelity.Check(ctx, plans, func(ctx context.Context, i int, plan *storm.Plan) (*reports.Summary, error) {
		label := fmt.Sprintf("fidelity: %s (%d of %d)", opts.Worlds[i], i+1, len(plans))
		return stormPlan(ctx, opts.IO, opts.Factory, reg, logger, plan, label)
	}, func(world string, err error) {
		fmt.Fprintf(opts.IO.ErrOut, "fidelity: %s: %s; its claims are judged on what it measured\n", world, oneLine(err))
	})
	stormErr = stormError(stormErr)
	if rep.Interrupted {
		stormErr = ErrInterrupted
	}
	if err := writeFidelity(out, rep); err != nil && stormErr == nil {
		stormErr = err
	}
	if err := opts.Format.Print(opts.IO.Out, rep); err != nil {
		return err
	}
	if stormErr != nil {
		return stormErr
	}
	if !rep.AllPass() {
		return ErrGateFailed
	}
	return nil
}

// fidelityRunsInFlightHelp is the help of fidelity --runs-in-flight: the
// default bound, and each world of reg that asks for fewer
// (Entry.RunsPerCore).
func fidelityRunsInFlightHelp(reg *worlds.Registry) string {
	var fewer string
	for _, e := range reg.Entries() {
		if e.RunsPerCore > 0 {
			fewer += fmt.Sprintf("; %s at most %d per core", e.Name, e.RunsPerCore)
		}
	}
	return fmt.Sprintf("runs in flight at once in each world's storm (default %d, the harness's per-PR concurrency%s)", storm.DefaultRunsInFlight, fewer)
}

// writeFidelity writes rep (a claims or a reference report) as dir/fidelity.json, atomically as every
// artifact (an interrupted write leaves no half document).
func writeFidelity(dir string, rep any) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("--out %s: %w", dir, err)
	}
	var b bytes.Buffer
	if err := writeJSON(&b, rep); err != nil {
		return fmt.Errorf("encode %s: %w", FidelityFile, err)
	}
	return stormdir.WriteFile(filepath.Join(dir, FidelityFile), b.Bytes())
}
