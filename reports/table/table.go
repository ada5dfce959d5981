package table

import (
	"fmt"
	"io"
	"maps"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/olekukonko/tablewriter"
	"github.com/olekukonko/tablewriter/renderer"
	"github.com/olekukonko/tablewriter/tw"

	"github.com/stormctl/stormctl/forensics"
	"github.com/stormctl/stormctl/internal/analysis/explain"
	"github.com/stormctl/stormctl/internal/base/plural"
	"github.com/stormctl/stormctl/reports"
)

// Style is how Write draws a table.
type Style int

// Styles of a table.
const (
	// Boxed is a table for a terminal, drawn with box characters.
	Boxed Style = iota
	// Right is Boxed with every row's cells aligned right (columns of
	// counts).
	Right
	// Markdown is a markdown table, for a PR or summary.md.
	Markdown
	// MarkdownCompact is a markdown table whose cells are not padded to
	// their column's width: a line per row as short as it can be (the
	// listings, and the one-line-per-cell result tables a markdown summary
	// starts with).
	MarkdownCompact
)

// Write draws header and rows as one table on w: every command's tables
// are drawn here. The header is printed as given (no upper-casing).
func Write(w io.Writer, style Style, header []string, rows [][]string) error {
	if style == MarkdownCompact {
		return writeCompact(w, header, rows)
	}
	opts := []tablewriter.Option{tablewriter.WithHeaderAutoFormat(tw.Off)}
	switch style {
	case Right:
		opts = append(opts, tablewriter.WithRowAlignment(tw.AlignRight))
	case Markdown:
		opts = append(opts, tablewriter.WithRenderer(renderer.NewMarkdown()))
	}
	t := tablewriter.NewTable(w, opts...)
	t.Header(header)
	for i, r := range rows {
		if err := t.Append(r); err != nil {
			return fmt.Errorf("table row %d: %w", i+1, err)
		}
	}
	if err := t.Render(); err != nil {
		return fmt.Errorf("draw the table: %w", err)
	}
	return nil
}

// writeCompact draws a MarkdownCompact table.
func writeCompact(w io.Writer, header []string, rows [][]string) error {
	var b strings.Builder
	line := func(cells []string) { b.WriteString("| " + strings.Join(cells, " | ") + " |\n") }
	line(header)
	b.WriteString("|" + strings.Repeat("---|", len(header)) + "\n")
	for _, r := range rows {
		line(r)
	}
	if _, err := io.WriteString(w, b.String()); err != nil {
		return fmt.Errorf("draw the table: %w", err)
	}
	return nil
}

// header is the table's columns; a summary with slot-scheme cells gets the
// hole outcome and the slot columns too. "dup seqs" are two events at one
// position of a positioned log (RunFindings.Duplicates), "dup creates" an
// entity created more than once under any scheme
// (RunFindings.DuplicateCreates).
func header(slots bool) []string {
	h := []string{
		"world", "scenario", "condition", "runs",
		"completed", "corrupted", "silent", "gap", "stuck", "failed", "infra",
		"rejections",
	}
	for _, c := range findingColumns() {
		h = append(h, c.Name)
	}
	if slots {
		h = append(h, "hole", "holes seen", "final holes", "seals", "sealed writes", "seal races", "fill p50/p99/max ms")
	}
	return h
}

func row(c *reports.Cell, slots bool) []string {
	n := strconv.Itoa
	r := []string{
		c.World, c.Scenario, c.Condition, n(c.Runs),
		n(c.Completed), n(c.Corrupted), n(c.Silent), n(c.Gap), n(c.Stuck), n(c.Failed), n(c.Infra),
		n(c.Rejections),
	}
	for _, col := range findingColumns() {
		r = append(r, n(col.Of(c.RunFindings)))
	}
	if slots {
		if f := c.Slot; f != nil {
			r = append(r, n(c.Hole), n(f.HolesSeen), n(f.FinalHoles), n(f.Seals), n(f.SealedWrites), n(f.SealRaces),
				fmt.Sprintf("%.0f/%.0f/%.0f", c.FillP50, c.FillP99, c.FillMax))
		} else {
			r = append(r, n(c.Hole), "-", "-", "-", "-", "-", "-")
		}
	}
	return r
}

// findingColumns are the storm table's columns of the cells' findings,
// declared once in forensics.FindingColumns.
func findingColumns() []forensics.FindingColumn {
	return forensics.Columns("reads", "non-prefix", "cursor skips", "inversions", "gaps", "dup seqs", "dup creates")
}

// hasSlots reports whether any cell ran under the slot scheme.
func hasSlots(s *reports.Summary) bool {
	for _, c := range s.Cells {
		if c.Slot != nil || c.Hole > 0 {
			return true
		}
	}
	return false
}

// slotNote summarizes a slot cell's holes and seals for its compact line.
func slotNote(c *reports.Cell) string {
	f := c.Slot
	if f == nil {
		return ""
	}
	by := ""
	for _, k := range slices.Sorted(maps.Keys(f.SealedBy)) {
		by += fmt.Sprintf(", %d by %s", f.SealedBy[k], k)
	}
	note := fmt.Sprintf(" (slots: %d holes seen, %d seals%s, %d sealed writes, %d final holes", f.HolesSeen, f.Seals, by, f.SealedWrites, f.FinalHoles)
	if len(f.FillMillis) > 0 {
		note += fmt.Sprintf(", fill p50 %.0f ms p99 %.0f ms max %.0f ms", c.FillP50, c.FillP99, c.FillMax)
	}
	if f.SealRaces > 0 {
		note += fmt.Sprintf(", %d SEAL RACES (a noop and a commit both visible)", f.SealRaces)
	}
	return note + ")"
}

// Summary is a storm's summary as the commands print it: Table for a
// terminal, Markdown for a PR (summary.md's text), and as JSON the summary
// itself (it embeds it: summary.json's document).
type Summary struct {
	*reports.Summary
}

// Table writes the table of every outcome and finding per cell, then one
// compact line per cell.
func (s Summary) Table(w io.Writer) error {
	if err := Write(w, Right, s.header(), s.rows()); err != nil {
		return err
	}
	return compactLines(w, s.Summary, "")
}

// header is the full table's columns: every outcome and finding, the slot
// columns when a cell ran the slot scheme, faulted when a fault overlapped a
// run.
func (s Summary) header() []string {
	h := withFaulted(header(hasSlots(s.Summary)), hasFaulted(s.Summary), "faulted")
	if hasHarness(s.Summary) {
		h = append(h, harnessHeader...)
	}
	return h
}

// rows are the full table's rows, a cell each.
func (s Summary) rows() [][]string {
	slots, faulted, harness := hasSlots(s.Summary), hasFaulted(s.Summary), hasHarness(s.Summary)
	var rows [][]string
	for _, c := range s.Cells {
		r := withFaulted(row(c, slots), faulted, FaultedNote(c))
		if harness {
			r = append(r, harnessRow(c)...)
		}
		rows = append(rows, r)
	}
	return rows
}

// harnessHeader are the harness-health columns of a storm with cells of
// an engine that reports its health (the devkit engine): how busy the
// hosts that ran a cell's runs were (their event loops' utilisation, the
// median run's median and the 99th percentile of the runs' 99th), the
// worst loop delay, the CPU seconds a run cost its host and stormctl,
// the share of the hosts' busy event-loop time that was stormctl's own recording, and the
// runs the harness starved.
var harnessHeader = []string{"host busy p50/p99", "loop delay p99 ms", "CPU-s a run host/stormctl", "recording", "starved"}

// harnessRow is a cell's harness-health cells ("-" for a cell without).
func harnessRow(c *reports.Cell) []string {
	h := c.Harness
	if h == nil {
		return []string{"-", "-", "-", "-", "-"}
	}
	return []string{
		wholePercent(h.BusyP50()) + "/" + wholePercent(h.BusyP99()),
		numberOrUnknown(h.DelayP99Ms()),
		fmt.Sprintf("%.1f/%.2f", h.HostCPUPerRun(), h.StormctlCPUPerRun()),
		percentOrUnknown(h.RecordingShare()),
		strconv.Itoa(h.Starved),
	}
}

// wholePercent is a share as a whole percentage, "?" when negative
// (unknown).
func wholePercent(x float64) string {
	if x < 0 {
		return "?"
	}
	return fmt.Sprintf("%.0f%%", 100*x)
}

// numberOrUnknown is x, rounded, "?" when negative (unknown).
func numberOrUnknown(x float64) string {
	if x < 0 {
		return "?"
	}
	return fmt.Sprintf("%.0f", x)
}

// percentOrUnknown is a share as a percentage, "?" when negative (unknown).
func percentOrUnknown(x float64) string {
	if x < 0 {
		return "?"
	}
	return fmt.Sprintf("%.1f%%", 100*x)
}

// hasHarness reports whether any cell has the harness's health.
func hasHarness(s *reports.Summary) bool {
	for _, c := range s.Cells {
		if c.Harness != nil {
			return true
		}
	}
	return false
}

// harnessNote is a cell's harness health for its compact line.
func harnessNote(c *reports.Cell) string {
	h := c.Harness
	if h == nil {
		return ""
	}
	note := fmt.Sprintf(" (harness: host busy p50 %s p99 %s, loop delay p99 %s ms, %.1f CPU-s a run on the host and %.2f in stormctl, recording %s of the host's busy loop",
		wholePercent(h.BusyP50()), wholePercent(h.BusyP99()), numberOrUnknown(h.DelayP99Ms()), h.HostCPUPerRun(), h.StormctlCPUPerRun(), percentOrUnknown(h.RecordingShare()))
	if h.Starved > 0 {
		note += fmt.Sprintf("; %s STARVED by the harness, reported infra: no evidence about the runtime", plural.Count(h.Starved, "run"))
	}
	return note + ")"
}

// result is a cell's compact result with its notes: verdicts, guard, slot
// findings, classes.
func result(c *reports.Cell) string {
	return c.Compact() + verdictNote(c) + guardNote(c) + slotNote(c) + classNote(c) + harnessNote(c)
}

func compactLines(w io.Writer, s *reports.Summary, bullet string) error {
	for _, c := range s.Cells {
		if _, err := fmt.Fprintf(w, "%s%s %s %s: %s\n", bullet, c.World, c.Scenario, c.Condition, result(c)); err != nil {
			return err
		}
	}
	return nil
}

// Markdown writes a seed-style table (one compact line per cell) first,
// then the full table folded, then links to the explained runs' timelines.
func (s Summary) Markdown(w io.Writer) error {
	if err := s.MarkdownTables(w); err != nil {
		return err
	}
	return timelineLinks(w, s.Summary)
}

// MarkdownTables writes Markdown's tables without the timeline links: the
// seed-style table, then the full table folded (for a page that links the
// timelines its own way, as a pull-request comment does).
func (s Summary) MarkdownTables(w io.Writer) error {
	seed := make([][]string, len(s.Cells))
	for i, c := range s.Cells {
		seed[i] = []string{c.World, c.Scenario, c.Condition, result(c)}
	}
	if err := Write(w, MarkdownCompact, []string{"world", "scenario", "condition", "result"}, seed); err != nil {
		return err
	}
	if _, err := fmt.Fprint(w, "\n<details><summary>every outcome and the forensics per cell</summary>\n\n"); err != nil {
		return err
	}
	if err := Write(w, Markdown, s.header(), s.rows()); err != nil {
		return err
	}
	_, err := fmt.Fprint(w, "\n</details>\n")
	return err
}

// classNote counts a cell's runs per root-cause class, the divergences
// recoveries cleared and the terminal events its world accepted for runs
// already ended (forensics' DuplicateEnds), when there are any.
func classNote(c *reports.Cell) string {
	parts := ClassCounts(c)
	note := ""
	if len(parts) > 0 {
		note = " (classes: " + strings.Join(parts, ", ") + ")"
	}
	if c.Recovered > 0 {
		note += fmt.Sprintf(" (%d recovered divergences)", c.Recovered)
	}
	if c.DuplicateEnds > 0 {
		note += fmt.Sprintf(" (world layer: %s beyond a run's first)", plural.Count(c.DuplicateEnds, "terminal event"))
	}
	return note + specNote(c)
}

// specNote says which World contract versions a cell's runs were created
// under ("spec 3"; "specs 3 x5, 5 x1" when they differ), "" when none
// was stamped.
func specNote(c *reports.Cell) string {
	vs := slices.Sorted(maps.Keys(c.SpecVersions))
	switch len(vs) {
	case 0:
		return ""
	case 1:
		return fmt.Sprintf(" (spec %d)", vs[0])
	}
	var parts []string
	for _, v := range vs {
		parts = append(parts, fmt.Sprintf("%d x%d", v, c.SpecVersions[v]))
	}
	return " (specs " + strings.Join(parts, ", ") + ": runs of different contracts)"
}

// Classes lists the root-cause classes of a cell's runs, explain's order
// first (explain.Classes), then any other name a stored storm holds, sorted.
func Classes(c *reports.Cell) []string {
	var ks []string
	for _, k := range explain.Classes() {
		if c.Classes[k] > 0 {
			ks = append(ks, k)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(c.Classes)) {
		if !slices.Contains(explain.Classes(), k) && c.Classes[k] > 0 {
			ks = append(ks, k)
		}
	}
	return ks
}

// ClassCounts counts a cell's runs per root-cause class, "23 stale-prefix",
// in the order of Classes.
func ClassCounts(c *reports.Cell) []string {
	var parts []string
	for _, k := range Classes(c) {
		parts = append(parts, fmt.Sprintf("%d %s", c.Classes[k], k))
	}
	return parts
}

// timelineLinks lists, per cell and class, the runs whose timelines were
// written (stormctl explain DIR RUN tells the rest).
func timelineLinks(w io.Writer, s *reports.Summary) error {
	linked := false
	for _, c := range s.Cells {
		linked = linked || len(c.Timelines) > 0
	}
	if !linked {
		return nil
	}
	if _, err := fmt.Fprint(w, "\n<details><summary>explained runs: timelines of the first runs of each class</summary>\n\n"); err != nil {
		return err
	}
	for _, c := range s.Cells {
		for _, k := range slices.Sorted(maps.Keys(c.Timelines)) {
			var links []string
			for _, p := range c.Timelines[k] {
				run := strings.TrimSuffix(path.Base(p), ".html")
				links = append(links, fmt.Sprintf("[%s](%s)", run, p))
			}
			if _, err := fmt.Fprintf(w, "- %s %s %s, %s: %s\n", c.World, c.Scenario, c.Condition, k, strings.Join(links, ", ")); err != nil {
				return err
			}
		}
	}
	_, err := fmt.Fprint(w, "\n</details>\n")
	return err
}

// guardNote reports how a cell's legacy guard fared, when it had one.
func guardNote(c *reports.Cell) string {
	g := c.Guard
	if g == nil {
		return ""
	}
	return fmt.Sprintf(" (guard: %d evaluated, %d passed, %d indeterminate, %d rejected)", g.Evaluated, g.Passed, g.Indeterminate, g.Rejected)
}

// verdictNote splits a cell's rejections by verdict, when verdicts exist.
func verdictNote(c *reports.Cell) string {
	if c.TruePositives == nil || c.Rejections == 0 {
		return ""
	}
	return fmt.Sprintf(" (%s: %d true positive, %d benign, %d unknown)", plural.Count(c.Rejections, "rejection"), *c.TruePositives, c.Benign, c.UnknownVerdicts)
}
