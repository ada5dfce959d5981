package cli

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/stormctl/stormctl/internal/storm/stormdir"
	"github.com/stormctl/stormctl/reports/merge"
	"github.com/stormctl/stormctl/reports/table"
)

// MergeOptions are the merge command's options.
type MergeOptions struct {
	IO     *IOStreams
	Dirs   []string
	Out    string
	Format Format
}

// NewCmdMerge returns `stormctl merge`. runF replaces runMerge in tests.
func NewCmdMerge(f *Factory, runF func(context.Context, *MergeOptions) error) *cobra.Command {
	opts := &MergeOptions{IO: f.IO}
	cmd := &cobra.Command{
		Use:   "merge DIR... --out DIR",
		Short: "Combine the shards of one storm (storm --shard i/n) into one storm directory",
		Long: `Combine shard directories (each from storm --shard i/n) into one storm
directory: storm.json (the common parameters, the shards merged), runs.jsonl,
history.jsonl, events/, summary.json and summary.md. The merged table is
printed; stderr says, per cell, that the merged run counts (read back from
--out) equal the sum of the shards'.

Refused (exit 2, nothing written): a directory that is not a shard, the same
shard twice, shards of different storms (any difference in storm.json's
config apart from --shard, --out and --keep: seed, runs, conditions, latency,
...; or in the build version, conditions or cells), a run of an index its
shard does not own, a run id found in two shards, malformed artifacts, and a
non-empty --out.

A partial storm is merged all the same, so that what was measured is kept,
and said on stderr: a shard not given is merged around (storm.json's
merged.missing); a shard that holds fewer runs of a cell than it owns (it
stopped early: an error, a kill, a lost machine) is merged with what it
holds, named per shard with its counts and how to finish it (storm --resume
DIR), and recorded in storm.json's merged.incomplete. Either way merge
exits 0 and its last line says the merged storm is partial and how many
runs it is missing; gate never passes such a storm, and comment says it is
partial.`,
		Example: `  stormctl storm --runs 24 --shard 1/2 --out storms/pr-1
  stormctl storm --runs 24 --shard 2/2 --out storms/pr-2
  stormctl merge storms/pr-1 storms/pr-2 --out storms/pr
  stormctl merge storms/pr-* --out storms/pr --format markdown`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Dirs = args
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return runMerge(cmd.Context(), opts)
		},
	}
	cmd.Flags().StringVar(&opts.Out, "out", "", "directory of the merged storm (must not exist, or be empty)")
	addFormatFlag(cmd, &opts.Format, nil)
	return cmd
}

// creatable checks that dir is, or can be made, a directory: its nearest
// existing ancestor is a directory.
func creatable(dir string) error {
	for p := filepath.Clean(dir); ; p = filepath.Dir(p) {
		fi, err := os.Stat(p)
		switch {
		case err == nil && !fi.IsDir():
			return fmt.Errorf("%s is not a directory", p)
		case err == nil:
			return nil
		case !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, syscall.ENOTDIR):
			return err
		case p == filepath.Dir(p):
			return nil
		}
	}
}

func runMerge(_ context.Context, opts *MergeOptions) error {
	if opts.Out == "" {
		return usage("merge needs --out DIR: the directory of the merged storm")
	}
	if err := creatable(opts.Out); err != nil {
		return usage("--out %s: %w", opts.Out, err)
	}
	var shards []stormdir.ShardDir
	for _, d := range opts.Dirs {
		m, err := stormdir.ReadMeta(d)
		if err != nil {
			return usage("cannot merge: %w", err)
		}
		shards = append(shards, stormdir.ShardDir{Dir: d, Meta: m})
	}
	meta, err := stormdir.MergeMeta(shards, opts.Out)
	if err != nil {
		return usage("cannot merge: %w", err)
	}
	if len(meta.Merged.Missing) > 0 {
		fmt.Fprintf(opts.IO.ErrOut, "merge: warning: shard %s not given: the merged storm has fewer runs per cell than --runs %d\n",
			strings.Join(meta.Merged.Missing, ", "), meta.Config.Runs)
	}
	slices.SortFunc(shards, func(a, b stormdir.ShardDir) int { return a.Meta.Config.Shard.Index - b.Meta.Config.Shard.Index })
	var in []merge.Shard
	for _, s := range shards {
		sh := s.Meta.Config.Shard
		in = append(in, merge.Shard{Dir: s.Dir, Name: sh.String(), Owns: sh.Owns})
	}
	res, err := merge.Merge(opts.Out, meta, meta.Cells, in, stormdir.LoadStorm)
	if res != nil {
		for _, n := range res.Notes {
			fmt.Fprintf(opts.IO.ErrOut, "merge: %s\n", n)
		}
	}
	var oe *merge.OutputError
	switch {
	case errors.As(err, &oe):
		return err // not the shards' fault: exit 4
	case err != nil:
		return &UsageError{Err: err}
	}
	for _, in := range res.Incomplete {
		fmt.Fprintf(opts.IO.ErrOut, "merge: warning: %s\n", in.Reason())
	}
	if err := opts.Format.Print(opts.IO.Out, table.Summary{Summary: res.Summary}); err != nil {
		return err
	}
	fmt.Fprintf(opts.IO.ErrOut, "merge: %d shards (%s) into %s; checked: every cell's runs equal the sum of its shards'\n",
		len(shards), strings.Join(meta.Merged.Shards, ", "), opts.Out)
	for _, l := range res.CountLines() {
		fmt.Fprintf(opts.IO.ErrOut, "  %s\n", l)
	}
	if p := res.Partial; p != nil {
		fmt.Fprintf(opts.IO.ErrOut, "merge: warning: the merged storm is partial: %s; gate will not pass it\n", p.Headline())
	}
	return nil
}
