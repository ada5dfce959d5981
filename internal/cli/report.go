package cli

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/stormctl/stormctl/internal/storm/stormdir"
	"github.com/stormctl/stormctl/reports/table"
)

// ReportOptions are the report command's options.
type ReportOptions struct {
	IO     *IOStreams
	Dir    string
	Format Format
}

// NewCmdReport returns `stormctl report`. runF replaces runReport in tests.
func NewCmdReport(f *Factory, runF func(context.Context, *ReportOptions) error) *cobra.Command {
	opts := &ReportOptions{IO: f.IO}
	cmd := &cobra.Command{
		Use:   "report DIR",
		Short: "Re-render a stored storm's table without re-running it",
		Long: `Re-render a stored storm: the summary is rebuilt from runs.jsonl (one record
per run) in the cell order of storm.json, so it shows the numbers the storm
printed, never what summary.json alone claims. When summary.json exists and
counts other runs, stderr says so.

Malformed artifacts (a cut-off line of runs.jsonl, an unknown schema version
in storm.json or summary.json, a value of the wrong type anywhere in
storm.json, as storm --resume refuses it) are named with their file and line
on stderr and make stormctl exit 2; what could be read is still printed.`,
		Example: `  stormctl report storms/20261202-141100
  stormctl report storms/20261202-141100 --format markdown >> "$GITHUB_STEP_SUMMARY"
  stormctl report storms/20261202-141100 --format json | jq '.cells[] | {condition, corrupted}'`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Dir = args[0]
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return runReport(cmd.Context(), opts)
		},
	}
	addFormatFlag(cmd, &opts.Format, nil)
	return cmd
}

func runReport(_ context.Context, opts *ReportOptions) error {
	st, err := loadStorm(opts.IO, "report", opts.Dir)
	if st == nil {
		return err
	}
	if rerr := opts.Format.Print(opts.IO.Out, table.Summary{Summary: st.Summary}); rerr != nil {
		return rerr
	}
	return err
}

// loadStorm reads a storm directory back for report, compare, gate and
// fidelity --from (stormdir.LoadStorm: storm.json read whole, as --resume
// reads it). It prints the notes (summary.json disagreeing with runs.jsonl)
// on stderr and returns the storm with a *UsageError naming every
// malformed artifact, or nil and the error when there is nothing to
// report.
func loadStorm(io *IOStreams, cmd, dir string) (*stormdir.Stored, error) {
	st, err := stormdir.LoadStorm(dir)
	if st == nil {
		return nil, &UsageError{Err: err}
	}
	for _, n := range st.Notes {
		fmt.Fprintf(io.ErrOut, "%s: %s: %s\n", cmd, dir, n)
	}
	if st.Shard != "" {
		fmt.Fprintf(io.ErrOut, "%s: %s is shard %s of a storm: its counts are of that shard's runs only (stormctl merge combines shards)\n", cmd, dir, st.Shard)
	}
	if err != nil {
		return st, &UsageError{Err: fmt.Errorf("%s: some artifacts are malformed (what could be read is used): %w", dir, err)}
	}
	return st, nil
}
