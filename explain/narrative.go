package explain

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/stormctl/stormctl/eventlog"
	"github.com/stormctl/stormctl/internal/plural"
)

// maxNamed bounds the missing events a narrative step names.
const maxNamed = 3

// clock formats a time as the narrative shows it: UTC, milliseconds.
func clock(t time.Time) string {
	if t.IsZero() {
		return "an unknown time"
	}
	return t.UTC().Format("15:04:05.000")
}

// ms formats a duration in milliseconds.
func ms(d time.Duration) string {
	return fmt.Sprintf("%.0f ms", float64(d)/float64(time.Millisecond))
}

// joinList joins names with commas.
func joinList(xs []string) string { return strings.Join(xs, ", ") }

// name is how the narrative names an event: type, correlation id and step
// name.
func (e Event) name() string {
	if e.CorrelationID == "" && e.Seq != 0 && e.Type == "" {
		return fmt.Sprintf("position %d", e.Seq)
	}
	return eventName(e.Type, e.CorrelationID, e.Name, e.Args)
}

func (d Decision) name() string { return eventName(d.Type, d.CorrelationID, d.Name, d.Args) }

// eventName is an event's or a decision's type followed by what of its
// correlation id, step name and arguments it has.
func eventName(typ eventlog.Type, corr, step, args string) string {
	s := string(typ)
	if corr != "" {
		s += " " + corr
	}
	if step != "" {
		s += fmt.Sprintf(" %q", step)
	}
	if args != "" {
		s += " " + args
	}
	return s
}

// finish writes the summary and the numbered narrative.
func finish(ex *Explanation) {
	if ex.Class == "" {
		return
	}
	var steps []string
	switch ex.Class {
	case Hole, Density:
		steps = slotSteps(ex)
	case BlockedBranch:
		steps = blockedSteps(ex)
	case Slow:
		steps = slowSteps(ex)
	default:
		steps = divergenceSteps(ex)
	}
	if ex.Class == Unknown {
		steps = append(steps, "the cause is unknown: "+joinList(ex.MissingEvidence))
	}
	if len(steps) > 0 {
		if rest, ok := strings.CutPrefix(steps[0], "then "); ok {
			steps[0] = "let " + strings.Replace(rest, " wrote ", " write ", 1)
		}
	}
	for i, s := range steps {
		ex.Steps = append(ex.Steps, fmt.Sprintf("%d. %s", i+1, s))
	}
	ex.Summary = ex.Class + ": " + summary(ex)
}

// summary is one line on what the class rests on.
func summary(ex *Explanation) string {
	switch ex.Class {
	case StalePrefix, CursorSkip:
		if ex.Writer != nil && ex.Offending != nil && len(ex.Missing) > 0 {
			m := named(ex.Missing)[0]
			how := fmt.Sprintf("committed %s after its load began", ms(m.AfterLoad))
			if m.Skipped {
				how = "its cursor had already passed it"
			}
			return fmt.Sprintf("%s wrote %s from a view lacking %s (%s)", ex.Writer.Actor, written(ex).name(), m.name(), how)
		}
	case WakeOrder:
		if ex.Writer != nil && ex.View != nil {
			return fmt.Sprintf("%s wrote %s from exactly the final prefix of %d events; a replay of it with %s wake derives otherwise",
				ex.Writer.Actor, written(ex).name(), ex.View.N, ex.Reference.Wake)
		}
	case Unknown:
		return joinList(ex.MissingEvidence)
	}
	if len(ex.Evidence) > 0 {
		return ex.Evidence[0]
	}
	return joinList(ex.MissingEvidence)
}

// written is the event the writer wrote that the explanation is about: the
// offending event, or the decision that created the offending fact's
// operation.
func written(ex *Explanation) Event {
	if ex.Writer != nil && ex.Offending != nil && !ex.Offending.Type.IsDecision() {
		for _, w := range ex.Writer.Wrote {
			if w.CorrelationID == ex.Offending.CorrelationID {
				return w
			}
		}
	}
	if ex.Offending != nil {
		return *ex.Offending
	}
	return Event{}
}

// named orders the missing events for naming: decisive ones first.
func named(ms []Missing) []Missing {
	out := slices.Clone(ms)
	slices.SortStableFunc(out, func(a, b Missing) int {
		switch {
		case a.Decisive && !b.Decisive:
			return -1
		case b.Decisive && !a.Decisive:
			return 1
		}
		return 0
	})
	return out
}

// lacking describes one missing event.
func lacking(m Missing) string {
	s := fmt.Sprintf("%s (minted by %s at %s, committed at %s, %s after the load began", m.name(), orNobody(m.Writer),
		clock(m.MintedAt), clock(m.CommittedAt), ms(m.AfterLoad))
	switch {
	case m.Skipped:
		s += ", before its last page, but its cursor had already passed it"
	case !m.Within:
		s += "; it sorts after the view's last event and before the write: it was in flight"
	}
	return s + ")"
}

func pagesText(v *View) string {
	s := fmt.Sprintf("%d page", len(v.Pages))
	if len(v.Pages) != 1 {
		s += "s"
	}
	if len(v.Pages) > 0 {
		s += " from " + v.Pages[0].After
	}
	if v.Loads > 1 {
		s += fmt.Sprintf(", %d loads", v.Loads)
	}
	return s
}

func divergenceSteps(ex *Explanation) []string {
	var steps []string
	if v := ex.View; v != nil && len(v.Pages) > 0 {
		s := fmt.Sprintf("let %s load %d events at %s (%s)", v.Actor, v.N, clock(v.Pages[0].Start), pagesText(v))
		switch {
		case len(ex.Missing) > 0:
			ms := named(ex.Missing)
			var parts []string
			for _, m := range ms[:min(len(ms), maxNamed)] {
				parts = append(parts, lacking(m))
			}
			s += ": the view lacks " + joinList(parts)
			if len(ms) > maxNamed {
				s += fmt.Sprintf(", and %d more", len(ms)-maxNamed)
			}
		case len(ex.Extra) > 0:
			s += fmt.Sprintf(": the view holds %s, which the final log places after the write", ex.Extra[0].name())
		case v.Prefix:
			s += fmt.Sprintf(": exactly the final log's first %d events", v.N)
		}
		steps = append(steps, s)
	}
	if w := ex.Writer; w != nil && ex.Offending != nil {
		wr := written(ex)
		s := fmt.Sprintf("then %s wrote %s (minted %s, committed %s)", w.Actor, wr.name(), clock(wr.MintedAt), clock(wr.CommittedAt))
		if n := len(w.Wrote); n > 1 {
			s += fmt.Sprintf(", one of the %d decisions it wrote after that load", n)
		}
		if wr.Type == eventlog.RunFailed {
			s = fmt.Sprintf("then %s replayed its view and wrote run_failed (committed %s)", w.Actor, clock(wr.CommittedAt))
		}
		if ref := ex.Reference; ref != nil && wr.Type != eventlog.RunFailed {
			switch {
			case ref.Derives && slices.ContainsFunc(ex.Missing, func(m Missing) bool { return m.Decisive }):
				d := named(ex.Missing)[0]
				s += fmt.Sprintf("; a replay of its view with %s wake derives the same, and with %s added it does not", ref.Wake, d.name())
			case ref.Derives:
				s += fmt.Sprintf("; a replay of its view with %s wake derives the same", ref.Wake)
			default:
				var ds []string
				for _, d := range ref.Decisions[:min(len(ref.Decisions), maxNamed)] {
					ds = append(ds, d.name())
				}
				if len(ds) == 0 {
					ds = []string{"nothing new"}
				}
				s += fmt.Sprintf("; a replay of the same view with %s wake derives %s instead", ref.Wake, joinList(ds))
			}
		}
		steps = append(steps, s)
	}
	if o := ex.Offending; o != nil && ex.Divergence != "" {
		s := fmt.Sprintf("then the final log places %s at index %d", o.name(), o.Index)
		if len(ex.Missing) > 0 && o.Type != eventlog.RunFailed {
			s += ", after " + named(ex.Missing)[0].name()
		}
		if ex.Reference != nil {
			s += fmt.Sprintf(": the reference replay (%s wake) disagrees there: %s", ex.Reference.Wake, ex.Divergence)
		} else {
			s += ": " + ex.Divergence
		}
		steps = append(steps, s)
	}
	if d := ex.Disagreed; d != nil {
		s := fmt.Sprintf("then %s loaded %d events at %s, including it, and its replay diverged: %s", d.Actor, d.N, clock(d.At), d.Divergence)
		if d.Failed {
			s += "; it wrote run_failed"
		}
		if d.Others > 0 {
			s += fmt.Sprintf(" (%s read it and wrote nothing after)", plural.Count(d.Others, "more invocation"))
		}
		steps = append(steps, s)
	}
	return append(steps, ending(ex))
}

// ending is the narrative's last step: what the run ended with.
func ending(ex *Explanation) string {
	switch {
	case ex.EngineError == "":
		return "the run ended " + ex.Outcome
	case ex.Outcome == outcomeSilent:
		return "the run completed and the ledger check found: " + ex.EngineError
	case ex.Outcome == outcomeStuck:
		return "the run ended stuck: " + ex.EngineError
	}
	return "the engine raised: " + ex.EngineError
}

func slotSteps(ex *Explanation) []string {
	var steps []string
	if v := ex.View; v != nil && len(v.Pages) > 0 {
		what := "position"
		if ex.Class == Hole {
			what = "slot"
		}
		s := fmt.Sprintf("let %s load after %s at %s", v.Actor, v.Pages[0].After, clock(v.Pages[0].Start))
		if ex.Offending != nil {
			s += fmt.Sprintf(": %s %d is empty below a committed one", what, ex.Offending.Seq)
		}
		steps = append(steps, s)
	}
	for _, e := range ex.Evidence[min(len(ex.Evidence), 1):] {
		steps = append(steps, "then "+e)
	}
	return append(steps, ending(ex))
}

func blockedSteps(ex *Explanation) []string {
	var steps []string
	if o := ex.Offending; o != nil {
		steps = append(steps, fmt.Sprintf("let %s write %s at %s", orNobody(o.Writer), o.name(), clock(o.CommittedAt)))
	}
	for _, e := range ex.Evidence {
		steps = append(steps, "then "+e)
	}
	return append(steps, ending(ex))
}

// slowSteps narrates a run that timed out while still at work (writing,
// reading, or with nothing pending due yet): what it was doing, then the
// ending.
func slowSteps(ex *Explanation) []string {
	steps := slices.Clone(ex.Evidence)
	for i := 1; i < len(steps); i++ {
		steps[i] = "then " + steps[i]
	}
	return append(steps, ending(ex))
}
