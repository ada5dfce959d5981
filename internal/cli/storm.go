package cli

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/stormctl/stormctl/internal/base/plural"
	"github.com/stormctl/stormctl/internal/devkit/devkitengine"
	"github.com/stormctl/stormctl/internal/engine/conditions"
	"github.com/stormctl/stormctl/internal/engines"
	"github.com/stormctl/stormctl/internal/eventlog"
	"github.com/stormctl/stormctl/internal/history"
	"github.com/stormctl/stormctl/internal/nemesis"
	"github.com/stormctl/stormctl/internal/storm"
	"github.com/stormctl/stormctl/internal/storm/stormdir"
	"github.com/stormctl/stormctl/reports"
	"github.com/stormctl/stormctl/reports/table"
	"github.com/stormctl/stormctl/scenarios"
	"github.com/stormctl/stormctl/worlds"
	"github.com/stormctl/stormctl/worlds/pkgworld"
	"github.com/stormctl/stormctl/worlds/postgres"
)

// StormOptions are the storm command's options.
type StormOptions struct {
	IO      *IOStreams
	Factory *Factory
	Config  stormdir.Config
	Format  Format
	// CPUProfile, when set, receives a CPU profile of the whole storm.
	CPUProfile string
	// Endpoints are the values of the worlds' endpoint flags (each world
	// declares its own: worlds.Endpoint).
	Endpoints worlds.Values
	// Resume is the directory of an interrupted storm to continue.
	Resume string
	// Given names the flags given on the command line: with Resume, those
	// of the matrix and measurements must agree with storm.json.
	Given []string
	// Nemesis holds the --nemesis flags; it becomes Config.Nemesis only
	// when --nemesis names a kind (off: the zero Config).
	Nemesis nemesis.Config
	// WorldEnv is --world-env: added to package:… worlds' sidecars.
	WorldEnv []string
}

// NewCmdStorm returns `stormctl storm`. runF replaces runStorm in tests.
func NewCmdStorm(f *Factory, runF func(context.Context, *StormOptions) error) *cobra.Command {
	opts := &StormOptions{IO: f.IO, Factory: f, Endpoints: worlds.Values{}}
	surface := declaredWorlds()
	cmd := &cobra.Command{
		Use:   "storm",
		Short: "Run a storm: the matrix of worlds x scenarios x conditions",
		Long: `Run a storm: --runs workflow runs per cell of the matrix world x scenario x
condition, at most --runs-in-flight at once, each replayed by up to
--concurrency overlapping invocations. Every outcome emerges from real
concurrency against the real store; nothing is injected.

Artifacts are appended to --out as runs finish (storm.json, runs.jsonl,
history.jsonl, events/, summary.json, summary.md), so Ctrl-C keeps what was
measured: the partial table is printed and stormctl exits 130.

--resume DIR continues a storm that was interrupted (Ctrl-C, kill -9, a
reboot): its config comes from DIR/storm.json, and only the run indexes of
each cell that runs.jsonl does not list run, with the same run ids and seeds,
appended to DIR. A flag of the matrix or the measurements (--world,
--scenario, --condition, --runs, --seed, --time-scale, --latency, ...)
given with another value than storm.json's is refused (exit 2). The storm
` + wrap(0, 0, "keeps its servers too: storm.json stores "+joinAnd(endpointFlags(surface, nil))+" without their passwords;") + `
one that had a password must be given again, one for another server is
refused (exit 2). So does its --world-env (storm.json's world_env, secrets
removed): a resumed storm applies it again; a setting that held a secret
must be given again, other settings are refused (exit 2).

` + outcomesHelp() + `

--nemesis breaks the stores on this machine's loopback while the storm runs
(off by default): each world gets --nemesis-faults faults of each of its
kinds (default 3), one at a time, each lasting up to --nemesis-window
(default 3s) after a quiet gap of about --nemesis-gap (default 10s): about
one fault in 12 s per world, sized for a 2-core machine at 8 runs in
flight. storm.json records the schedule and every fault (kind, target,
start, end); runs.jsonl marks each run a fault overlapped.`,
		Example: `  # the main job on embedded defaults (about 7.5 minutes on 2 cores: 7m30s,
  # measured 2026-12-03)
  stormctl storm --world local --scenario step-storm,hook-storm,control \
    --condition main,seq+callsite+ordered --runs 24

  # a quick look: fewer runs, everything twice as fast
  stormctl storm --runs 4 --time-scale 0.5

  # longer runs: 8 rounds instead of the harness's 6 (about 1,000 events
  # a blocked-branch run)
  stormctl storm --scenario blocked-branch --rounds 8 --runs 2

  # override one knob of a preset (reported under this exact text)
  stormctl storm --condition seq,seq/wake=ordered,main/ids=callsite

  # continue a storm that was interrupted (Ctrl-C, kill -9, a reboot)
  stormctl storm --resume storms/20261202-141100
  # the same under faults: every kind each world has, seeded by --seed
  stormctl storm --world local,postgres,vercel --nemesis all

  # markdown for a PR, JSON for a pipeline
  stormctl storm --format markdown > storm.md
  stormctl storm --format json | jq '.cells[] | {condition, corrupted}'`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			opts.Given = nil
			cmd.Flags().Visit(func(f *pflag.Flag) { opts.Given = append(opts.Given, f.Name) })
			// 0 stands for "each world's own" only when the flag is not given.
			for _, f := range []struct {
				name string
				v    int
			}{{"page-size", opts.Config.PageSize}, {"runs-in-flight", opts.Config.RunsInFlight}} {
				if cmd.Flags().Changed(f.name) && f.v < 1 {
					return &UsageError{Err: fmt.Errorf("--%s must be at least 1, got %d", f.name, f.v)}
				}
			}
			opts.Config.Nemesis = nemesisOf(opts.Nemesis)
			if err := engineDefaults(cmd.Flags(), f.Engines, &opts.Config); err != nil {
				return &UsageError{Err: err}
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return runStorm(cmd.Context(), opts)
		},
	}
	fl := cmd.Flags()
	c := &opts.Config
	// Every default is the config's own (stormdir.Config.Defaults); --out's
	// is a fresh directory, filled in when the flag is left empty.
	d := stormdir.Config{}.Defaults()
	fl.StringSliceVar(&c.Worlds, "world", d.Worlds, "worlds to storm, comma-separated: "+strings.Join(surface.Names(), ", ")+" (see `stormctl worlds`)"+packageWorldHelp)
	fl.StringArrayVar(&opts.WorldEnv, "world-env", nil, worldEnvHelp)
	fl.StringSliceVar(&c.Scenarios, "scenario", d.Scenarios, "scenarios, comma-separated: "+strings.Join(scenarioNames(), ", ")+" (see `stormctl scenarios`)")
	fl.StringSliceVar(&c.Conditions, "condition", d.Conditions, "conditions: presets ("+strings.Join(presetNames(), ", ")+") with optional /key=value overrides (see `stormctl conditions`)")
	fl.IntVar(&c.Runs, "runs", d.Runs, "runs per cell")
	fl.IntVar(&c.Concurrency, "concurrency", d.Concurrency, "overlapping invocations per run")
	fl.IntVar(&c.RunsInFlight, "runs-in-flight", d.RunsInFlight, runsInFlightHelp(surface))
	fl.StringVar(&c.Admission, "admission", d.Admission, "when a run of the devkit engine starts: auto ("+storm.DefaultAdmissionRule.String()+"; one starts whatever the load when none is in flight; --runs-in-flight stays the bound) or off (as --runs-in-flight allows: for experiments). Either way a run that does not end while its host was saturated is the harness's: infra, class starved, never stuck")
	fl.IntVar(&c.Hosts, "hosts", d.Hosts, "host processes each devkit-engine cell spreads its runs over (a run and all its deliveries stay in one; a new run goes to the host with the fewest); 0: one per core")
	fl.Uint64Var(&c.Seed, "seed", stormdir.DefaultSeed, "seed for jitter, latency draws and ids")
	fl.Float64Var(&c.TimeScale, "time-scale", d.TimeScale, "multiply every scenario duration (steps, watchdogs, sleeps) by this")
	fl.IntVar(&c.Rounds, "rounds", d.Rounds, "rounds of step-storm, hook-storm, blocked-branch and fan-out (8 branches each); more rounds make longer runs (blocked-branch: about 127 events a round)")
	fl.StringVar(&c.Latency, "latency", d.Latency, "mint-to-commit latency profile: "+joinOr(worlds.LatencyForms())+". auto: on devkit-local and devkit-postgres none (their packages spend their own windows), elsewhere real. real: the windows the published runtime measured on @workflow/world-postgres (step_created p50 2.9 ms with a tail to 106 ms; every row derived with forensics --derive-latency). seed: the seed's production step_created p50 31 ms to 2 s and hook_received p50 0.4 ms, every other row an assumption. storm.json records each world's in latency_by_world and the windows in latency_windows")
	fl.DurationVar(&c.Timeout, "timeout", d.Timeout, "a run without a terminal event after this is stuck")
	fl.IntVar(&c.PageSize, "page-size", d.PageSize, "events per page when an invocation loads its log (default: the world's own for the scheme, 100; vercel seq 1000, since every seq page there reads the whole run)")
	fl.StringVar(&c.Out, "out", "", "artifact directory (default storms/<UTC time>)")
	fl.StringVar(&c.Engine, "engine", "", "the engine of conditions that name none: "+joinOr(f.Engines.Names())+" (default model; devkit: the published @workflow/core on devkit-local, devkit-postgres, devkit-vercel and package:… worlds; its defaults: --condition main, --latency none; see docs/engine-devkit.md)")
	fl.StringVar(&c.DevkitChannel, "devkit-channel", "", "the devkit engine's packages: "+joinOr(channelNames())+" (default stable; stable: @workflow/core 4.x; beta: the newest consistent 5.0 betas)")
	fl.BoolVar(&c.Keep, "keep", d.Keep, "keep what the worlds wrote: their temp dir, and the schemas, tables and keys on a server given by "+
		joinOr(endpointFlags(surface, func(e worlds.Endpoint) bool { return e.Keeps }))+" (each named at the end)")
	fl.Var(&c.Shard, "shard", "run only shard i of n: run indexes r with r mod n = i-1, of every cell (combine the shards with stormctl merge)")
	addFormatFlag(cmd, &opts.Format, nil)
	fl.StringVar(&opts.CPUProfile, "cpu-profile", "", "write a CPU profile of the storm to this file (go tool pprof)")
	fl.StringVar(&opts.Resume, "resume", "", "continue the interrupted storm in this directory: only its missing runs run, appended to it (its storm.json gives the config)")
	addSpecs(fl, surface.Specs(), opts.Endpoints)
	addNemesisFlags(fl, &opts.Nemesis, surface)
	return cmd
}

func runStorm(ctx context.Context, opts *StormOptions) error {
	surface := declaredWorlds()
	if err := surface.ValidateEndpoints(opts.Endpoints); err != nil {
		return &UsageError{Err: err}
	}
	cfg := fillEmpty(trimLists(opts.Config))
	var res *stormdir.Resume
	var err error
	endpoints := stormdir.StoreEndpoints(surface.Endpoints(), opts.Endpoints)
	resumeNote := ""
	if opts.Resume != "" {
		given := func(flag string) bool { return slices.Contains(opts.Given, flag) }
		if res, err = stormdir.ReadResume(opts.Resume); err != nil {
			return usage("--resume: %w", err)
		}
		if cfg, err = res.Config(trimLists(opts.Config), given); err != nil {
			return &UsageError{Err: err}
		}
		// The storm's servers, not the embedded ones, unless given again.
		if opts.Endpoints, resumeNote, err = res.Endpoints(surface, cfg.Worlds, opts.Endpoints, given); err != nil {
			return &UsageError{Err: err}
		}
		if err := surface.ValidateEndpoints(opts.Endpoints); err != nil { // a stored --devkit-dir may be gone
			return usage("--resume %s: %w", res.Dir, err)
		}
		endpoints = res.Meta.Endpoints // nil from an older storm.json: unknown
		// The storm's package configuration too, unless given again.
		if opts.WorldEnv, err = res.WorldEnv(opts.WorldEnv, given("world-env")); err != nil {
			return &UsageError{Err: err}
		}
	} else if _, err := os.Stat(filepath.Join(cfg.Out, stormdir.FileStorm)); err == nil {
		return usage("--out %s already holds a storm (%s): --resume %s continues it; give another --out for a new storm", cfg.Out, stormdir.FileStorm, cfg.Out)
	}
	opts.Config.Out = cfg.Out // the --out flag now names the directory, for an internal error's message
	logger := opts.Factory.Logger()
	reg, stopWorlds := opts.Factory.Worlds(worlds.Setup{Endpoints: opts.Endpoints, Keep: cfg.Keep, Progress: opts.IO.ErrOut, Nemesis: cfg.Nemesis.On()}, logger)
	defer func() {
		if err := stopWorlds(); err != nil {
			logger.Warn("stopping the embedded servers", "err", err)
		}
	}()
	po := pkgworld.Options{Env: opts.WorldEnv, PgURL: opts.Endpoints[postgres.URLFlag.Name], Keep: cfg.Keep}
	stopPackages, err := registerPackages(ctx, opts.IO, reg, cfg.Worlds, po, opts.Factory.Engines, engines.Options{Channel: cfg.DevkitChannel, Endpoints: opts.Endpoints}, logger)
	defer func() {
		if err := stopPackages(); err != nil {
			logger.Warn("stopping the package worlds' sidecars", "err", err)
		}
	}()
	if err != nil {
		return err
	}
	err = reg.CheckNemesis(cfg.Nemesis, cfg.Worlds, opts.Endpoints) // before NewPlan creates --out
	var plan *storm.Plan
	if err == nil {
		plan, err = storm.NewPlan(cfg, reg, opts.Factory.Engines)
	}
	if err != nil {
		return &UsageError{Err: err}
	}
	if res != nil {
		if err := res.Check(plan.Cells, plan.Conditions, plan.Config, opts.Factory.Version); err != nil {
			return &UsageError{Err: err}
		}
		plan.Resume = res
	}
	plan.Endpoints = endpoints
	if res != nil && len(res.Meta.WorldEnv) > 0 {
		plan.WorldEnv = res.Meta.WorldEnv // as the storm began: a setting given again on trust stays unstored
	} else {
		plan.WorldEnv = stormdir.StoreWorldEnv(opts.WorldEnv)
	}
	for _, l := range reg.Unused(opts.Endpoints, storm.Uses(plan)) {
		logger.Warn(l)
	}
	sweepLeftovers(opts.IO, "storm")
	defer lessGC()()
	stopProfile, err := startCPUProfile(opts.CPUProfile)
	if err != nil {
		return err
	}
	defer stopProfile()
	label := "storm"
	if !cfg.Shard.IsZero() {
		label = "storm: shard " + cfg.Shard.String()
	}
	if res != nil {
		label += ": resumed"
		if n := res.Stored.CutLine; n > 0 {
			fmt.Fprintf(opts.IO.ErrOut, "storm: resume %s: dropped line %d of %s, cut off when the storm was stopped (its run runs again)\n", res.Dir, n, stormdir.FileRuns)
		}
		if resumeNote != "" {
			fmt.Fprintln(opts.IO.ErrOut, resumeNote)
		}
		fmt.Fprintf(opts.IO.ErrOut, "storm: resume %s: %d runs recorded, %d to run\n", res.Dir, len(res.Stored.Runs), res.Missing(plan.Cells, plan.Config))
	}
	sum, runErr := runPlan(ctx, opts.IO, opts.Factory, reg, logger, plan, label)
	if sum != nil {
		if err := opts.Format.Print(opts.IO.Out, table.Summary{Summary: sum}); err != nil {
			return err
		}
	}
	return stoppedWhere(runErr, cfg.Out, res != nil)
}

// stoppedWhere adds to the error of a storm that stopped early what became
// of its directory, so the same command is not met by "already holds a
// storm" unawares: a storm that stopped before its first run measured
// nothing and left no directory (storm.Run removes a new one), a resumed
// one's directory is as it was, and one that measured runs keeps them for
// --resume DIR.
func stoppedWhere(err error, dir string, resumed bool) error {
	var ie *InfraError
	_, statErr := os.Stat(filepath.Join(dir, stormdir.FileStorm))
	kept := statErr == nil
	switch {
	case errors.Is(err, ErrInterrupted):
		if kept {
			return &stormInterrupted{dir: dir}
		}
		return err
	case errors.As(err, &ie) && !kept:
		return &InfraError{Err: fmt.Errorf("%w; nothing was measured and nothing was kept", ie.Err)}
	case errors.As(err, &ie) && resumed:
		return &InfraError{Err: fmt.Errorf("%w; the storm in %s is as it was: --resume %s continues it once that is fixed", ie.Err, dir, dir)}
	case errors.As(err, &ie):
		return &InfraError{Err: fmt.Errorf("%w; the runs measured so far are in %s: --resume %s continues the storm once that is fixed", ie.Err, dir, dir)}
	}
	return err
}

// stormInterrupted is a storm stopped by Ctrl-C whose directory holds what
// it measured: ExitCode's line says that --resume continues it.
type stormInterrupted struct{ dir string }

func (e *stormInterrupted) Error() string        { return "storm interrupted" }
func (e *stormInterrupted) Is(target error) bool { return target == ErrInterrupted }

// runPlan runs one validated plan as `storm` does: a header line (after
// label) and live progress on stderr, artifacts appended to the plan's
// --out, and storm.Run's errors typed for the exit code (stormError). The
// summary, partial when interrupted, comes back whenever the storm started.
func runPlan(ctx context.Context, io *IOStreams, f *Factory, reg *worlds.Registry, logger *slog.Logger, plan *storm.Plan, label string) (*reports.Summary, error) {
	sum, err := stormPlan(ctx, io, f, reg, logger, plan, label)
	return sum, stormError(err)
}

// stormPlan is runPlan with storm.Run's error as it is.
func stormPlan(ctx context.Context, io *IOStreams, f *Factory, reg *worlds.Registry, logger *slog.Logger, plan *storm.Plan, label string) (*reports.Summary, error) {
	cfg := plan.Config
	if cfg.Shard.IsZero() {
		fmt.Fprintf(io.ErrOut, "%s: %s x %s, %d in flight, artifacts in %s\n", label, plural.Count(len(plan.Cells), "cell"), plural.Count(cfg.Runs, "run"), plan.RunsInFlight, cfg.Out)
	} else {
		fmt.Fprintf(io.ErrOut, "%s: %s x %d of %s, %d in flight, artifacts in %s\n", label, plural.Count(len(plan.Cells), "cell"), cfg.Shard.RunsPerCell(cfg.Runs), plural.Count(cfg.Runs, "run"), plan.RunsInFlight, cfg.Out)
	}
	return storm.Run(ctx, plan, storm.Deps{
		Worlds: reg, EngineProgress: io.ErrOut, Logger: logger, Progress: newProgress(io), Version: f.Version,
	})
}

// engineDefaults applies the storm's engine's defaults to what the flags
// leave unset (engines.Defaulter) and lets it refuse the storm before it
// starts (engines.StormChecker: a channel it does not know, a world its
// packages cannot serve).
func engineDefaults(fl *pflag.FlagSet, reg *engines.Registry, c *stormdir.Config) error {
	p, err := reg.Get(c.Engine)
	if err != nil {
		return fmt.Errorf("--engine: %w", err)
	}
	if err := checkEngines(reg, engines.Options{Channel: c.DevkitChannel, Hosts: c.Hosts}, p, c.Worlds); err != nil {
		return err
	}
	if d, ok := p.(engines.Defaulter); ok {
		def := engines.Defaults{Conditions: c.Conditions, Latency: c.Latency}
		d.Defaults(fl.Changed, &def)
		c.Conditions, c.Latency = def.Conditions, def.Latency
	}
	return nil
}

// checkEngines lets every engine check its own options in o (a condition
// may name any engine: engines.StormChecker), and the storm's engine (nil:
// none) its worlds too.
func checkEngines(reg *engines.Registry, o engines.Options, storms engines.Plugin, worldNames []string) error {
	for _, p := range reg.Plugins() {
		if sc, ok := p.(engines.StormChecker); ok {
			var ws []string
			if storms != nil && p.Name() == storms.Name() {
				ws = worldNames
			}
			if err := sc.CheckStorm(o, ws); err != nil {
				return err
			}
		}
	}
	return nil
}

// channelNames are the devkit engine's channels.
func channelNames() []string {
	var out []string
	for _, ch := range devkitengine.Channels() {
		out = append(out, string(ch))
	}
	return out
}

// stormError types storm.Run's error for the exit code: Ctrl-C is
// ErrInterrupted; an unreachable store, or a machine without what a world
// needs, is an *InfraError.
func stormError(err error) error {
	switch {
	case errors.Is(err, storm.ErrInterrupted):
		return ErrInterrupted
	case errors.Is(err, eventlog.ErrUnavailable), errors.Is(err, worlds.ErrPrerequisite):
		return &InfraError{Err: err}
	}
	return err
}

// fillEmpty applies Config.Defaults only to what the flags leave empty
// (--out, and lists given as empty). Every numeric flag already carries its
// default, so a zero there was typed by the user and must reach NewPlan:
// Config.Defaults would silently turn --runs 0 or --time-scale 0 into 24 or 1.
func fillEmpty(c stormdir.Config) stormdir.Config {
	d := c.Defaults()
	c.Worlds, c.Scenarios, c.Conditions, c.Out = d.Worlds, d.Scenarios, d.Conditions, d.Out
	return c
}

// trimLists drops empty items and spaces from comma-separated flags.
func trimLists(c stormdir.Config) stormdir.Config {
	c.Worlds, c.Scenarios, c.Conditions = trimList(c.Worlds), trimList(c.Scenarios), trimList(c.Conditions)
	return c
}

// trimList drops empty items and spaces from one comma-separated flag.
func trimList(xs []string) []string {
	var out []string
	for _, x := range xs {
		if x = strings.TrimSpace(x); x != "" {
			out = append(out, x)
		}
	}
	return out
}

// lessGC lets the heap grow to five times the live data between collections
// (GOGC=400) unless the user set GOGC, and returns the undo. A storm's live
// heap is small (tens of MiB) and its garbage large (every read of every
// run decodes the log afresh): with the default GOGC=100 the collector took
// about a quarter of a vercel storm's CPU; at 400, 15% less CPU in all for
// about twice the peak memory (measured side by side; docs/worlds.md, "The
// vercel world").
func lessGC() (undo func()) {
	if os.Getenv("GOGC") != "" {
		return func() {}
	}
	old := debug.SetGCPercent(400)
	return func() { debug.SetGCPercent(old) }
}

// outcomesHelp is storm --help's paragraph on the outcomes, from reports'
// own table.
func outcomesHelp() string {
	var items []string
	for _, o := range history.Outcomes() {
		items = append(items, string(o)+" ("+o.Meaning()+")")
	}
	return wrap(0, 0, "Outcomes per run: "+strings.Join(items, ", ")+".")
}

// scenarioNames are the scenarios' names, in the registry's order.
func scenarioNames() []string {
	var out []string
	for _, s := range scenarios.Registry() {
		out = append(out, s.Name)
	}
	return out
}

// presetNames are the condition presets' names, in display order.
func presetNames() []string {
	var out []string
	for _, p := range conditions.Presets() {
		out = append(out, p.Name)
	}
	return out
}
