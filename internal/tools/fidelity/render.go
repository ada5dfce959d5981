package fidelity

import (
	"fmt"
	"io"
	"strings"

	"github.com/stormctl/stormctl/reports/table"
)

// SchemaVersion is the version of fidelity.json this build writes.
const SchemaVersion = 1

// Report is fidelity.json: every claim judged on every world, with the
// storm each world's claims were judged on. **contract**
type Report struct {
	Schema int `json:"schema"`
	// Storms maps each world to the storm directory its cells came from.
	Storms  map[string]string `json:"storms"`
	Results []Result          `json:"results"`
	// Passed, Failed and Unknown count Results by verdict.
	Passed  int `json:"passed"`
	Failed  int `json:"failed"`
	Unknown int `json:"unknown"`
	// Interrupted says a storm was stopped before its runs ended.
	Interrupted bool `json:"interrupted,omitempty"`
}

// NewReport counts results by verdict.
func NewReport(results []Result, storms map[string]string) *Report {
	r := &Report{Schema: SchemaVersion, Storms: storms, Results: results}
	if r.Storms == nil {
		r.Storms = map[string]string{}
	}
	if r.Results == nil {
		r.Results = []Result{}
	}
	for _, x := range results {
		switch x.Verdict {
		case Pass:
			r.Passed++
		case Fail:
			r.Failed++
		default:
			r.Unknown++
		}
	}
	return r
}

// AllPass says every claim passed: none failed, none unknown, at least one.
func (r *Report) AllPass() bool { return len(r.Results) > 0 && r.Passed == len(r.Results) }

// Line is the closing line: "fidelity: N of M claims pass", with the
// failed and unknown counts when there are any.
func (r *Report) Line() string {
	s := fmt.Sprintf("fidelity: %d of %d claims pass", r.Passed, len(r.Results))
	var rest []string
	if r.Failed > 0 {
		rest = append(rest, fmt.Sprintf("%d fail", r.Failed))
	}
	if r.Unknown > 0 {
		rest = append(rest, fmt.Sprintf("%d unknown", r.Unknown))
	}
	if rest != nil {
		s += " (" + strings.Join(rest, ", ") + ")"
	}
	return s
}

var header = []string{"claim", "reference", "measured", "verdict"}

// shown is a verdict as the tables print it.
func shown(v Verdict) string {
	switch v {
	case Pass:
		return "PASS"
	case Fail:
		return "FAIL"
	}
	return string(v)
}

// worlds splits results by world, keeping their order.
func (r *Report) worlds() (names []string, by map[string][]Result) {
	by = map[string][]Result{}
	for _, x := range r.Results {
		if _, ok := by[x.World]; !ok {
			names = append(names, x.World)
		}
		by[x.World] = append(by[x.World], x)
	}
	return names, by
}

// explanations are the lines under a world's table: why each claim that
// did not pass did not, and every note.
func explanations(results []Result) []string {
	var out []string
	for _, x := range results {
		if x.Verdict != Pass {
			out = append(out, fmt.Sprintf("%s %s: %s", shown(x.Verdict), x.Claim, x.Reason))
		}
		if x.Note != "" {
			out = append(out, fmt.Sprintf("note %s: %s", x.Claim, x.Note))
		}
	}
	return out
}

// Table writes the report for a terminal: per world a table claim |
// reference | measured | verdict and the reasons of the claims that did not
// pass, then Line. Its JSON is the report itself (fidelity.json).
func (r *Report) Table(w io.Writer) error { return r.write(w, false) }

// Markdown writes the report as Table does, in markdown: a heading and a
// table per world, the reasons as a list, Line in bold.
func (r *Report) Markdown(w io.Writer) error { return r.write(w, true) }

// write writes the report as a table, or in markdown when md.
func (r *Report) write(w io.Writer, md bool) error {
	names, by := r.worlds()
	for _, world := range names {
		title := world
		if dir := r.Storms[world]; dir != "" {
			title += " (" + dir + ")"
		}
		var rows [][]string
		for _, x := range by[world] {
			rows = append(rows, []string{x.Text, x.Reference, x.Measured, shown(x.Verdict)})
		}
		if err := writeSection(w, md, title, header, rows, explanations(by[world])); err != nil {
			return err
		}
	}
	return writeLine(w, md, r.Line())
}

// writeSection writes one titled table and the lines under it: boxed, or
// in markdown (a heading, escaped cells, the lines as a list) when md.
func writeSection(w io.Writer, md bool, title string, header []string, rows [][]string, lines []string) error {
	style := table.Boxed
	if md {
		style = table.Markdown
		title = "#### " + title + "\n"
		for _, row := range rows {
			for i := range row {
				row[i] = strings.ReplaceAll(row[i], "|", `\|`)
			}
		}
	}
	if _, err := fmt.Fprintln(w, title); err != nil {
		return err
	}
	if err := table.Write(w, style, header, rows); err != nil {
		return err
	}
	prefix := "  "
	if md {
		prefix = "- "
		if lines != nil {
			if _, err := fmt.Fprintln(w); err != nil {
				return err
			}
		}
	}
	for _, l := range lines {
		if _, err := fmt.Fprintln(w, prefix+l); err != nil {
			return err
		}
	}
	_, err := fmt.Fprintln(w)
	return err
}

// writeLine writes a report's closing line, in bold when md.
func writeLine(w io.Writer, md bool, line string) error {
	if md {
		line = "**" + line + "**"
	}
	_, err := fmt.Fprintln(w, line)
	return err
}
