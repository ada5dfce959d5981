package cli

import (
	"context"
	"strings"

	"github.com/spf13/cobra"
	"github.com/stormctl/stormctl/reports"
	"github.com/stormctl/stormctl/reports/gate"
)

// GateOptions are the gate command's options.
type GateOptions struct {
	IO     *IOStreams
	Dir    string
	Format Format
	// Config holds the rules as given (before defaults).
	Config gate.Config
	// Baseline is the storm --no-worse compares against.
	Baseline string
}

// NewCmdGate returns `stormctl gate`. runF replaces runGate in tests.
func NewCmdGate(f *Factory, runF func(context.Context, *GateOptions) error) *cobra.Command {
	opts := &GateOptions{IO: f.IO}
	var maxRules []string
	var infraRate, minDecided float64
	cmd := &cobra.Command{
		Use:   "gate DIR",
		Short: "Fail (exit 1) when a stored storm breaks the given rules",
		Long: `Check a stored storm against rules and exit 1 when one is broken: one line
per broken rule and cell on stdout, then nothing else; exit 0 with one line
"gate passed: N cells, M rules; <calibration>" on stdout otherwise. Malformed
artifacts exit 2 (a gate never passes on what it could not read).

Rules:
` + helpRow("--max KEY=N", 28, "at most N runs of KEY per cell, repeatable; KEY is an outcome, corrupted+silent or class:NAME for a root-cause class (see explain): "+strings.Join(gate.MaxKeys(), ", ")) + `
  --conditions GLOB,...     apply the rules only to cells whose condition
                            matches a glob (* any text, ? one character);
                            narrows every rule but --control-clean and
                            calibration
  --control-clean           every control cell, under every condition: 0
                            corrupted, 0 silent, 0 gap (a dirty control means
                            the harness is broken, whatever the condition)
  --require-rejections      every cell has rejections > 0 (the control
                            scenario, which has no contention, aside)
  --require-true-positives  every cell has true positives > 0 (the control
                            aside); verdicts not computed fail it
  --max-infra-rate RATE     infra runs / runs per cell at most RATE
  --baseline DIR --no-worse no cell is "worse" than in DIR by compare's test

With no rule given the default is:
  --conditions 'seq*' --max corrupted=0 --max silent=0 --max gap=0 --max stuck=0 --control-clean
(a --conditions given alone keeps its globs with the default rules).
--control-clean also fails a control cell with stuck runs: a run that never
ended is no evidence the control is clean.

Evidence is always checked, whatever the rules: every gated cell (the
narrowed cells, and the control cells under --control-clean) needs at least
--min-decided of its runs decided (completed, corrupted, silent, gap or
hole), and at least one; a cell of stuck, failed or infra runs fails with
"not enough evidence". Otherwise infra runs never count as failures of
other rules.
Calibration is always checked: a storm with legacy cells (condition main*)
that all found nothing (0 corrupted, 0 silent, 0 gap) is "uncalibrated" — it
could not see the race — and the gate fails; a storm with no legacy cells
makes no calibration claim.
Completeness is always checked: a partial storm fails (exit 1) whatever the
rules, with a line "partial: ..." for each thing it misses, before any other
line: a shard merge was not given (storm.json's merged.missing), a shard that
stopped early (merged.incomplete: its counts, and how to finish it), and the
runs missing when a cell has fewer than storm.json's config.runs (in a
shard's directory, the runs its shard owns), as an interrupted storm has. A
storm.json that does not say its runs per cell cannot be shown whole and
fails too. Under --no-worse a partial baseline fails the gate as well: a
storm missing runs is no evidence to compare with. --format json carries
them as "partial" and "baseline_partial".

--only-whole checks completeness alone (no rules, no evidence or
calibration check): exit 0 when the storm holds every run it planned, 1
with its "partial: ..." lines when not. It picks a baseline: the GitHub
Action skips a base branch's partial storm for the newest whole one.`,
		Example: `  # the default rules: seq* cells clean, the control clean, calibrated
  stormctl gate storms/20261202-141100

  # explicit rules
  stormctl gate storms/pr --conditions 'seq*' --max corrupted+silent=0 --control-clean \
    --require-rejections --max-infra-rate 0.05

  # no seq* cell worse than main's storm
  stormctl gate storms/pr --conditions 'seq*' --baseline storms/main --no-worse

  # is this storm whole enough to be a baseline?
  stormctl gate storms/main --only-whole`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Dir = args[0]
			for _, s := range maxRules {
				r, err := gate.ParseMaxRule(s)
				if err != nil {
					return &UsageError{Err: err}
				}
				opts.Config.Max = append(opts.Config.Max, r)
			}
			if cmd.Flags().Changed("max-infra-rate") {
				opts.Config.MaxInfraRate = &infraRate
			}
			if cmd.Flags().Changed("min-decided") && opts.Config.OnlyWhole {
				return usage("--only-whole checks that the storm is whole and nothing else: drop --min-decided (or drop --only-whole)")
			}
			if cmd.Flags().Changed("min-decided") {
				opts.Config.MinDecided = &minDecided
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return runGate(cmd.Context(), opts)
		},
	}
	fl := cmd.Flags()
	c := &opts.Config
	fl.StringSliceVar(&maxRules, "max", nil, "at most N runs of KEY per cell: KEY=N, KEY one of "+strings.Join(gate.MaxKeys(), ", ")+" (repeatable)")
	fl.StringSliceVar(&c.Conditions, "conditions", nil, "apply the rules only to cells whose condition matches one of these globs")
	fl.BoolVar(&c.ControlClean, "control-clean", false, "every control cell: 0 corrupted, 0 silent, 0 gap")
	fl.BoolVar(&c.RequireRejections, "require-rejections", false, "every cell (the control aside) rejected at least one write")
	fl.BoolVar(&c.RequireTruePositives, "require-true-positives", false, "every cell (the control aside) has a true-positive rejection")
	fl.Float64Var(&infraRate, "max-infra-rate", 0, "at most this rate of infra runs per cell, e.g. 0.05")
	fl.Float64Var(&minDecided, "min-decided", reports.DefaultMinDecided, "every gated cell has at least this share of its runs decided (completed, corrupted, silent, gap, hole), and at least one; stuck, failed and infra runs decide nothing")
	fl.BoolVar(&c.NoWorse, "no-worse", false, "no cell is worse than in --baseline")
	fl.StringVar(&opts.Baseline, "baseline", "", "baseline storm directory for --no-worse")
	fl.BoolVar(&c.OnlyWhole, "only-whole", false, "check only that the storm is whole (every planned run recorded, every shard merged), no rule: picks a baseline")
	addFormatFlag(cmd, &opts.Format, map[Format]string{FormatTable: "plain lines"})
	return cmd
}

func runGate(_ context.Context, opts *GateOptions) error {
	cfg := opts.Config.Defaults()
	if err := cfg.Validate(); err != nil {
		return &UsageError{Err: err}
	}
	switch {
	case cfg.NoWorse && opts.Baseline == "":
		return usage("--no-worse needs --baseline DIR (the storm to compare against)")
	case opts.Baseline != "" && !cfg.NoWorse:
		return usage("--baseline is used only by --no-worse: add --no-worse, or drop --baseline")
	}
	st, loadErr := loadStorm(opts.IO, "gate", opts.Dir)
	if st == nil {
		return loadErr
	}
	var base *gate.Storm
	if opts.Baseline != "" {
		b, err := loadStorm(opts.IO, "gate", opts.Baseline)
		if b == nil {
			return err
		}
		if loadErr == nil {
			loadErr = err
		}
		base = &gate.Storm{Summary: b.Summary, Partial: b.Partial()}
	}
	res := gate.Check(gate.Storm{Summary: st.Summary, Partial: st.Partial()}, base, cfg)
	if loadErr != nil {
		// What could be read is still gated and printed, but never passes.
		res.Broken = append(res.Broken, gate.Breach{Rule: gate.RuleMalformed,
			Reason: "some artifacts could not be read (stderr names them): a gate never passes on what it could not read"})
		res.Passed = false
	}
	if err := opts.Format.Print(opts.IO.Out, res); err != nil {
		return err
	}
	switch {
	case loadErr != nil:
		return loadErr
	case !res.Passed:
		return ErrGateFailed
	}
	return nil
}
