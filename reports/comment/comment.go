package comment

import (
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/stormctl/stormctl/internal/base/plural"
	"github.com/stormctl/stormctl/reports"
	"github.com/stormctl/stormctl/reports/compare"
	"github.com/stormctl/stormctl/reports/gate"
	"github.com/stormctl/stormctl/reports/table"
)

// MaxBody is the most characters a comment's body may have: GitHub keeps
// 65,536, and the action that posts it adds a line of its own.
const MaxBody = 65536 - 512

// Comment is what a pull request's storm comment says: the storm's tables,
// the gates' verdicts on it, its comparison with the base branch's storm,
// its wrong runs by class with their timelines, and the pull request's
// last storms.
type Comment struct {
	// Summary is the storm's summary, rebuilt from its runs.
	Summary *reports.Summary
	// Compare is the storm compared with the base branch's (base = the
	// base branch's, head = this one); nil without a baseline.
	Compare *compare.Comparison
	// Gates are the results of the gates run on the storm, in order.
	Gates []*gate.Result
	// Partial is what the storm is missing of the runs it planned
	// (stormdir.PartialOf of its storm.json), nil when it holds them all.
	// A partial storm's comment says so first, and its gate never reads
	// as passed, whatever the gates' files say.
	Partial *reports.Partial
	// Commit is the commit stormed; ArtifactURL where the storm directory
	// was uploaded (the timelines are under it). Either may be "".
	Commit      string
	ArtifactURL string
	// History is the pull request's earlier storms (ParseHistory of the
	// previous comment); Keep is how many rows the comment keeps, this
	// storm's included.
	History History
	Keep    int
}

// Gate is the storm's verdict over every gate run on it: GateFailed when
// one failed or the storm is partial (a gate passed on it by a build that
// did not check is no pass), GatePassed when every one passed, GateNone
// without any.
func (c Comment) Gate() string {
	if len(c.Gates) == 0 {
		return GateNone
	}
	if c.partial() != nil {
		return GateFailed
	}
	for _, g := range c.Gates {
		if !g.Passed {
			return GateFailed
		}
	}
	return GatePassed
}

// partial is what the storm is missing: its own storm.json's word
// (Partial), else the first gate's that found it partial; nil when
// neither did.
func (c Comment) partial() *reports.Partial {
	if c.Partial != nil {
		return c.Partial
	}
	for _, g := range c.Gates {
		if g.Partial != nil {
			return g.Partial
		}
	}
	return nil
}

// Rows is the history the comment shows and carries: the earlier storms
// and this one, the last Keep of them.
func (c Comment) Rows() History {
	return c.History.Append(NewRow(c.Commit, c.Gate(), c.ArtifactURL, c.Summary), max(c.Keep, 1))
}

// Markdown writes the comment's body: the hidden history first (so a body
// cut to MaxBody keeps it whole), then what a reader sees.
func (c Comment) Markdown(w io.Writer) error {
	rows := c.Rows()
	block, err := rows.block()
	if err != nil {
		return err
	}
	var b strings.Builder
	c.head(&b)
	if err := c.tables(&b); err != nil {
		return err
	}
	if err := c.compared(&b); err != nil {
		return err
	}
	c.wrongRuns(&b)
	if err := c.history(&b, rows); err != nil {
		return err
	}
	_, err = io.WriteString(w, block+cut(b.String(), MaxBody-len(block)))
	return err
}

// cut shortens s to at most n bytes at a line's end, saying so.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	const note = "\n\n… (cut to fit a comment: the job's summary and the storm artifact have all of it)\n"
	s = s[:max(n-len(note), 0)]
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	for !utf8.ValidString(s) {
		s = s[:len(s)-1]
	}
	return s + note
}

// short is a commit as a reader sees it.
func short(commit string) string {
	if len(commit) > 7 {
		return commit[:7]
	}
	return commit
}

// head is the comment's first line and the gates' verdicts. A partial
// storm's first line says it is partial and what it is missing, the lines
// below name each thing once, and each gate's lines are its other rules'
// (gate.Result.RuleLines).
func (c Comment) head(b *strings.Builder) {
	at := ""
	if c.Commit != "" {
		at = " at `" + short(c.Commit) + "`"
	}
	verdict := map[string]string{GatePassed: "gate passed", GateFailed: "gate failed", GateNone: "no gate run"}[c.Gate()]
	p := c.partial()
	if p != nil {
		verdict = "partial storm, " + p.Headline() + "; " + verdict
	}
	fmt.Fprintf(b, "### stormctl storm%s: %s\n\n", at, verdict)
	if p != nil {
		for _, r := range p.Reasons() {
			fmt.Fprintf(b, "- %s: %s\n", gate.RulePartial, strings.ReplaceAll(r, "|", `\|`))
		}
		b.WriteString("\n")
	}
	for _, g := range c.Gates {
		on := "every condition"
		if len(g.Config.Conditions) > 0 {
			on = "`" + strings.Join(g.Config.Conditions, ", ") + "`"
		}
		lines := g.Lines()
		switch {
		case p != nil && g.Partial != nil:
			lines = g.RuleLines() // what the storm misses is said once, above
		case p != nil && g.Passed:
			// A gate that did not look at completeness (another build's
			// JSON) passed the runs it was given, not the storm.
			lines = []string{fmt.Sprintf("no rule broken on the runs the storm holds (%s, %s), but this gate did not check that the storm is whole",
				plural.Count(g.Cells, "cell"), plural.Count(g.Rules, "rule"))}
		}
		for _, l := range lines {
			fmt.Fprintf(b, "- on %s: %s\n", on, strings.ReplaceAll(l, "|", `\|`))
		}
	}
	if len(c.Gates) > 0 {
		b.WriteString("\n")
	}
}

// tables writes the storm's tables, as its summary.md has them.
func (c Comment) tables(b *strings.Builder) error {
	return table.Summary{Summary: c.Summary}.MarkdownTables(b)
}

// compared writes the comparison with the base branch's storm, or says
// there was none.
func (c Comment) compared(b *strings.Builder) error {
	b.WriteString("\n#### Against the base branch's storm\n\n")
	if c.Compare == nil {
		b.WriteString("No storm of the base branch to compare with: none was given (`--baseline`), so no cell was compared.\n")
		return nil
	}
	return c.Compare.Markdown(b)
}

// wrongRuns lists, per cell, the root-cause classes of the runs that went
// wrong and where their timelines are.
func (c Comment) wrongRuns(b *strings.Builder) {
	b.WriteString("\n#### Runs that went wrong\n\n")
	var lines []string
	for _, cell := range c.Summary.Cells {
		name := cell.World + " " + cell.Scenario + " " + cell.Condition
		wrong := cell.Corrupted + cell.Silent + cell.Gap + cell.Hole + cell.Stuck
		classes := table.Classes(cell)
		if wrong > 0 && len(classes) == 0 {
			lines = append(lines, fmt.Sprintf("- %s: %s, no class recorded (`stormctl forensics DIR` classifies them)", name, plural.Count(wrong, "run")))
		}
		for _, k := range classes {
			l := fmt.Sprintf("- %s: **%s**, %s", name, k, plural.Count(cell.Classes[k], "run"))
			var paths []string
			for _, p := range cell.Timelines[k] {
				paths = append(paths, "`"+strings.ReplaceAll(p, "`", "")+"`")
			}
			if len(paths) > 0 {
				l += "; timelines: " + strings.Join(paths, ", ")
			}
			lines = append(lines, l)
		}
	}
	if len(lines) == 0 {
		b.WriteString("None: every run completed, failed or was infra.\n")
		return
	}
	if c.ArtifactURL != "" {
		fmt.Fprintf(b, "The timelines are in [the storm's artifact](%s), at the paths below (`stormctl explain DIR RUN` tells a run's story).\n\n", c.ArtifactURL)
	} else {
		b.WriteString("The timelines are under the storm's directory, at the paths below (`stormctl explain DIR RUN` tells a run's story).\n\n")
	}
	b.WriteString(strings.Join(lines, "\n") + "\n")
}

// history writes the pull request's storms, oldest first: a row each, a
// column per cell of this storm.
func (c Comment) history(b *strings.Builder, rows History) error {
	fmt.Fprintf(b, "\n#### This pull request's storms, oldest first (the last %d kept)\n\n", max(c.Keep, 1))
	header := []string{"commit", "gate"}
	var cells []string
	for _, cell := range c.Summary.Cells {
		header = append(header, cell.World+" "+cell.Scenario+" "+cell.Condition)
		cells = append(cells, cell.Key().String())
	}
	var out [][]string
	for _, r := range rows {
		commit := "—"
		if r.Commit != "" {
			commit = "`" + short(r.Commit) + "`"
		}
		if r.Artifact != "" {
			commit = "[" + commit + "](" + r.Artifact + ")"
		}
		gate := r.Gate
		if gate == GateNone {
			gate = "—"
		}
		rates := map[string]CellRate{}
		for _, cr := range r.Cells {
			rates[cr.Cell] = cr
		}
		line := []string{commit, gate}
		for _, k := range cells {
			cr, ok := rates[k]
			if !ok {
				line = append(line, "—")
				continue
			}
			line = append(line, fmt.Sprintf("%d/%d", cr.Bad, cr.N))
		}
		out = append(out, line)
	}
	if err := table.Write(b, table.MarkdownCompact, header, out); err != nil {
		return err
	}
	b.WriteString("\nPer cell: corrupted+silent runs / runs less infra (compare's rate); — where a storm had no such cell.\n")
	return nil
}
