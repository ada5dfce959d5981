package certify

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/stormctl/stormctl/internal/engines/builtinengines"
	"github.com/stormctl/stormctl/internal/storm/stormdir"
	"github.com/stormctl/stormctl/reports"
	"github.com/stormctl/stormctl/reports/table"
)

// Contract is the World contract a package claims, as its sidecar found
// it: the @workflow/world it resolves and the SPEC_VERSION_CURRENT that
// exports (nil: none), and the ordering scheme stormctl checks it under.
type Contract struct {
	World       string `json:"world"`
	SpecVersion *int   `json:"specVersion"`
	Scheme      string `json:"scheme"`
	// Applies says which checks the contract decides apply.
	Applies string `json:"applies"`
}

// Card is a package's report card.
type Card struct {
	// World is the world as given (package:...); Package and Version the
	// package's npm name and version.
	World    string   `json:"world"`
	Package  string   `json:"package"`
	Version  string   `json:"version"`
	Contract Contract `json:"contract"`
	Load     Load     `json:"load"`
	Results  []Result `json:"results"`
	// Storm is the short storm's summary (nil: it did not run, or did not
	// finish: StormNote says why). Engine is the engine that ran it, as
	// its storm.json records it: "" when no storm started, EngineUnknown
	// when storm.json could not be read; EngineNote says why that one (the
	// model where the real runtime cannot host the package), or why it is
	// unknown. Runtime is what ran it under the devkit engine (the
	// packages' versions, the queue that delivered), as storm.json
	// records it.
	Storm      *reports.Summary  `json:"storm,omitempty"`
	StormNote  string            `json:"stormNote,omitempty"`
	Engine     string            `json:"engine,omitempty"`
	EngineNote string            `json:"engineNote,omitempty"`
	Runtime    *stormdir.Runtime `json:"runtime,omitempty"`
	// Stormctl is the version of stormctl that measured the card.
	Stormctl string `json:"stormctl"`
}

// EngineUnknown is a card's Engine when a storm ran but its storm.json,
// which records what ran it, could not be read.
const EngineUnknown = "unknown"

// Outcome is a card's overall verdict.
type Outcome string

// The outcomes.
const (
	// Passed: at least one check passed, none failed, none undecided.
	Passed Outcome = "PASSED"
	// Failed: a check failed.
	Failed Outcome = "FAILED"
	// Undecided: no check failed, but one could not decide (UNKNOWN), or
	// no check passed at all: nothing passes on nothing.
	Undecided Outcome = "UNDECIDED"
)

// JudgeRefusals adds to the uniqueness line, once the storm has run, the
// verdicts of the writes the package refused the storm's runs (judged
// through the runtime: docs/engine-devkit.md), the verdicts certify's
// contended creations, refused with no run behind them, cannot have.
func (c *Card) JudgeRefusals() {
	if c.Storm == nil {
		return
	}
	var rejections, tp, benign, unknown int
	judged := false
	for _, cell := range c.Storm.Cells {
		rejections += cell.Rejections
		if cell.TruePositives != nil {
			judged = true
			tp += *cell.TruePositives
		}
		benign += cell.Benign
		unknown += cell.UnknownVerdicts
	}
	if !judged {
		return
	}
	for i, r := range c.Results {
		if r.Name == CheckUnique && (r.Verdict == Pass || r.Verdict == Fail) {
			c.Results[i].Detail += fmt.Sprintf("; in the storm below the package refused %d writes: %d true positive, %d benign, %d unknown", rejections, tp, benign, unknown)
		}
	}
}

// Counts counts the card's results per verdict.
func (c Card) Counts() map[Verdict]int {
	n := map[Verdict]int{}
	for _, r := range c.Results {
		n[r.Verdict]++
	}
	return n
}

// Outcome is the card's overall verdict: Failed when a check failed,
// Undecided when one is UNKNOWN or none passed, else Passed.
func (c Card) Outcome() Outcome {
	n := c.Counts()
	switch {
	case n[Fail] > 0:
		return Failed
	case n[Unknown] > 0 || n[Pass] == 0:
		return Undecided
	}
	return Passed
}

// Summary is the card's verdict line.
func (c Card) Summary() string {
	n := c.Counts()
	s := fmt.Sprintf("%s: %d passed, %d failed, %d skipped, %d unknown", c.Outcome(), n[Pass], n[Fail], n[Skip], n[Unknown])
	if n[Pass]+n[Fail] == 0 {
		s += " (no check ran to a verdict: nothing passes on nothing)"
	}
	return s
}

func (c Card) specVersion() string {
	if c.Contract.SpecVersion == nil {
		return "none exported"
	}
	return fmt.Sprint(*c.Contract.SpecVersion)
}

// stormHeading says which engine ran the storm, and how, as storm.json
// recorded it: nothing when no storm started (the section says it did
// not run), UNKNOWN when what ran it is not known. A card never names an
// engine that did not run.
func (c Card) stormHeading() string {
	var h string
	switch c.Engine {
	case "":
		if c.Storm == nil {
			return ""
		}
		h = "UNKNOWN engine: what ran the storm is not recorded"
	case EngineUnknown:
		h = "UNKNOWN engine"
	case builtinengines.Engines().Published():
		h = "the real runtime, " + c.Engine + " engine"
		rt := c.Runtime
		if rt == nil {
			h += ": UNKNOWN runtime: storm.json records none"
			break
		}
		if v := rt.Versions["@workflow/core"]; v != "" {
			h += ": @workflow/core " + v
		}
		if rt.Queue != "" {
			h += "; queue: " + rt.Queue
		}
	default:
		h = c.Engine + " engine"
	}
	return h + note(c.EngineNote)
}

// parens is s in parentheses after a space, nothing for "".
func parens(s string) string {
	if s == "" {
		return ""
	}
	return " (" + s + ")"
}

func (c Card) header() []string {
	return []string{
		fmt.Sprintf("package: %s %s (%s)", c.Package, c.Version, c.World),
		fmt.Sprintf("contract: @workflow/world %s, specVersion %s, scheme %s: %s", c.Contract.World, c.specVersion(), c.Contract.Scheme, c.Contract.Applies),
		fmt.Sprintf("load: %d writers and %d readers at once, %d runs a check; stormctl %s", c.Load.Writers, c.Load.Readers, c.Load.Rounds, c.Stormctl),
	}
}

// Table writes the card for a terminal: a line per check, then the
// storm's table.
func (c Card) Table(w io.Writer) error {
	fmt.Fprintf(w, "certify %s\n", c.World)
	for _, l := range c.header() {
		fmt.Fprintln(w, "  "+l)
	}
	var section Section
	for _, r := range c.Results {
		if r.Section != section {
			section = r.Section
			fmt.Fprintf(w, "\n%s\n", section)
		}
		fmt.Fprintf(w, "  %-7s %s: %s%s\n", r.Verdict, r.Name, oneLine(r.Detail), layer(r))
	}
	fmt.Fprintf(w, "\nstorm%s\n", parens(c.stormHeading()))
	switch {
	case c.Storm != nil:
		if err := (table.Summary{Summary: c.Storm}).Table(w); err != nil {
			return err
		}
		if c.StormNote != "" {
			fmt.Fprintf(w, "  %s\n", c.StormNote)
		}
	default:
		fmt.Fprintf(w, "  not run: %s\n", c.StormNote)
	}
	_, err := fmt.Fprintf(w, "\n%s\n", c.Summary())
	return err
}

// Markdown writes the card for a README or a PR.
func (c Card) Markdown(w io.Writer) error {
	fmt.Fprintf(w, "### stormctl certify `%s`\n\n", c.World)
	for _, l := range c.header() {
		fmt.Fprintf(w, "- %s\n", mdEscape(l))
	}
	fmt.Fprintln(w)
	rows := make([][]string, len(c.Results))
	for i, r := range c.Results {
		rows[i] = []string{string(r.Section), r.Name, "**" + string(r.Verdict) + "**", mdEscape(oneLine(r.Detail)) + layer(r)}
	}
	if err := table.Write(w, table.MarkdownCompact, []string{"section", "check", "verdict", "detail"}, rows); err != nil {
		return err
	}
	fmt.Fprintf(w, "\nStorm%s:\n\n", parens(mdEscape(c.stormHeading())))
	switch {
	case c.Storm != nil:
		if err := (table.Summary{Summary: c.Storm}).MarkdownTables(w); err != nil {
			return err
		}
		if c.StormNote != "" {
			fmt.Fprintf(w, "\n%s\n", mdEscape(c.StormNote))
		}
	default:
		fmt.Fprintf(w, "not run: %s\n", mdEscape(c.StormNote))
	}
	_, err := fmt.Fprintf(w, "\n**%s**\n", c.Summary())
	return err
}

// JSON writes the card's document, with its outcome.
func (c Card) JSON(w io.Writer) error {
	doc := struct {
		Card
		Outcome Outcome `json:"outcome"`
	}{c, c.Outcome()}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(doc)
}

func layer(r Result) string {
	if r.Layer == "" || r.Verdict == Pass || r.Verdict == Skip {
		return ""
	}
	return " [" + r.Layer + "]"
}

func note(s string) string {
	if s == "" {
		return ""
	}
	return ": " + s
}

// oneLine folds a detail onto one line.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// mdEscape keeps a table cell's pipes from splitting it.
func mdEscape(s string) string { return strings.ReplaceAll(s, "|", `\|`) }
