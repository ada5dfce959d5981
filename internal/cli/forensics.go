package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/stormctl/stormctl/forensics"
	"github.com/stormctl/stormctl/internal/analysis/explain"
	"github.com/stormctl/stormctl/internal/analysis/pipeline"
	"github.com/stormctl/stormctl/internal/engines"
	"github.com/stormctl/stormctl/internal/eventlog"
	"github.com/stormctl/stormctl/internal/history"
	"github.com/stormctl/stormctl/internal/prodlog"
	"github.com/stormctl/stormctl/internal/storm/stormdir"
	"github.com/stormctl/stormctl/reports"
	"github.com/stormctl/stormctl/reports/table"
)

// ForensicsOptions are the forensics command's options.
type ForensicsOptions struct {
	// Engines are the engines a stored storm may name.
	Engines *engines.Registry
	IO      *IOStreams
	Dir     string
	Format  Format
	// Pairs bounds the type-pair rows printed per cell in table format.
	Pairs int
	// Reclassify computes every run's class again with this build's
	// explainer, replacing the classes an older build recorded.
	Reclassify bool
	// Attach mode: read an existing Workflow DevKit world-postgres database.
	PGURL  string
	Schema string
	RunID  string
	Since  string
	// DeriveLatency is where to write a latency profile derived from the
	// windows of the storm's cells the real runtime ran (--derive-latency).
	DeriveLatency string
}

// NewCmdForensics returns `stormctl forensics`.
func NewCmdForensics(f *Factory, runF func(context.Context, *ForensicsOptions) error) *cobra.Command {
	opts := &ForensicsOptions{IO: f.IO, Engines: f.Engines}
	cmd := &cobra.Command{
		Use:   "forensics DIR | --pg-url URL",
		Short: "Commit-order, window, read and density forensics of a stored storm",
		Long: `Re-read a storm directory and report, per cell: commit-order inversions
(id or seq order against the commit order the writers observed), which event
types overtook which (count, mean and max delta), mint-to-commit windows per
event type (p50/p90/p99/max), non-prefix reads, cursor skips, density
(gaps, dup seqs: two events at one position) and dup creates (a step, wait
or hook the final log creates more than once for one correlation id or
token: the world broke its uniqueness contract) and dup ends (terminal
events beyond a run's first: the world ended a run twice). Each run is read by its condition's scheme, as the
storm's storm.json records it, and the cells come in storm.json's order, as
report lists them. Nothing is re-run; a newer checker can analyse an old
storm. Runs recorded without a root-cause class get one;
--reclassify computes every run's class again with this build's explainer
(a class an older build recorded is replaced in summary.json, summary.md
and the counts, and stderr says how many changed).

With --pg-url it attaches to an existing Workflow DevKit world-postgres
database instead and reads <schema>.workflow_events in a READ ONLY
transaction. The report's first line names the layout found and why: seq (a
seq column orders each run), slot (spec 6/7: every id is a slot id, so
positions order each run, and holes, noop seals and seal races are counted)
or ulid (ids order the log; a mix of slot ids and others is read as ulid,
naming the runs with slot ids). Per run, id order against
commit order (pg_xact_commit_timestamp(xmin), ties broken by xmin then id),
displaced events, inverted pairs, the overtaking/overtaken type pairs, and
mint-to-commit windows (mint time = the ULID's timestamp). Rows written while
track_commit_timestamp was off have no commit time: they are counted, never
guessed.

--derive-latency PATH writes a latency profile (storm --latency file:PATH)
derived from the mint-to-commit windows of the cells the real runtime ran
(storm --engine devkit): per event type a log-normal with the measured
median, its p90 where the measured p90 is, clipped at the measured max, and
a row per class (decision, fact) pooled over its types. Cells the model
ran are not used: their windows are the profile the model drew.`,
		Example: `  stormctl forensics storms/20261202-141100
  stormctl forensics storms/20261202-141100 --format json | jq '.cells[0].pairs[:3]'
  # classes as this build's explainer sees them
  stormctl forensics storms/20261202-141100 --reclassify
  # an application's own database, read-only
  stormctl forensics --pg-url postgres://app@db:5432/app --schema workflow --since 2026-07-29T00:00:00Z
  stormctl forensics --pg-url "$DATABASE_URL" --run wrun_01J... --format json
  # the model's latency profile, derived from the real runtime's windows
  stormctl forensics storms/fidelity-20261204/devkit-postgres/real --derive-latency real.json
  stormctl storm --world postgres --latency file:real.json`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			switch {
			case len(args) == 1 && opts.PGURL != "":
				return usage("give either a storm directory or --pg-url, not both")
			case len(args) == 0 && opts.PGURL == "":
				return usage("forensics needs a storm directory or --pg-url URL")
			case len(args) == 1:
				opts.Dir = args[0]
			}
			if opts.DeriveLatency != "" && opts.PGURL != "" {
				return usage("--derive-latency reads a storm directory's cells, not --pg-url")
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			if opts.PGURL != "" {
				return runAttach(cmd.Context(), opts)
			}
			return runForensics(cmd.Context(), opts)
		},
	}
	addFormatFlag(cmd, &opts.Format, nil)
	cmd.Flags().IntVar(&opts.Pairs, "pairs", 6, "type-pair rows per cell in table output")
	cmd.Flags().BoolVar(&opts.Reclassify, "reclassify", false, "compute every run's root-cause class again with this build's explainer, replacing recorded ones")
	cmd.Flags().StringVar(&opts.PGURL, "pg-url", "", "attach: the forensics of "+prodlog.PgURLHelp)
	cmd.Flags().StringVar(&opts.Schema, "schema", "workflow", "schema of workflow_events (attach mode)")
	cmd.Flags().StringVar(&opts.RunID, "run", "", "only this run (attach mode)")
	cmd.Flags().StringVar(&opts.Since, "since", "", "only events created at or after this RFC 3339 time (attach mode)")
	cmd.Flags().StringVar(&opts.DeriveLatency, "derive-latency", "", "write a latency profile (storm --latency file:PATH) derived from the windows of the cells the real runtime ran")
	return cmd
}

// cellForensics is the forensics of one cell: what the tally of its runs
// came to, every type pair listed.
type cellForensics struct {
	history.CellKey
	Runs     int                                `json:"runs"`
	Order    forensics.CommitOrder              `json:"commit_order"`
	Pairs    []forensics.PairCount              `json:"pairs"`
	Windows  map[eventlog.Type]forensics.Window `json:"windows"`
	Findings forensics.RunFindings              `json:"findings"`
	// Classes counts the cell's runs per root-cause class (as recorded,
	// or computed now for runs recorded without one); Recovered the
	// divergences recovery replays cleared.
	Classes   map[string]int `json:"classes,omitempty"`
	Recovered int            `json:"recovered_divergences"`
}

type forensicsReport struct {
	Dir   string           `json:"dir"`
	Cells []*cellForensics `json:"cells"`
	// maxPairs bounds the type-pair rows per cell in a table.
	maxPairs int
	// classesFrom says, on each classes line, which classes it counts:
	// runs.jsonl's as recorded (where a --reclassify's went to
	// summary.json only) or this build's.
	classesFrom string
}

func runForensics(ctx context.Context, opts *ForensicsOptions) error {
	// The scheme that orders each run's log is its condition's, as
	// storm.json records it: without it the findings cannot be computed.
	dir, err := stormdir.Open(opts.Dir)
	if err != nil {
		return &UsageError{Err: err}
	}
	meta := dir.Meta
	runs, runsErr := dir.Runs()
	if runs == nil && runsErr != nil {
		return &UsageError{Err: runsErr}
	}
	opsByRun, histErr := dir.History()
	var problems []error
	for _, e := range []error{runsErr, histErr} {
		if e != nil {
			problems = append(problems, e)
		}
	}
	// Cells come in storm.json's order, as report, the storm and its
	// summary list them (a cell storm.json lacks comes after them, as its
	// runs are met); only cells with runs are printed.
	tally := reports.NewTally(reports.NewSummary(meta.Cells))
	cls := pipeline.NewReclassifier(opts.Dir, opts.Reclassify)
	for i := range runs {
		if ctx.Err() != nil {
			return ErrInterrupted
		}
		r := &runs[i]
		if _, ok := meta.Conditions[r.Condition]; !ok {
			problems = append(problems, fmt.Errorf("%s: condition %q of run %s is not in its conditions: the run is left out", stormdir.FileStorm, r.Condition, r.RunID))
			continue
		}
		final, err := dir.Events(r.CellKey, r.RunID)
		if err != nil {
			problems = append(problems, err)
		}
		run := pipeline.Stored(*r, final, opsByRun[r.RunID])
		run.Classify = pipeline.ClassifyMissing
		if opts.Reclassify {
			run.Classify = pipeline.ClassifyExplained
		}
		// A run of a scenario this build does not know keeps its class:
		// its findings still count.
		cell, err := pipeline.StoredCell(meta, *r)
		if err != nil && run.Classifies() {
			problems = append(problems, err)
		}
		res := pipeline.Process(cell, run)
		if ex := res.Explained; ex != nil {
			if err := cls.Keep(r, ex); err != nil {
				problems = append(problems, err)
			}
		}
		rec := res.Record
		rec.Class, rec.Timeline = r.Class, r.Timeline
		tally.Add(rec, res.Analysis.Order, res.Analysis.Commits)
	}
	if opts.Reclassify {
		fmt.Fprintf(opts.IO.ErrOut, "forensics: %s: reclassified %d runs: %s\n", opts.Dir, cls.Computed, cls.ChangeLine())
	}
	if cls.Computed > 0 {
		if err := cls.Store(runs); err != nil {
			fmt.Fprintf(opts.IO.ErrOut, "forensics: %s: classes computed but not stored: %v\n", opts.Dir, err)
		}
	}
	tally.Finish()
	rep := forensicsReport{Dir: opts.Dir, maxPairs: opts.Pairs, classesFrom: classesFrom(opts.Reclassify, cls.Computed)}
	for _, k := range tally.Keys() {
		c := tally.Summary.Cell(k)
		cf := &cellForensics{CellKey: k, Runs: c.Runs, Order: tally.Order(k), Windows: c.Windows,
			Findings: c.RunFindings, Classes: c.Classes, Recovered: c.Recovered}
		if pairs := cf.Order.SortedPairs(); len(pairs) > 0 {
			cf.Pairs = pairs // none: null in JSON, as ever
		}
		rep.Cells = append(rep.Cells, cf)
	}
	if err := opts.Format.Print(opts.IO.Out, styled{&rep, rep.write}); err != nil {
		return err
	}
	if !opts.Reclassify {
		if n, err := classesDiffer(opts.Dir, tally.Summary); err != nil {
			fmt.Fprintf(opts.IO.ErrOut, "forensics: %s: summary.json could not be read (%v): the classes above are runs.jsonl's, not compared with what report and gate read\n", opts.Dir, err)
		} else if n > 0 {
			fmt.Fprintf(opts.IO.ErrOut, "forensics: %s: summary.json counts other classes than runs.jsonl records in %d cells (a --reclassify's): the classes above are runs.jsonl's; report and gate read summary.json's\n", opts.Dir, n)
		}
	}
	if opts.DeriveLatency != "" {
		if err := deriveLatency(opts, meta, tally.Summary); err != nil {
			return err
		}
	}
	if len(problems) > 0 {
		return &UsageError{Err: fmt.Errorf("some artifacts are malformed (the rest is reported above): %w", errors.Join(problems...))}
	}
	return nil
}

// write writes the cells' table, then per cell its classes, type pairs and
// windows, every table in style.
func (rep *forensicsReport) write(w io.Writer, style table.Style) error {
	var rows [][]string
	for _, c := range rep.Cells {
		f := c.Findings
		o := c.Order
		row := []string{c.CellKey.String(), fmt.Sprint(c.Runs), fmt.Sprint(o.Events), pct(o.Displaced, o.Events),
			fmt.Sprint(o.InvertedPairs), fmt.Sprint(o.WithoutCommitTS)}
		for _, col := range forensicsFindingColumns() {
			v := fmt.Sprint(col.Of(f))
			if col.Name == "non-prefix" {
				v = pct(f.NonPrefixReads, f.Reads) // of the reads, as the order columns are of the events
			}
			row = append(row, v)
		}
		rows = append(rows, row)
	}
	header := []string{"cell", "runs", "events", "displaced", "inverted pairs", "no commit ts"}
	for _, col := range forensicsFindingColumns() {
		header = append(header, col.Name)
	}
	if err := table.Write(w, style, header, rows); err != nil {
		return err
	}
	for _, c := range rep.Cells {
		if _, err := fmt.Fprintf(w, "\n%s\n", c.CellKey.String()); err != nil {
			return err
		}
		if line := classLine(c, rep.classesFrom); line != "" {
			if _, err := fmt.Fprintln(w, line); err != nil {
				return err
			}
		}
		if err := printPairsAndWindows(w, c.Pairs, c.Windows, style, rep.maxPairs); err != nil {
			return err
		}
	}
	return nil
}

// forensicsFindingColumns are the forensics table's columns of the cells'
// findings, declared once in forensics.FindingColumns.
func forensicsFindingColumns() []forensics.FindingColumn {
	return forensics.Columns("reads", "non-prefix", "cursor skips", "gaps", "dup seqs", "dup creates", "dup ends", "refused")
}

// printPairsAndWindows prints the type-pair table and the window table.
func printPairsAndWindows(w io.Writer, pairs []forensics.PairCount, windows map[eventlog.Type]forensics.Window, style table.Style, maxPairs int) error {
	ms := func(d time.Duration) string { return fmt.Sprintf("%.1fms", float64(d)/1e6) }
	if len(pairs) > 0 {
		var rows [][]string
		for i, p := range pairs {
			if i == maxPairs {
				break
			}
			rows = append(rows, []string{string(p.Overtaking), string(p.Overtaken), fmt.Sprint(p.Count), ms(p.MeanDelta), ms(p.MaxDelta)})
		}
		if err := table.Write(w, style, []string{"overtaking", "overtaken", "pairs", "mean delta", "max delta"}, rows); err != nil {
			return err
		}
	} else if _, err := fmt.Fprintln(w, "no commit-order inversions"); err != nil {
		return err
	}
	if len(windows) == 0 {
		_, err := fmt.Fprintln(w, "no mint-to-commit windows (no event knows both its mint and its commit time)")
		return err
	}
	types := make([]eventlog.Type, 0, len(windows))
	for typ := range windows {
		types = append(types, typ)
	}
	slices.Sort(types)
	var rows [][]string
	for _, typ := range types {
		win := windows[typ]
		rows = append(rows, []string{string(typ), fmt.Sprint(win.N), ms(win.P50), ms(win.P90), ms(win.P99), ms(win.Max)})
	}
	return table.Write(w, style, []string{"mint-to-commit", "n", "p50", "p90", "p99", "max"}, rows)
}

func pct(n, of int) string {
	if of == 0 {
		return fmt.Sprint(n)
	}
	return fmt.Sprintf("%d (%.1f%%)", n, 100*float64(n)/float64(of))
}

// classLine counts a cell's runs per class, in explain's order.
func classLine(c *cellForensics, from string) string {
	var parts []string
	for _, k := range explain.Classes() {
		if n := c.Classes[k]; n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, k))
		}
	}
	if len(parts) == 0 && c.Recovered == 0 {
		return ""
	}
	return fmt.Sprintf("classes (%s): %s; %d recovered divergences", from, orNone(strings.Join(parts, ", ")), c.Recovered)
}

// classesFrom names the classes a forensics run prints: this build's with
// --reclassify, else runs.jsonl's as recorded (computed now for the runs
// recorded without one).
func classesFrom(reclassify bool, computed int) string {
	switch {
	case reclassify:
		return "this build's"
	case computed > 0:
		return "runs.jsonl's, computed now where it has none"
	}
	return "runs.jsonl's"
}

// classesDiffer counts the cells whose classes in dir's summary.json are
// not the ones counted from runs.jsonl (sum): a --reclassify wrote its
// classes to summary.json only. An unreadable summary.json is an error:
// nothing was compared.
func classesDiffer(dir string, sum *reports.Summary) (int, error) {
	var stored reports.Summary
	if err := stormdir.ReadDocument(filepath.Join(dir, stormdir.FileSummary), &stored, func() int { return stored.Schema }); err != nil {
		return 0, err
	}
	n := 0
	for _, c := range stored.Cells {
		if c == nil {
			continue
		}
		var counted map[string]int
		if mine := sum.Cell(c.CellKey); mine != nil {
			counted = mine.Classes
		}
		if !maps.EqualFunc(nonZero(c.Classes), nonZero(counted), func(a, b int) bool { return a == b }) {
			n++
		}
	}
	return n, nil
}

// nonZero is m without its zero counts (nil and empty alike).
func nonZero(m map[string]int) map[string]int {
	out := map[string]int{}
	for k, v := range m {
		if v != 0 {
			out[k] = v
		}
	}
	return out
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}
