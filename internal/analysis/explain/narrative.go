package explain

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/stormctl/stormctl/internal/base/plural"
	"github.com/stormctl/stormctl/internal/eventlog"
	"github.com/stormctl/stormctl/internal/history"
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

func orNobody(actor string) string {
	if actor == "" {
		return "an unrecorded writer"
	}
	return actor
}

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
	case DuplicateCreate:
		steps = duplicateSteps(ex)
	case BlockedBranch:
		steps = blockedSteps(ex)
	case Slow:
		steps = slowSteps(ex)
	case Starved:
		steps = []string{
			"the run started on one of its cell's host processes, where the published runtime delivers all its invocations",
			"that host's event loop was saturated for most of the run's life: every delivery waited for the others, of this run and of its neighbours",
			"the run had no terminal event by the timeout: it waited for the harness's host, not for the runtime or its world",
			"this is the harness's finding, reported infra and never stuck: storm with --admission auto (the default), more --hosts or fewer --runs-in-flight",
		}
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
	case Starved:
		return "the harness starved it: " + ex.Evidence[0]
	case StalePrefix, CursorSkip:
		if ex.Writer != nil && ex.Offending != nil && len(ex.Missing) > 0 {
			m := named(ex.Missing)[0]
			how := fmt.Sprintf("committed %s after its load began", ms(m.AfterLoad))
			if m.Skipped {
				how = "its cursor had already passed it"
			}
			return fmt.Sprintf("%s wrote %s from a view lacking %s (%s)", ex.Writer.Actor, written(ex).name(), m.name(), how)
		}
	case DuplicateCreate:
		if len(ex.Duplicates) > 0 {
			d := ex.Duplicates[0]
			var by []string
			for _, c := range d.Creations {
				by = append(by, orNobody(c.Writer))
			}
			s := fmt.Sprintf("the world accepted %d %s (written by %s), breaking its uniqueness contract (a world-layer finding)",
				len(d.Creations), creationsName(d), joinList(by))
			switch {
			case ex.EngineRelation == relDuplicate:
				s += "; the engine's error names it"
			case ex.Divergence != "":
				s += "; the reference replay disagrees at an event of it"
			}
			return s
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

// stepRefs are the numbers of the narrative's steps that name what the
// engine's error may be about (0: no such step).
type stepRefs struct {
	view, write, offend int
	// creations are the steps naming each creation of a duplicate-create.
	creations []int
}

func divergenceSteps(ex *Explanation) []string {
	var steps []string
	var refs stepRefs
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
		refs.view = len(steps)
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
		refs.write = len(steps)
		if wr.Index == ex.Offending.Index {
			refs.offend = refs.write
		}
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
		refs.offend = len(steps)
	}
	if s := disagreedStep(ex); s != "" {
		steps = append(steps, s)
	}
	return append(steps, ending(ex)+link(ex, refs))
}

// disagreedStep is the step naming the later invocation whose replay of a
// view holding the offending event diverged ("" when none did).
func disagreedStep(ex *Explanation) string {
	d := ex.Disagreed
	if d == nil {
		return ""
	}
	s := fmt.Sprintf("then %s loaded %d events at %s, including it, and its replay diverged: %s", d.Actor, d.N, clock(d.At), d.Divergence)
	if d.Divergence == "" {
		// No reference replay of the runtime: its silence is what was
		// recorded (its error, the last step, is its latest divergence).
		s = fmt.Sprintf("then %s loaded %d events at %s, including it, and wrote nothing after", d.Actor, d.N, clock(d.At))
	}
	if d.Failed {
		s += "; it wrote run_failed"
	}
	if d.Others > 0 {
		s += fmt.Sprintf(" (%s read it and wrote nothing after)", plural.Count(d.Others, "more invocation"))
	}
	return s
}

// creationsName names a duplicate's creations: "wait_created for wait_1"
// or "hook_created holding token tok".
func creationsName(d Duplicate) string {
	if len(d.Creations) == 0 {
		return d.Key
	}
	c := d.Creations[0]
	if tok, ok := strings.CutPrefix(d.Key, "hook_token/"); ok {
		return fmt.Sprintf("%s holding token %q", c.Type, tok)
	}
	return fmt.Sprintf("%s for %s", c.Type, c.CorrelationID)
}

// duplicateSteps narrates a duplicate-create: each creation and who wrote
// it, the second from a view that lacked (or held) the first; where the
// reference replay disagrees; the later invocation that diverged; the
// ending.
func duplicateSteps(ex *Explanation) []string {
	var steps []string
	var refs stepRefs
	if len(ex.Duplicates) == 0 {
		return []string{ending(ex)}
	}
	d := ex.Duplicates[0]
	for k, c := range d.Creations {
		s := fmt.Sprintf("then %s wrote %s (minted %s, committed %s), at index %d", orNobody(c.Writer), c.name(), clock(c.MintedAt), clock(c.CommittedAt), c.Index)
		if k > 0 {
			s = fmt.Sprintf("then %s wrote %s again (minted %s, committed %s), at index %d", orNobody(c.Writer), c.name(), clock(c.MintedAt), clock(c.CommittedAt), c.Index)
			if v := ex.View; k == 1 && v != nil && ex.Offending != nil && c.Index == ex.Offending.Index && len(v.Pages) > 0 {
				s += fmt.Sprintf(", after loading %s at %s", plural.Count(v.N, "event"), clock(v.Pages[0].Start))
			}
			s += ": the world accepted it again, although its uniqueness contract allows one creation per entity"
		}
		if k == maxNamed {
			steps = append(steps, fmt.Sprintf("then %d more %s for it were written", len(d.Creations)-k, c.Type))
			break
		}
		steps = append(steps, s)
		refs.creations = append(refs.creations, len(steps))
	}
	if ex.Divergence != "" {
		at := ex.Offending
		if ex.DisagreesAt != nil {
			at = ex.DisagreesAt
		}
		steps = append(steps, fmt.Sprintf("then the final log places %s at index %d: the reference replay disagrees there: %s", at.name(), at.Index, ex.Divergence))
		refs.offend = len(steps)
	}
	if s := disagreedStep(ex); s != "" {
		steps = append(steps, s)
	}
	return append(steps, ending(ex)+link(ex, refs))
}

// link says how the event the engine's error names relates to the
// offending event and the steps that name them ("" when the error names
// no event of the final log).
func link(ex *Explanation, refs stepRefs) string {
	e := ex.EngineNames
	if e == nil || ex.Offending == nil {
		return ""
	}
	at := func(n int) string {
		if n == 0 {
			return ""
		}
		return fmt.Sprintf(" (step %d)", n)
	}
	by := fmt.Sprintf("written by %s at %s", orNobody(e.Writer), clock(e.CommittedAt))
	s := "; the error names " + e.name()
	switch ex.EngineRelation {
	case relOffending:
		s += ", the offending event" + at(refs.offend)
	case relSameOperation:
		s += fmt.Sprintf(" (index %d), of the same operation as the offending event%s", e.Index, at(refs.offend))
	case relSameWrite:
		s += fmt.Sprintf(" (index %d), which %s wrote with the offending event", e.Index, orNobody(e.Writer))
		if refs.write > 0 {
			s += fmt.Sprintf(" at step %d", refs.write)
		}
		s += ", after the same view"
		if refs.view > 0 {
			s += fmt.Sprintf(" (step %d)", refs.view)
		}
	case relMissing:
		s += fmt.Sprintf(" (index %d), which the writer's view lacked%s", e.Index, at(refs.view))
	case relDuplicate:
		s += ", the entity created more than once"
		if len(refs.creations) > 1 {
			ns := make([]string, len(refs.creations))
			for i, n := range refs.creations {
				ns[i] = fmt.Sprint(n)
			}
			last := len(ns) - 1
			s += " (steps " + joinList(ns[:last]) + " and " + ns[last] + ")"
		}
	case relDownstream:
		s += fmt.Sprintf(" (index %d, %s from a view that held the offending event%s): the engine's replay took that event as written and disagreed later", e.Index, by, at(refs.offend))
	case relLater:
		s += fmt.Sprintf(" (index %d, %s), which the final log places after the offending event%s", e.Index, by, at(refs.offend))
	case relEarlier:
		s += fmt.Sprintf(" (index %d, %s), which the final log places before the offending event%s", e.Index, by, at(refs.offend))
	}
	return s
}

// ending is the narrative's last step: what the run ended with.
func ending(ex *Explanation) string {
	switch {
	case ex.EngineError == "":
		return "the run ended " + string(ex.Outcome)
	case ex.Outcome == history.Silent:
		return "the run completed and the ledger check found: " + ex.EngineError
	case ex.Outcome == history.Stuck:
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
