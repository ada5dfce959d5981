package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/spf13/cobra"

	"github.com/stormctl/stormctl/internal/storm"
	"github.com/stormctl/stormctl/internal/storm/stormdir"
	"github.com/stormctl/stormctl/internal/tools/bench"
	"github.com/stormctl/stormctl/reports"
	"github.com/stormctl/stormctl/reports/table"
	"github.com/stormctl/stormctl/worlds"
)

// BenchDevkitOptions are the options of `stormctl bench devkit`.
type BenchDevkitOptions struct {
	IO      *IOStreams
	Factory *Factory
	Config  bench.DevkitConfig
	Format  Format
	// Out keeps the benchmark's storms (a directory per engine and level);
	// "": a temp directory, removed at the end.
	Out string
}

// newCmdBenchDevkit returns `stormctl bench devkit`. runF replaces
// runBenchDevkit in tests.
func newCmdBenchDevkit(f *Factory, runF func(context.Context, *BenchDevkitOptions) error) *cobra.Command {
	opts := &BenchDevkitOptions{IO: f.IO, Factory: f}
	cmd := &cobra.Command{
		Use:   "devkit",
		Short: "The real runtime's decided runs and CPU at 1, 2, 4 and 8 runs in flight, the model beside it",
		Long: `Storm one cell (--world, --scenario, condition main) at each level of runs in
flight (--in-flight), once with stormctl's model and once with the published
@workflow/core (--engine devkit on --hosts host processes), admission off: the
level is held whatever the load, so the table shows where a host saturates
and what that does to the runs. Per storm: the runs decided (completed,
silent, corrupted), the outcomes (infra runs the harness starved counted),
the wall time, the CPU seconds a run cost (this process and its children:
the hosts and the world's sidecar), and for the real runtime its hosts' own
account: loop busy p50/p99, the CPU a run cost its host and stormctl, the
share of the hosts' busy event-loop time that was stormctl's recording, and the most flow
invocations of one run in flight at once.

Nothing is timed against a target: the two engines and the levels are
measured side by side in one invocation, so their ratios mean something on
a noisy machine. --admission auto's rule was read off this table
(docs/results/2026-12-06-bench-devkit.md).`,
		Example: `  # the full table (about 15 minutes on 2 cores)
  stormctl bench devkit --format markdown
  # one level, quickly
  stormctl bench devkit --in-flight 2 --runs 2`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return runBenchDevkit(cmd.Context(), opts)
		},
	}
	fl := cmd.Flags()
	c := &opts.Config
	d := bench.DevkitConfig{}.Defaults()
	fl.StringVar(&c.World, "world", d.World, "the cell's world: a world both engines run on (devkit-local, devkit-postgres, devkit-vercel)")
	fl.StringVar(&c.Scenario, "scenario", d.Scenario, "the cell's scenario (see `stormctl scenarios`)")
	fl.IntSliceVar(&c.InFlight, "in-flight", d.InFlight, "levels of runs in flight, a storm per engine each")
	fl.IntVar(&c.Runs, "runs", 0, fmt.Sprintf("runs of each storm (default %d, and at least the level)", bench.DefaultDevkitRuns))
	fl.IntVar(&c.Hosts, "hosts", d.Hosts, "host processes of the real runtime's cell")
	fl.DurationVar(&c.Timeout, "timeout", d.Timeout, "a run without a terminal event after this is stuck (or infra, when the harness starved it)")
	fl.Float64Var(&c.TimeScale, "time-scale", d.TimeScale, "multiply every scenario duration (steps, watchdogs, sleeps) by this")
	fl.StringVar(&opts.Out, "out", "", "keep the storms here, a directory per engine and level (default: a temp directory, removed at the end)")
	addFormatFlag(cmd, &opts.Format, nil)
	return cmd
}

func runBenchDevkit(ctx context.Context, opts *BenchDevkitOptions) error {
	cfg := opts.Config.Defaults()
	if err := cfg.Validate(); err != nil {
		return &UsageError{Err: err}
	}
	out := opts.Out
	if out == "" {
		dir, err := os.MkdirTemp("", "stormctl-bench-devkit-")
		if err != nil {
			return fmt.Errorf("bench devkit: %w", err)
		}
		defer os.RemoveAll(dir)
		out = dir
	}
	logger := opts.Factory.Logger()
	reg, stopWorlds := opts.Factory.Worlds(worlds.Setup{Endpoints: worlds.Values{}, Progress: opts.IO.ErrOut}, logger)
	defer func() {
		if err := stopWorlds(); err != nil {
			logger.Warn("stopping the embedded servers", "err", err)
		}
	}()
	if e, err := reg.Lookup(cfg.World); err != nil {
		return usage("--world: %w", err)
	} else if !slices.Contains(e.Engines, opts.Factory.Engines.Published()) {
		return usage("--world %s: the real runtime runs on %s only", cfg.World, joinAnd(reg.WithEngine(opts.Factory.Engines.Published())))
	}
	sweepLeftovers(opts.IO, "bench")
	quiet := &IOStreams{In: opts.IO.In, Out: io.Discard, ErrOut: opts.IO.ErrOut, ErrTTY: opts.IO.ErrTTY}
	stormOne := func(ctx context.Context, eng string, level, runs int) (*reports.Summary, int64, error) {
		c := stormdir.Config{
			Worlds: []string{cfg.World}, Scenarios: []string{cfg.Scenario}, Conditions: []string{"main"},
			Runs: runs, RunsInFlight: level, Timeout: cfg.Timeout, TimeScale: cfg.TimeScale, Engine: eng, Latency: "none",
			Admission: storm.AdmissionOff, Hosts: cfg.Hosts, Seed: stormdir.DefaultSeed,
			Out: filepath.Join(out, fmt.Sprintf("%s-%d", eng, level)),
		}.Defaults()
		plan, err := storm.NewPlan(c, reg, opts.Factory.Engines)
		if err != nil {
			return nil, 0, &UsageError{Err: err}
		}
		sum, err := runPlan(ctx, quiet, opts.Factory, reg, logger, plan, fmt.Sprintf("bench devkit: %s at %d in flight", eng, level))
		if err != nil {
			return sum, 0, err
		}
		var maxConc int64
		if d, err := stormdir.Open(c.Out); err == nil {
			if recs, err := d.Runs(); err == nil {
				for _, r := range recs {
					maxConc = max(maxConc, r.Stats.MaxConcurrent)
				}
			}
		}
		return sum, maxConc, nil
	}
	began := time.Now()
	res, err := bench.RunDevkit(ctx, cfg, bench.DevkitDeps{Storm: stormOne, Progress: opts.IO.ErrOut})
	if err != nil {
		if ctx.Err() != nil {
			return ErrInterrupted
		}
		return err
	}
	fmt.Fprintf(opts.IO.ErrOut, "bench devkit: done in %s\n", time.Since(began).Round(time.Second))
	return opts.Format.Print(opts.IO.Out, styled{res, func(w io.Writer, s table.Style) error { return writeBenchDevkit(w, res, s) }})
}

// writeBenchDevkit writes the benchmark's table and how it was measured.
func writeBenchDevkit(w io.Writer, res *bench.DevkitResult, style table.Style) error {
	if err := table.Write(w, style, bench.DevkitHeader, res.TableRows()); err != nil {
		return err
	}
	c := res.Config
	_, err := fmt.Fprintf(w, "\n%s/%s, condition main, admission off; the real runtime on %d host %s; each run's timeout %s. CPU-s a run: stormctl and its children (hosts, sidecars) over the storm, per run; host/stormctl: the real runtime's own account, each health report's CPU split among the runs live on the host.\n",
		c.World, c.Scenario, c.Hosts, map[bool]string{true: "process", false: "processes"}[c.Hosts == 1], c.Timeout)
	return err
}
