package explain

import (
	"fmt"
	"slices"

	"github.com/stormctl/stormctl/internal/eventlog"
)

// This file explains the density class.

// density explains a gap outcome: the load whose density check failed, the
// position it found empty, and when (if ever) that position committed.
func (r *run) density(ex *Explanation) {
	ex.Class = Density
	refused := r.refusal(errGap, errDup)
	if refused < 0 {
		if pos := r.firstGap(); pos > 0 {
			ex.Offending = &Event{Index: -1, Seq: pos}
			ex.Evidence = append(ex.Evidence, fmt.Sprintf("the final log has no event at seq %d below a committed one", pos))
			return
		}
		ex.Class = Unknown
		ex.MissingEvidence = append(ex.MissingEvidence, "no load failed its density check and the final log is dense")
		return
	}
	op := r.in.Ops[refused]
	ex.View = &View{Actor: op.Actor, Pages: []Page{{After: op.After.Text(), Start: op.Start, End: op.End}}}
	ex.Evidence = append(ex.Evidence, fmt.Sprintf("%s's load at %s after %s failed its density check: %s", op.Actor, clock(op.Start), op.After.Text(), op.Err))
	// The empty position: the first after the cursor not committed when
	// the load read, below one that was.
	var seen int64
	for _, e := range r.ordered {
		if c, ok := r.commit[e.ID]; ok && e.Seq > op.After.Seq && c.Before(op.Start) {
			seen = max(seen, e.Seq)
		}
	}
	// The first position absent, or certainly not committed when the load
	// started (its earliest commit observation is later); failing that,
	// the first not surely committed (its latest observation is later).
	for _, sure := range []bool{true, false} {
		for s := op.After.Seq + 1; s < seen; s++ {
			i := slices.IndexFunc(r.ordered, func(e eventlog.Event) bool { return e.Seq == s })
			if i < 0 {
				ex.Offending = &Event{Index: -1, Seq: s}
				ex.Evidence = append(ex.Evidence, fmt.Sprintf("seq %d never committed while seq %d had: a position drawn before commit and lost", s, seen))
				return
			}
			id := r.ordered[i].ID
			c, ok := r.commit[id]
			late := !ok || c.After(op.Start)
			if sure {
				late = ok && r.commitLo[id].After(op.Start)
			}
			if late {
				ev := r.event(i)
				ex.Offending = &ev
				msg := fmt.Sprintf("seq %d (%s by %s) was not committed when the load read while seq %d was", s, ev.Type, orNobody(ev.Writer), seen)
				if ok {
					msg += fmt.Sprintf("; it committed %s later", ms(c.Sub(op.Start)))
				}
				ex.Evidence = append(ex.Evidence, msg)
				return
			}
		}
	}
	ex.MissingEvidence = append(ex.MissingEvidence, "the empty position could not be placed from the commit times")
}
