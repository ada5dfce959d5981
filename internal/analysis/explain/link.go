package explain

import (
	"slices"
)

// How the event the engine's error names relates to the offending event
// (Explanation.EngineRelation).
const (
	relOffending     = "offending"
	relSameOperation = "same-operation"
	relSameWrite     = "same-write"
	relMissing       = "missing"
	relDuplicate     = "duplicate"
	relDownstream    = "downstream"
	relLater         = "later"
	relEarlier       = "earlier"
)

// link finds the event of the final log the engine's error names (the
// first it names: an event id, or an operation's correlation id) and how
// it relates to the offending event, so that the narrative can say why the
// engine complained about that event and not the one the explanation
// names.
func (r *run) link(ex *Explanation) {
	if ex.Offending == nil || ex.Offending.Index < 0 || ex.EngineError == "" {
		return
	}
	ps := r.named(ex.EngineError)
	if len(ps) == 0 {
		return
	}
	p, o := ps[0], ex.Offending.Index
	ev := r.event(p)
	ex.EngineNames = &ev
	inDup := func() bool {
		for _, d := range ex.Duplicates {
			if slices.ContainsFunc(d.Creations, func(c Event) bool {
				return c.Index == p || c.CorrelationID == ev.CorrelationID && c.CorrelationID != ""
			}) {
				return true
			}
		}
		return false
	}
	switch {
	case ex.Class == DuplicateCreate && inDup():
		ex.EngineRelation = relDuplicate
	case p == o:
		ex.EngineRelation = relOffending
	case ev.CorrelationID != "" && ev.CorrelationID == ex.Offending.CorrelationID:
		ex.EngineRelation = relSameOperation
	case ex.Writer != nil && slices.ContainsFunc(ex.Writer.Wrote, func(w Event) bool { return w.Index == p }):
		ex.EngineRelation = relSameWrite
	case slices.ContainsFunc(ex.Missing, func(m Missing) bool { return m.Index == p }):
		ex.EngineRelation = relMissing
	case p > o && r.heldBy(p, o):
		ex.EngineRelation = relDownstream
	case p > o:
		ex.EngineRelation = relLater
	default:
		ex.EngineRelation = relEarlier
	}
}

// heldBy reports whether the view the event at final position p was
// written from held final position o.
func (r *run) heldBy(p, o int) bool {
	opIdx, ok := r.writer[r.ordered[p].ID]
	if !ok {
		return false
	}
	v := r.viewBefore(r.in.Ops[opIdx].Actor, opIdx)
	return v != nil && v.visible[o]
}
