package cli

import (
	"context"
	"errors"

	"github.com/spf13/cobra"

	"github.com/stormctl/stormctl/internal/storm/stormdir"
	"github.com/stormctl/stormctl/internal/tools/fidelity"
	"github.com/stormctl/stormctl/reports/compare"
)

// CompareOptions are the compare command's options.
type CompareOptions struct {
	IO     *IOStreams
	Base   string
	Head   string
	Format Format
}

// NewCmdCompare returns `stormctl compare`. runF replaces runCompare in tests.
func NewCmdCompare(f *Factory, runF func(context.Context, *CompareOptions) error) *cobra.Command {
	opts := &CompareOptions{IO: f.IO}
	cmd := &cobra.Command{
		Use:   "compare BASE HEAD",
		Short: "Compare two stored storms cell by cell, with intervals, p-values and verdicts",
		Long: `Compare two stored storms cell by cell (matched by world, scenario and
condition; a cell on one side only is listed as "only in base" or "only in
head"). For the corrupted rate and the corrupted+silent rate, each side's
count and rate with its 95% Wilson interval, the difference (head − base, in
percentage points), the two-sided Fisher exact test p-value and the runs per
cell needed to detect that difference at p < 0.05 with 80% power (two-
proportion normal approximation; "—" when the difference is 0). Rates are
over runs less infra runs (an unreachable store measured nothing). Each
side's runs, stuck and infra runs are shown as "base / head": those runs
decided nothing.

The verdict per cell: "worse" when either rate is higher in head with
p < 0.05, "better" when either is lower with p < 0.05 and neither is worse,
else "no evidence". Both storms are read as ` + "`stormctl report`" + ` reads them.

When HEAD ran under --nemesis and BASE without, a second table counts the
runs the faults misclassified per cell: a run a fault overlapped that ended
neither completed nor infra with an outcome of a kind its cell never had in
BASE (corrupted, silent, gap and hole are one kind; under the target
condition, ` + fidelity.Target + `, any of them counts), or an infra run no
fault overlapped.`,
		Example: `  stormctl compare storms/base storms/head
  stormctl compare storms/base storms/head --format markdown >> "$GITHUB_STEP_SUMMARY"
  stormctl compare storms/postgres storms/postgres-nemesis   # misclassified under faults
  stormctl compare storms/base storms/head --format json | jq '.cells[] | select(.verdict == "worse")'`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Base, opts.Head = args[0], args[1]
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return runCompare(cmd.Context(), opts)
		},
	}
	addFormatFlag(cmd, &opts.Format, nil)
	return cmd
}

func runCompare(_ context.Context, opts *CompareOptions) error {
	base, baseErr := loadStorm(opts.IO, "compare", opts.Base)
	if base == nil {
		return baseErr
	}
	head, headErr := loadStorm(opts.IO, "compare", opts.Head)
	if head == nil {
		return headErr
	}
	if err := opts.Format.Print(opts.IO.Out, compareStorms(base, head)); err != nil {
		return err
	}
	if err := errors.Join(baseErr, headErr); err != nil {
		return &UsageError{Err: err}
	}
	return nil
}

// compareStorms compares two stored storms as compare prints them: cell by
// cell, each side named by its directory, and the runs a nemesis
// misclassified when head ran under one and base did not.
func compareStorms(base, head *stormdir.Stored) *compare.Comparison {
	cmp := compare.Compare(base.Summary, head.Summary)
	cmp.Base, cmp.Head = base.Dir, head.Dir
	cmp.CountMisclassified(len(base.Nemesis) > 0, len(head.Nemesis) > 0, func(cond string) bool { return cond == fidelity.Target })
	return cmp
}
