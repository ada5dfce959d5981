package fidelity

import (
	"fmt"
	"io"
	"slices"
)

// ReferenceDevkit is the --reference that compares the model with the real
// runtime (the devkit engine); ReferenceClaims judges the claim table.
const (
	ReferenceClaims = "claims"
	ReferenceDevkit = "devkit"
)

// References lists fidelity's --reference values.
func References() []string { return []string{ReferenceClaims, ReferenceDevkit} }

// EngineStorms are the storm directories of one world's two sides.
type EngineStorms struct {
	Model string `json:"model"`
	Real  string `json:"real"`
}

// ReferenceReport is fidelity.json of --reference devkit: every regime
// figure of every world and scenario under the model and the real runtime.
// **contract**
type ReferenceReport struct {
	Schema    int    `json:"schema"`
	Reference string `json:"reference"`
	// Storms maps each world to its two storms' directories.
	Storms map[string]EngineStorms `json:"storms"`
	// ModelCondition is the condition the model side ran when it is not
	// main (fidelity --model-condition, such as main/writes=parallel); the
	// real side always runs main.
	ModelCondition string   `json:"model_condition,omitempty"`
	Figures        []Figure `json:"figures"`
	// Compared counts the figures measured on both sides; Off those more
	// than OffFactor apart, Separated those of them whose intervals do not
	// overlap; Unknown those a side had nothing to measure on.
	Compared  int `json:"compared"`
	Off       int `json:"off"`
	Separated int `json:"separated"`
	Unknown   int `json:"unknown"`
	// Interrupted says a storm was stopped before its runs ended.
	Interrupted bool `json:"interrupted,omitempty"`
	// Contracts are the contract claims (JudgeContracts): per ordering
	// contract, whether the model's condition of it agrees with the real
	// runtime on packages of it, unknown while none ran here.
	Contracts []ContractClaim `json:"contracts"`
}

// NewReferenceReport counts figs by gap.
func NewReferenceReport(figs []Figure, storms map[string]EngineStorms) *ReferenceReport {
	r := &ReferenceReport{Schema: SchemaVersion, Reference: ReferenceDevkit, Storms: storms, Figures: figs}
	if r.Storms == nil {
		r.Storms = map[string]EngineStorms{}
	}
	if r.Figures == nil {
		r.Figures = []Figure{}
	}
	r.JudgeContracts(nil)
	for _, f := range figs {
		switch f.Gap {
		case NoMeasure:
			r.Unknown++
		case Off:
			r.Off++
			r.Compared++
			if f.Separated {
				r.Separated++
			}
		case Within, BothZero:
			r.Compared++
		}
	}
	return r
}

// Evidenced says every figure was measured on both sides (a figure only
// shown counts as measured), and there is at least one.
func (r *ReferenceReport) Evidenced() bool { return len(r.Figures) > 0 && r.Unknown == 0 }

// Line is the closing line: how many figures were compared, how many are
// off by more than OffFactor (and of those, how many with separated
// intervals), how many are unknown.
func (r *ReferenceReport) Line() string {
	s := fmt.Sprintf("fidelity --reference devkit: %d figures compared, %d off by more than %gx (%d with separated intervals)", r.Compared, r.Off, OffFactor, r.Separated)
	if r.Unknown > 0 {
		s += fmt.Sprintf(", %d unknown", r.Unknown)
	}
	var pass, unknown int
	for _, c := range r.Contracts {
		switch c.Verdict {
		case Pass:
			pass++
		case Unknown:
			unknown++
		}
	}
	s += fmt.Sprintf("; contracts: %d of %d pass, %d unknown", pass, len(r.Contracts), unknown)
	if r.Interrupted {
		s += "; interrupted: judged on what was measured"
	}
	return s
}

// SetModelCondition records the condition the model side ran: nothing for
// main.
func (r *ReferenceReport) SetModelCondition(cond string) {
	if cond == Main {
		cond = ""
	}
	r.ModelCondition = cond
}

// Table writes per world and scenario a table figure | model | real |
// model/real | gap, the notes under it, then Line.
func (r *ReferenceReport) Table(w io.Writer) error { return r.write(w, false) }

// Markdown writes the report as Table does, in markdown.
func (r *ReferenceReport) Markdown(w io.Writer) error { return r.write(w, true) }

var (
	referenceHeader = []string{"figure", "model", "real", "model/real", "gap"}
	contractHeader  = []string{"contract", "spec", "model condition", "verdict", "evidence"}
)

func (r *ReferenceReport) write(w io.Writer, md bool) error {
	for _, g := range r.groups() {
		title := g.world + " · " + g.scenario
		if s, ok := r.Storms[g.world]; ok {
			title += fmt.Sprintf(" (model %s, real %s)", s.Model, s.Real)
		}
		if r.ModelCondition != "" {
			title += " · model under " + r.ModelCondition + ", real under " + Main
		}
		var rows [][]string
		var notes []string
		for _, f := range g.figs {
			rows = append(rows, []string{f.Name, f.Model.Text, f.Real.Text, ratioText(f), gapText(f)})
			switch {
			case f.Note == windowNote:
				if !slices.Contains(notes, windowNote) {
					notes = append(notes, windowNote)
				}
			case f.Note != "":
				notes = append(notes, f.Name+": "+f.Note)
			}
		}
		if err := writeSection(w, md, title, referenceHeader, rows, notes); err != nil {
			return err
		}
	}
	var rows [][]string
	for _, c := range r.Contracts {
		spec := "-"
		if c.Contract.Spec != 0 {
			spec = fmt.Sprint(c.Contract.Spec)
		}
		rows = append(rows, []string{c.Contract.Name, spec, c.Contract.Condition, string(c.Verdict), c.Evidence})
	}
	if err := writeSection(w, md, "contracts: the model's condition of each against the real runtime on packages of it", contractHeader, rows, nil); err != nil {
		return err
	}
	return writeLine(w, md, r.Line())
}

type figureGroup struct {
	world, scenario string
	figs            []Figure
}

// groups splits the figures by world and scenario, keeping their order.
func (r *ReferenceReport) groups() []figureGroup {
	var out []figureGroup
	for _, f := range r.Figures {
		if n := len(out); n > 0 && out[n-1].world == f.World && out[n-1].scenario == f.Scenario {
			out[n-1].figs = append(out[n-1].figs, f)
			continue
		}
		out = append(out, figureGroup{world: f.World, scenario: f.Scenario, figs: []Figure{f}})
	}
	return out
}

func ratioText(f Figure) string {
	switch {
	case f.Gap == Off && f.Ratio == 0:
		return "real 0"
	case f.Ratio == 0:
		return ""
	}
	return fmt.Sprintf("%.2fx", f.Ratio)
}

func gapText(f Figure) string {
	switch f.Gap {
	case Off:
		if f.Separated {
			return "OFF, separated"
		}
		if f.Model.Hi > 0 || f.Real.Hi > 0 {
			return "OFF, intervals overlap"
		}
		return "OFF"
	case Within:
		return "within 2x"
	case BothZero:
		return "both 0"
	case NoMeasure:
		return "unknown"
	case Shown:
		return "shown"
	}
	return ""
}
