package reports

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"

	"github.com/olekukonko/tablewriter"
	"github.com/olekukonko/tablewriter/renderer"
	"github.com/olekukonko/tablewriter/tw"
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

var header = []string{
	"world", "scenario", "condition", "runs",
	"completed", "corrupted", "silent", "gap", "stuck", "failed", "infra",
	"rejections", "reads", "non-prefix", "cursor skips", "inversions", "gaps", "dups",
}

func row(c *Cell) []string {
	n := strconv.Itoa
	return []string{
		c.World, c.Scenario, c.Condition, n(c.Runs),
		n(c.Completed), n(c.Corrupted), n(c.Silent), n(c.Gap), n(c.Stuck), n(c.Failed), n(c.Infra),
		n(c.Rejections), n(c.Reads), n(c.NonPrefixReads), n(c.CursorSkips), n(c.Inversions), n(c.Gaps), n(c.Duplicates),
	}
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
	t.Header(header)
	for _, c := range s.Cells {
		if err := t.Append(row(c)); err != nil {
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
		if _, err := fmt.Fprintf(w, "%s%s %s %s: %s%s\n", bullet, c.World, c.Scenario, c.Condition, c.Compact(), verdictNote(c)+guardNote(c)); err != nil {
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
		if _, err := fmt.Fprintf(w, "| %s | %s | %s | %s%s |\n", c.World, c.Scenario, c.Condition, c.Compact(), verdictNote(c)+guardNote(c)); err != nil {
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
	t.Header(header)
	for _, c := range s.Cells {
		if err := t.Append(row(c)); err != nil {
			return err
		}
	}
	if err := t.Render(); err != nil {
		return err
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
