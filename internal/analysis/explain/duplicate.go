package explain

import (
	"fmt"
	"slices"
	"strings"
	"unicode"

	"github.com/stormctl/stormctl/forensics"
	"github.com/stormctl/stormctl/internal/base/plural"
	"github.com/stormctl/stormctl/internal/engine"
)

// duplicateCreate classes a corrupted or silent run duplicate-create when
// its final log creates one step, wait or hook more than once
// (forensics.ScanCreations, the checker's own definition) and that
// duplicate is what went wrong: the engine's error names one of its
// creations or its correlation id, or the reference replay's first
// disagreement is at an event of its correlation id. The world broke its
// uniqueness contract; whoever wrote the creations, the cause is the
// world's. It reports whether it classed the run.
func (r *run) duplicateCreate(ex *Explanation, ref engine.Outcome) bool {
	scan := forensics.ScanCreations(r.ordered)
	if len(scan.Duplicates) == 0 {
		return false
	}
	defer func() {
		if ex.Class != DuplicateCreate {
			where := "named by the engine's error or where the reference replay first disagrees"
			if !r.reference {
				where = "named by the runtime's error"
			}
			r.dupNote = fmt.Sprintf("the final log also holds %s (an entity the world created again), none of them %s",
				plural.Count(scan.Extra, "duplicate creation"), where)
		}
	}()
	// groups: per duplicate, its creations' positions and the correlation
	// ids they hold.
	type group struct {
		d     forensics.Duplicate
		at    []int
		corrs []string
	}
	groups := make([]group, len(scan.Duplicates))
	for k, d := range scan.Duplicates {
		g := group{d: d}
		for _, id := range d.IDs {
			if p, ok := r.index[id]; ok && !slices.Contains(g.at, p) {
				g.at = append(g.at, p)
				if c := r.ordered[p].CorrelationID; c != "" && !slices.Contains(g.corrs, c) {
					g.corrs = append(g.corrs, c)
				}
			}
		}
		// In the order the world accepted them (commit time, then the
		// final log's order): the second is the one it should have
		// refused.
		slices.SortFunc(g.at, func(a, b int) int {
			ca, cb := r.commit[r.ordered[a].ID], r.commit[r.ordered[b].ID]
			if !ca.IsZero() && !cb.IsZero() && !ca.Equal(cb) {
				return ca.Compare(cb)
			}
			return a - b
		})
		groups[k] = g
	}
	holds := func(g group, p int) bool {
		return slices.Contains(g.at, p) || slices.Contains(g.corrs, r.ordered[p].CorrelationID)
	}
	// The duplicate the engine's error names, else the one the reference
	// replay first disagrees at.
	pick, why := -1, ""
	for _, p := range r.named(r.in.Detail) {
		if k := slices.IndexFunc(groups, func(g group) bool { return len(g.at) > 1 && holds(g, p) }); k >= 0 {
			pick, why = k, "the engine's error names "+r.event(p).name()
			break
		}
	}
	at, msg := r.firstDisagreement(ref)
	if pick < 0 && at >= 0 {
		if k := slices.IndexFunc(groups, func(g group) bool { return len(g.at) > 1 && holds(g, at) }); k >= 0 {
			pick, why = k, fmt.Sprintf("the reference replay (%s wake) first disagrees at %s, of that entity", r.wake, r.event(at).name())
		}
	}
	if pick < 0 {
		return false
	}
	g := groups[pick]
	ex.Class = DuplicateCreate
	dup := Duplicate{Key: g.d.Key}
	for _, p := range g.at {
		dup.Creations = append(dup.Creations, r.event(p))
	}
	ex.Duplicates = []Duplicate{dup}
	// The offending event is the second creation the world accepted: the
	// one it should have refused.
	second := g.at[1]
	ev := r.event(second)
	ex.Offending = &ev
	if at >= 0 && holds(g, at) {
		ex.Divergence = msg
		if at != second {
			d := r.event(at)
			ex.DisagreesAt = &d
		}
	}
	what := string(g.d.Type)
	if g.d.Token != "" {
		what += " holding token " + g.d.Token
	} else {
		what += " for " + g.d.CorrelationID
	}
	var each []string
	for _, c := range dup.Creations {
		each = append(each, fmt.Sprintf("%s at index %d (written by %s, minted %s, committed %s)", c.ID, c.Index, orNobody(c.Writer), clock(c.MintedAt), clock(c.CommittedAt)))
	}
	ex.Evidence = append(ex.Evidence, fmt.Sprintf("the final log holds %d %s: %s", len(dup.Creations), what, joinList(each)))
	ex.Evidence = append(ex.Evidence, "the world accepted a second creation of one entity, which its uniqueness contract forbids (one creation per type and correlation id, one hook per token): a world-layer finding")
	ex.Evidence = append(ex.Evidence, why)
	if opIdx, ok := r.writer[ev.ID]; ok {
		op := r.in.Ops[opIdx]
		var implicit string
		ex.Writer, implicit = r.writerOf(opIdx)
		if implicit != "" {
			ex.Evidence = append(ex.Evidence, implicit)
		}
		if v := r.viewBefore(op.Actor, opIdx); v != nil {
			ex.View = r.describe(v)
			ex.Writer.Wrote = r.suspension(op.Actor, v.pages[len(v.pages)-1].op, opIdx)
			first := g.at[0]
			if v.visible[first] {
				ex.Evidence = append(ex.Evidence, fmt.Sprintf("%s's view (%s) held the first creation, and it wrote the entity again", op.Actor, plural.Count(v.n, "event")))
			} else {
				ex.Evidence = append(ex.Evidence, fmt.Sprintf("%s's view (%s, loaded at %s) lacked the first creation: both writers derived it", op.Actor, plural.Count(v.n, "event"), clock(v.start)))
			}
		}
	}
	if n := scan.Extra; n > len(dup.Creations)-1 {
		ex.Evidence = append(ex.Evidence, fmt.Sprintf("the final log holds %s in all", plural.Count(n, "duplicate creation")))
	}
	r.disagreed(ex, second)
	return true
}

// noteDuplicates adds to ex's evidence the duplicate creations the final
// log holds that its class does not rest on (none when it has none), and
// the run's ends beyond its first (what forensics.ExtraEnds counts).
func (r *run) noteDuplicates(ex *Explanation) {
	if r.dupNote != "" {
		ex.Evidence = append(ex.Evidence, r.dupNote)
	}
	var ends []string
	for _, e := range r.ordered {
		if e.Type.IsTerminal() {
			ends = append(ends, string(e.Type)+" "+e.ID)
		}
	}
	if len(ends) > 1 {
		ex.Evidence = append(ex.Evidence, fmt.Sprintf("the final log holds %d terminal events (%s): the world ended the run more than once, a world-layer finding",
			len(ends), joinList(ends)))
	}
}

// firstDisagreement is the final-log position of the reference replay's
// first disagreement (a divergence, or a step whose arguments differ from
// the call's) and its message, or -1.
func (r *run) firstDisagreement(ref engine.Outcome) (int, string) {
	d, u := ref.Divergence, ref.Unchecked
	switch {
	case d != nil && (u == nil || d.Index <= u.Index):
		return d.Index, d.Msg
	case u != nil:
		return u.Index, u.Msg
	}
	return -1, ""
}

// named lists the final-log positions of the events a text names, in the
// order it names them: an event by its id, an operation by its correlation
// id (its creation, else its first event). Ids are read as whole words of
// the text (letters, digits, '_' and '-'), so one id never matches inside
// another.
func (r *run) named(text string) []int {
	if text == "" {
		return nil
	}
	byCorr := map[string]int{}
	for i, e := range r.ordered {
		if e.CorrelationID == "" {
			continue
		}
		p, seen := byCorr[e.CorrelationID]
		if !seen || (!creates(r.ordered[p].Type) && creates(e.Type)) {
			byCorr[e.CorrelationID] = i
		}
	}
	var out []int
	words := strings.FieldsFunc(text, func(c rune) bool {
		return !unicode.IsLetter(c) && !unicode.IsDigit(c) && c != '_' && c != '-'
	})
	for _, w := range words {
		p, ok := r.index[w]
		if !ok {
			p, ok = byCorr[w]
		}
		if ok && !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	return out
}
