package reports

import (
	"encoding/json"
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
	"github.com/stormctl/stormctl/explain"
)

// Formats a summary can be rendered in.
const (
	FormatTable    = "table"
	FormatMarkdown = "markdown"
	FormatJSON     = "json"
)

// ParseFormat checks a --format value.
func ParseFormat(s string) (string, error) {
	switch s {
	case FormatTable, FormatMarkdown, FormatJSON:
		return s, nil
	}
	return "", fmt.Errorf("invalid --format %q (valid: table, markdown, json)", s)
}

// header is the table's columns; a summary with slot-scheme cells gets the
// hole outcome and the slot columns too.
func header(slots bool) []string {
	h := []string{
		"world", "scenario", "condition", "runs",
		"completed", "corrupted", "silent", "gap", "stuck", "failed", "infra",
		"rejections", "reads", "non-prefix", "cursor skips", "inversions", "gaps", "dups",
	}
	if slots {
		h = append(h, "hole", "holes seen", "final holes", "seals", "sealed writes", "seal races", "fill p50/p99/max ms")
	}
	return h
}

func row(c *Cell, slots bool) []string {
	n := strconv.Itoa
	r := []string{
		c.World, c.Scenario, c.Condition, n(c.Runs),
		n(c.Completed), n(c.Corrupted), n(c.Silent), n(c.Gap), n(c.Stuck), n(c.Failed), n(c.Infra),
		n(c.Rejections), n(c.Reads), n(c.NonPrefixReads), n(c.CursorSkips), n(c.Inversions), n(c.Gaps), n(c.Duplicates),
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

// hasSlots reports whether any cell ran under the slot scheme.
func hasSlots(s *Summary) bool {
	for _, c := range s.Cells {
		if c.Slot != nil || c.Hole > 0 {
			return true
		}
	}
	return false
}

// slotNote summarizes a slot cell's holes and seals for its compact line.
func slotNote(c *Cell) string {
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

// Render writes the summary in format: a table for terminals, markdown for
// PRs, or the summary.json document.
func Render(w io.Writer, s *Summary, format string) error {
	switch format {
	case FormatJSON:
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(s)
	case FormatMarkdown:
		return renderMarkdown(w, s)
	}
	return renderTable(w, s)
}

func renderTable(w io.Writer, s *Summary) error {
	t := tablewriter.NewTable(w,
		tablewriter.WithHeaderAutoFormat(tw.Off),
		tablewriter.WithRowAlignment(tw.AlignRight),
	)
	slots, faulted := hasSlots(s), hasFaulted(s)
	t.Header(withFaulted(header(slots), faulted, "faulted"))
	for _, c := range s.Cells {
		if err := t.Append(withFaulted(row(c, slots), faulted, FaultedNote(c))); err != nil {
			return err
		}
	}
	if err := t.Render(); err != nil {
		return err
	}
	return compactLines(w, s, "")
}

func compactLines(w io.Writer, s *Summary, bullet string) error {
	for _, c := range s.Cells {
		if _, err := fmt.Fprintf(w, "%s%s %s %s: %s%s\n", bullet, c.World, c.Scenario, c.Condition, c.Compact(), verdictNote(c)+guardNote(c)+slotNote(c)+classNote(c)); err != nil {
			return err
		}
	}
	return nil
}

func renderMarkdown(w io.Writer, s *Summary) error {
	if _, err := fmt.Fprintln(w, "| world | scenario | condition | result |\n|---|---|---|---|"); err != nil {
		return err
	}
	for _, c := range s.Cells {
		if _, err := fmt.Fprintf(w, "| %s | %s | %s | %s%s |\n", c.World, c.Scenario, c.Condition, c.Compact(), verdictNote(c)+guardNote(c)+slotNote(c)+classNote(c)); err != nil {
			return err
		}
	}
	if _, err := fmt.Fprint(w, "\n<details><summary>every outcome and the forensics per cell</summary>\n\n"); err != nil {
		return err
	}
	t := tablewriter.NewTable(w,
		tablewriter.WithRenderer(renderer.NewMarkdown()),
		tablewriter.WithHeaderAutoFormat(tw.Off),
	)
	slots, faulted := hasSlots(s), hasFaulted(s)
	t.Header(withFaulted(header(slots), faulted, "faulted"))
	for _, c := range s.Cells {
		if err := t.Append(withFaulted(row(c, slots), faulted, FaultedNote(c))); err != nil {
			return err
		}
	}
	if err := t.Render(); err != nil {
		return err
	}
	if _, err := fmt.Fprint(w, "\n</details>\n"); err != nil {
		return err
	}
	return timelineLinks(w, s)
}

// classNote counts a cell's runs per root-cause class and the divergences
// recoveries cleared, when there are any.
func classNote(c *Cell) string {
	var parts []string
	for _, k := range explain.Classes() {
		if n := c.Classes[k]; n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, k))
		}
	}
	for _, k := range slices.Sorted(maps.Keys(c.Classes)) {
		if !slices.Contains(explain.Classes(), k) && c.Classes[k] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", c.Classes[k], k))
		}
	}
	note := ""
	if len(parts) > 0 {
		note = " (classes: " + strings.Join(parts, ", ") + ")"
	}
	if c.Recovered > 0 {
		note += fmt.Sprintf(" (%d recovered divergences)", c.Recovered)
	}
	return note
}

// timelineLinks lists, per cell and class, the runs whose timelines were
// written (stormctl explain DIR RUN tells the rest).
func timelineLinks(w io.Writer, s *Summary) error {
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
func guardNote(c *Cell) string {
	g := c.Guard
	if g == nil {
		return ""
	}
	return fmt.Sprintf(" (guard: %d evaluated, %d passed, %d indeterminate, %d rejected)", g.Evaluated, g.Passed, g.Indeterminate, g.Rejected)
}

// verdictNote splits a cell's rejections by verdict, when verdicts exist.
func verdictNote(c *Cell) string {
	if c.TruePositives == nil || c.Rejections == 0 {
		return ""
	}
	return fmt.Sprintf(" (%d rejections: %d true positive, %d benign, %d unknown)", c.Rejections, *c.TruePositives, c.Benign, c.UnknownVerdicts)
}
