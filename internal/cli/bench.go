package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/stormctl/stormctl/internal/eventlog"
	"github.com/stormctl/stormctl/internal/tools/bench"
	"github.com/stormctl/stormctl/reports/table"
	"github.com/stormctl/stormctl/worlds"
	"github.com/stormctl/stormctl/worlds/postgres"
)

// Bench modes: which benchmark a BenchOptions runs.
const (
	BenchAppend    = "append"
	BenchForensics = "forensics"
)

// appendTarget is the target for stormctl/pgbench at 16 clients.
const appendTarget = 0.85

// BenchOptions are the options of `stormctl bench append` and `stormctl
// bench forensics`.
type BenchOptions struct {
	IO      *IOStreams
	Factory *Factory
	// Mode is BenchAppend or BenchForensics.
	Mode      string
	Append    bench.AppendConfig
	Forensics bench.ForensicsConfig
	Format    Format
	// PGURL is a server to use instead of a throw-away embedded cluster.
	PGURL string
	// CPUProfile, when set, receives a CPU profile of the whole benchmark.
	CPUProfile string
}

// NewCmdBench returns `stormctl bench` with its two subcommands. runF
// replaces runBench in tests.
func NewCmdBench(f *Factory, runF func(context.Context, *BenchOptions) error) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Measure stormctl against physical limits: PostgreSQL's paths, the real runtime's host",
		Long: `Benchmarks of the postgres world against the same server's limit, side by
side in one invocation (this machine's noise between identical runs is
10-60%, so only the ratios of two sides measured in the same rounds mean
anything). Without --pg-url each starts a throw-away embedded cluster and
removes it at the end.`,
		Example: `  stormctl bench append --format markdown
  stormctl bench forensics --events 20000 --runs 200`,
		Args: cobra.NoArgs,
	}
	cmd.AddCommand(newCmdBenchAppend(f, runF), newCmdBenchForensics(f, runF), newCmdBenchDevkit(f, nil))
	for _, c := range cmd.Commands() {
		c.SetFlagErrorFunc(flagError)
	}
	return cmd
}

func newCmdBenchAppend(f *Factory, runF func(context.Context, *BenchOptions) error) *cobra.Command {
	opts := &BenchOptions{IO: f.IO, Factory: f, Mode: BenchAppend}
	var scripts, placements []string
	cmd := &cobra.Command{
		Use:   "append",
		Short: "pgbench with the world's exact SQL against the world's own append path",
		Long: `For each row (script x placement x clients), alternate over --rounds rounds
of --duration per side: pgbench running the exact SQL the postgres world sends
(legacy insert; seq counter+insert; fenced batch of 3, which reads the run's
counter first), then the world's own write path (World.Append or AppendFenced
from as many goroutines as pgbench has clients, latency profile none). HOT
appends to one run, SPREAD to a random run among --runs.

Prints per row the medians of both sides and the ratio stormctl/pgbench in
committed events per second (TPS for the one-event scripts), the median of
the rounds' ratios. The issue's target is 0.85 or more at 16 clients.`,
		Example: `  # the full matrix (about 8 minutes on 2 cores)
  stormctl bench append --format markdown
  # one row, quickly
  stormctl bench append --script seq --placement hot --clients 16 --rounds 2 --duration 2s`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			for _, s := range scripts {
				opts.Append.Scripts = append(opts.Append.Scripts, bench.Script(s))
			}
			for _, p := range placements {
				opts.Append.Placements = append(opts.Append.Placements, bench.Placement(p))
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return runBench(cmd.Context(), opts)
		},
	}
	fl := cmd.Flags()
	c := &opts.Append
	fl.StringSliceVar(&scripts, "script", nil, "scripts: "+strings.Join(names(bench.Scripts), ", ")+" (default all)")
	fl.StringSliceVar(&placements, "placement", nil, "placements: "+strings.Join(names(bench.Placements), ", ")+" (default all)")
	fl.IntSliceVar(&c.Clients, "clients", []int{1, 4, 16}, "client counts")
	fl.IntVar(&c.Runs, "runs", 1000, "runs of a SPREAD row")
	fl.IntVar(&c.Rounds, "rounds", 3, "rounds per row, each side once per round")
	fl.DurationVar(&c.Duration, "duration", 4*time.Second, "time per side and round (whole seconds: pgbench -T)")
	fl.StringVar(&c.Pgbench, "pgbench", "", "pgbench binary (default: next to the server binaries, else on PATH)")
	addBenchFlags(cmd, opts)
	return cmd
}

func newCmdBenchForensics(f *Factory, runF func(context.Context, *BenchOptions) error) *cobra.Command {
	opts := &BenchOptions{IO: f.IO, Factory: f, Mode: BenchForensics}
	cmd := &cobra.Command{
		Use:   "forensics",
		Short: "The bare commit-time read of a large table against attach-mode forensics of it",
		Long: `Load --events events over --runs runs into a workflow_events table shaped like
world-postgres's (a schema of its own, dropped at the end), committing
--batch events per transaction from --loaders concurrent loaders, some
batches committed out of id order on purpose. Then alternate over --rounds
rounds: (a) the bare SELECT id, pg_xact_commit_timestamp(xmin) of every row,
read to completion through pgx, and (b) what stormctl forensics --pg-url URL
--format json does with the same rows (output discarded). Prints the median
times, the ratio b/a (median of the rounds' ratios; target 2 or less) and the
peak Go heap and resident set of (b) (target 1 GiB or less).`,
		Example: `  stormctl bench forensics                  # 1,000,000 events, 10,000 runs
  stormctl bench forensics --events 20000 --runs 200 --rounds 1`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return runBench(cmd.Context(), opts)
		},
	}
	fl := cmd.Flags()
	c := &opts.Forensics
	fl.IntVar(&c.Events, "events", 1_000_000, "events to load")
	fl.IntVar(&c.Runs, "runs", 10_000, "runs the events are spread over")
	fl.IntVar(&c.Batch, "batch", 50, "events per loading transaction")
	fl.IntVar(&c.Loaders, "loaders", 8, "concurrent loading transactions")
	fl.IntVar(&c.Rounds, "rounds", 3, "rounds, each side once per round")
	fl.Uint64Var(&c.Seed, "seed", 1, "seed for the runs and types drawn")
	addBenchFlags(cmd, opts)
	return cmd
}

// addBenchFlags declares the flags both benchmarks have.
func addBenchFlags(cmd *cobra.Command, opts *BenchOptions) {
	fl := cmd.Flags()
	fl.StringVar(&opts.PGURL, "pg-url", "", postgres.URLHelp)
	addFormatFlag(cmd, &opts.Format, nil)
	fl.StringVar(&opts.CPUProfile, "cpu-profile", "", "write a CPU profile of the benchmark to this file (go tool pprof)")
}

func runBench(ctx context.Context, opts *BenchOptions) (err error) {
	// Every numeric flag carries its default, so a zero was typed and must
	// reach Validate (Defaults would take it for "unset"); only the lists
	// default when left empty.
	switch opts.Mode {
	case BenchAppend:
		d := bench.AppendConfig{}.Defaults()
		if len(opts.Append.Scripts) == 0 {
			opts.Append.Scripts = d.Scripts
		}
		if len(opts.Append.Placements) == 0 {
			opts.Append.Placements = d.Placements
		}
		err = opts.Append.Validate()
	case BenchForensics:
		err = opts.Forensics.Validate()
	default:
		err = fmt.Errorf("unknown benchmark %q (valid: %s, %s)", opts.Mode, BenchAppend, BenchForensics)
	}
	if err == nil {
		err = postgres.ValidURL("--pg-url", opts.PGURL)
	}
	if err != nil {
		return &UsageError{Err: err}
	}
	stopProfile, err := startCPUProfile(opts.CPUProfile)
	if err != nil {
		return err
	}
	defer stopProfile()
	sweepLeftovers(opts.IO, "bench")
	url := opts.PGURL
	if url == "" {
		c, err := postgres.StartEmbedded(ctx, opts.Factory.Logger())
		if err != nil {
			return benchErr(ctx, err)
		}
		defer func() {
			if serr := c.Stop(); serr != nil {
				err = errors.Join(err, &InfraError{Err: serr})
			}
		}()
		url = c.URL()
	}
	if opts.Mode == BenchAppend {
		res, err := bench.RunAppend(ctx, opts.Append, bench.AppendDeps{URL: url, Progress: opts.IO.ErrOut})
		if err != nil {
			return benchErr(ctx, err)
		}
		return opts.Format.Print(opts.IO.Out, styled{res, func(w io.Writer, s table.Style) error { return writeBenchAppend(w, res, s) }})
	}
	res, err := bench.RunForensics(ctx, opts.Forensics, bench.ForensicsDeps{URL: url, Progress: opts.IO.ErrOut, Command: attachCommand})
	if err != nil {
		return benchErr(ctx, err)
	}
	return opts.Format.Print(opts.IO.Out, styled{res, func(w io.Writer, s table.Style) error { return writeBenchForensics(w, res, s) }})
}

// attachCommand is side (c) of the forensics benchmark: what `stormctl
// forensics --pg-url URL --schema SCHEMA --format json` does, its report
// written to out.
func attachCommand(ctx context.Context, url, schema string, out io.Writer) error {
	return runAttach(ctx, &ForensicsOptions{IO: &IOStreams{Out: out, ErrOut: io.Discard},
		PGURL: url, Schema: schema, Format: FormatJSON, Pairs: 6})
}

// benchErr maps a benchmark's failure to its exit code.
func benchErr(ctx context.Context, err error) error {
	switch {
	case ctx.Err() != nil:
		return ErrInterrupted
	case errors.Is(err, worlds.ErrPrerequisite), errors.Is(err, eventlog.ErrUnavailable):
		return &InfraError{Err: err}
	}
	var ie *InfraError
	if errors.As(err, &ie) {
		return err
	}
	return &InfraError{Err: err}
}

// writeBenchAppend writes the append benchmark: a row per script,
// placement and clients, then how it was measured and the rows below the
// target.
func writeBenchAppend(w io.Writer, res *bench.AppendResult, style table.Style) error {
	var rows [][]string
	var misses []string
	for _, r := range res.Rows {
		pgEv, stEv := "", ""
		if r.Script.Events() > 1 {
			pgEv, stEv = fmt.Sprintf("%.0f", r.Pgbench.EventsPerSec), fmt.Sprintf("%.0f", r.Stormctl.EventsPerSec)
		}
		rows = append(rows, []string{r.Name(), fmt.Sprintf("%.0f", r.Pgbench.TPS), fmt.Sprintf("%.0f", r.Stormctl.TPS),
			pgEv, stEv, fmt.Sprintf("%.2f", r.Ratio)})
		if r.Clients == 16 && r.Ratio < appendTarget {
			misses = append(misses, r.Name())
		}
	}
	header := []string{"row", "pgbench TPS", "stormctl TPS", "pgbench ev/s", "stormctl ev/s", "ratio stormctl/pgbench"}
	if err := table.Write(w, style, header, rows); err != nil {
		return err
	}
	c := res.Config
	if _, err := fmt.Fprintf(w, "\nPostgreSQL %s, pgbench %s; medians of %d rounds of %ds per side, sides alternating; ratio = median of the rounds' stormctl/pgbench in committed events/s (TPS for one-event rows).\n",
		res.Server, res.Pgbench, c.Rounds, int((c.Duration+time.Second-1)/time.Second)); err != nil {
		return err
	}
	if len(misses) > 0 {
		// Each name has commas of its own but ends in "c=N", so ", " still
		// separates them; %v would run them together with bare spaces.
		if _, err := fmt.Fprintf(w, "Below the %.2f target at 16 clients: %s\n", appendTarget, strings.Join(misses, ", ")); err != nil {
			return err
		}
	}
	return nil
}

// writeBenchForensics writes the forensics benchmark: a row per side, then
// how it was measured and what forensics found.
func writeBenchForensics(w io.Writer, res *bench.ForensicsResult, style table.Style) error {
	var rows [][]string
	for _, s := range res.Sides {
		rows = append(rows, []string{fmt.Sprintf("%d / %d", res.Rows, res.Totals.Runs), s.Name, fmt.Sprintf("%d ms", s.Median.Milliseconds()),
			fmt.Sprintf("%.2f", s.Ratio), bench.MiB(s.PeakHeap), bench.MiB(s.PeakRSS)})
	}
	header := []string{"events / runs", "side", "median wall time", "ratio to (a)", "peak Go heap", "peak RSS"}
	if err := table.Write(w, style, header, rows); err != nil {
		return err
	}
	tt := res.Totals
	_, err := fmt.Fprintf(w, "\nPostgreSQL %s; medians of %d rounds, sides in rotating order; ratio = median of the rounds' side/(a). "+
		"Loaded in %.0f s (%d transactions of %d events, %d loaders, %d pairs of transactions committed out of id order on purpose); "+
		"forensics found %d displaced events, %d inverted pairs, %d without commit time. Targets: (b) within 2x of (a), within 1 GiB.\n",
		res.Server, res.Config.Rounds, res.Load.Seconds, res.Load.Transactions, res.Config.Batch, res.Config.Loaders,
		res.Load.Swapped, tt.Displaced, tt.InvertedPairs, tt.WithoutCommitTS)
	return err
}
