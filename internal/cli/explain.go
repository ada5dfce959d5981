package cli

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/stormctl/stormctl/internal/analysis/explain"
	"github.com/stormctl/stormctl/internal/analysis/pipeline"
	"github.com/stormctl/stormctl/internal/analysis/verdict"
	"github.com/stormctl/stormctl/internal/base/plural"
)

// ExplainOptions are the explain command's options.
type ExplainOptions struct {
	IO     *IOStreams
	Dir    string
	RunID  string
	Format Format
	// Timeline, when set, is an HTML file to write the run's timeline to.
	Timeline string
}

// NewCmdExplain returns `stormctl explain`. runF replaces runExplain in tests.
func NewCmdExplain(f *Factory, runF func(context.Context, *ExplainOptions) error) *cobra.Command {
	opts := &ExplainOptions{IO: f.IO}
	cmd := &cobra.Command{
		Use:   "explain DIR RUN",
		Short: "Say why one run of a stored storm went wrong, step by step",
		Long: `Explain one run of a stored storm from what was recorded of it: its history
of reads and appends (history.jsonl) and its final log (events/), never from
the outcome alone. It finds the offending event (the first event a reference
replay of the final log disagrees with; the empty slot of a hole or the gap of
a gap; the operation a stuck run waits on), who wrote it and what that writer
had read, and names a root-cause class:

` + explainClassesHelp() + `

It prints an Elle-style numbered narrative, whose last step says how the
event the engine's error names relates to the offending one; --format json
prints the whole explanation (offending event, writer, view and its pages,
missing events with who minted them and when they committed, the replays,
the event the engine's error names, the evidence).
Then it lists the run's rejections (the writes its fences, or on the devkit
engine its world, refused) by verdict, a line per kind of write with how many,
and the first one's writer, time and reason: true positive (admitted, the
replay would have diverged or acted otherwise), benign, unknown.
--timeline FILE writes a self-contained HTML timeline of the run (one lane
per actor, reads as bars, appends from mint to commit, the offending write
and the stale view in red), at most 2 MB.

A run that completed (or failed, or was infra on an unreachable store) has
nothing to explain: it is said so and explain exits 0. An infra run the
harness starved (its host process saturated for most of its life) is
explained as such: class starved, with its host's account. An unknown run or a malformed or partial storm
directory exits 2.`,
		Example: `  stormctl explain storms/20261202-141100 wrun_01M8XAJJ280489258ZKCJDT6A5
  stormctl explain storms/20261202-141100 wrun_01M8... --format json | jq .missing
  stormctl explain storms/20261202-141100 wrun_01M8... --timeline run.html`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Dir, opts.RunID = args[0], args[1]
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return runExplain(cmd.Context(), opts)
		},
	}
	addFormatFlag(cmd, &opts.Format, map[Format]string{FormatTable: "the narrative"})
	cmd.Flags().StringVar(&opts.Timeline, "timeline", "", "write the run's timeline as a self-contained HTML file")
	return cmd
}

func runExplain(_ context.Context, opts *ExplainOptions) error {
	sr, err := loadStoredRun(opts.Dir, opts.RunID)
	if err != nil {
		return err
	}
	run := pipeline.Stored(sr.Record, sr.Final, sr.Ops)
	run.Classify = pipeline.ClassifyAlways
	ex := pipeline.Process(sr.Cell, run).Explained
	if opts.Timeline != "" {
		if err := writeTimeline(opts.Timeline, ex); err != nil {
			return err
		}
	}
	return opts.Format.Print(opts.IO.Out, explanation{ex: ex.Explanation, rejections: sr.Record.Verdicts})
}

// writeTimeline writes the run's timeline to path.
func writeTimeline(path string, ex *pipeline.Explained) error {
	f, err := os.Create(path)
	if err != nil {
		return &UsageError{Err: fmt.Errorf("--timeline %s: %w", path, err)}
	}
	if err := ex.Render(f); err != nil {
		f.Close()
		return fmt.Errorf("write timeline %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("write timeline %s: %w", path, err)
	}
	return nil
}

// explanation prints one run's explanation: the narrative (table,
// markdown) or the whole explanation (json), then the run's rejections
// (the writes its fences or its world refused) with their verdicts.
type explanation struct {
	ex         explain.Explanation
	rejections []verdict.Judgement
}

// JSON writes the whole explanation, and the run's judged rejections.
func (e explanation) JSON(w io.Writer) error {
	return writeJSON(w, struct {
		explain.Explanation
		Rejections []verdict.Judgement `json:"rejections,omitempty"`
	}{e.ex, e.rejections})
}

// Table writes the run, its outcome and summary, then the steps and the
// evidence indented, a line each.
func (e explanation) Table(w io.Writer) error { return e.write(w, false) }

// Markdown writes the run and its class in bold, the steps, and the
// evidence in one line.
func (e explanation) Markdown(w io.Writer) error { return e.write(w, true) }

// write writes the narrative for a terminal, or in markdown when md.
func (e explanation) write(w io.Writer, md bool) error {
	ex := e.ex
	head, nothing := "%s %s %s", ": nothing to explain (only corrupted, silent, gap, hole and stuck runs get a class)\n"
	if md {
		head, nothing = "**%s** (%s, %s)", ": nothing to explain\n"
	}
	var b strings.Builder // never fails: w gets one checked write
	fmt.Fprintf(&b, head, ex.Run, ex.Cell, ex.Outcome)
	switch {
	case ex.Class == "":
		b.WriteString(nothing)
	case md:
		fmt.Fprintf(&b, ": **%s**\n\n%s\nevidence: %s\n", ex.Class, eachLine("", ex.Steps),
			strings.Join(append(ex.Evidence, ex.MissingEvidence...), "; "))
	default:
		fmt.Fprintf(&b, ": %s\n%s%s%s", ex.Summary, eachLine("  ", ex.Steps),
			eachLine("  evidence: ", ex.Evidence), eachLine("  missing evidence: ", ex.MissingEvidence))
	}
	writeRejections(&b, e.rejections, md)
	_, err := io.WriteString(w, b.String())
	return err
}

// writeRejections lists a run's rejections by verdict (true positives
// first, then unknown, then benign) and by what was refused: a line per
// kind with how many, and the first one's writer, time and reason.
func writeRejections(b *strings.Builder, js []verdict.Judgement, md bool) {
	if len(js) == 0 {
		return
	}
	tp, benign, unknown := verdict.Split(js)
	fmt.Fprintf(b, "\n%s: %d true positive, %d benign, %d unknown\n", plural.Count(len(js), "rejection"), tp, benign, unknown)
	type kind struct {
		v    verdict.Verdict
		what string
	}
	var order []kind
	groups := map[kind][]verdict.Judgement{}
	for _, j := range js {
		k := kind{v: j.Verdict}
		if w := j.Write; w != nil {
			k.what = string(w.Type) + " " + w.CorrelationID
		}
		if groups[k] == nil {
			order = append(order, k)
		}
		groups[k] = append(groups[k], j)
	}
	rank := map[verdict.Verdict]int{verdict.TruePositive: 0, verdict.Unknown: 1, verdict.Benign: 2}
	slices.SortStableFunc(order, func(a, c kind) int { return rank[a.v] - rank[c.v] })
	prefix := "  "
	if md {
		prefix = "- "
	}
	for _, k := range order {
		g := groups[k]
		reason := cmp.Or(g[0].Reason, "(no reason recorded)")
		fmt.Fprintf(b, "%s%s x%d, first by %s at %s: %s\n", prefix, k.v, len(g), g[0].Actor, g[0].At.UTC().Format("15:04:05.000"), reason)
	}
}

// eachLine is every x on a line of its own, after prefix.
func eachLine(prefix string, xs []string) string {
	var b strings.Builder
	for _, x := range xs {
		b.WriteString(prefix + x + "\n")
	}
	return b.String()
}

// explainClassesHelp lists every root-cause class with what it means, from
// explain's own table.
func explainClassesHelp() string {
	var rows []string
	for _, c := range explain.Classes() {
		rows = append(rows, helpRow(c, 18, explain.Describe(c)))
	}
	return strings.Join(rows, "\n")
}
