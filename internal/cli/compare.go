package cli

import (
	"context"
	"errors"
	"slices"
	"strings"

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
	// BaseCondition and HeadCondition keep one condition's cells of each
	// side ("": all of them): with one storm given twice, two conditions
	// of it compared cell by cell.
	BaseCondition, HeadCondition string
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
fault overlapped.

--base-condition and --head-condition keep one condition's cells of each
side: give one storm twice to compare two of its conditions, world by world
and scenario by scenario (a condition the storm does not hold is refused).`,
		Example: `  stormctl compare storms/base storms/head
  stormctl compare storms/base storms/head --format markdown >> "$GITHUB_STEP_SUMMARY"
  stormctl compare storms/postgres storms/postgres-nemesis   # misclassified under faults
  stormctl compare storms/base storms/head --format json | jq '.cells[] | select(.verdict == "worse")'
  stormctl compare storms/contracts storms/contracts --base-condition main --head-condition single-orchestrator`,
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
	cmd.Flags().StringVar(&opts.BaseCondition, "base-condition", "", "keep only this condition's cells of BASE")
	cmd.Flags().StringVar(&opts.HeadCondition, "head-condition", "", "keep only this condition's cells of HEAD")
	return cmd
}

// keepCondition narrows a stored storm to one condition's cells ("": as it
// is), refusing a condition it does not hold.
func keepCondition(st *stormdir.Stored, flag, cond string) error {
	if cond == "" {
		return nil
	}
	held := st.Summary.Conditions()
	if !slices.Contains(held, cond) {
		return usage("--%s %s: %s holds no cell of it (it holds %s)", flag, cond, st.Dir, strings.Join(held, ", "))
	}
	sum := *st.Summary
	sum.Cells = nil
	for _, c := range st.Summary.Cells {
		if c.Condition == cond {
			sum.Cells = append(sum.Cells, c)
		}
	}
	st.Summary = &sum
	return nil
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
	if err := keepCondition(base, "base-condition", opts.BaseCondition); err != nil {
		return err
	}
	if err := keepCondition(head, "head-condition", opts.HeadCondition); err != nil {
		return err
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
