package explain

import (
	"fmt"
	"slices"

	"github.com/stormctl/stormctl/internal/eventlog"
	"github.com/stormctl/stormctl/internal/history"
)

// This file explains the hole class.

// hole explains a run the slot scheme's holes stopped: the empty slot, who
// first refused it, and whether and when it was ever filled.
func (r *run) hole(ex *Explanation) {
	ex.Class = Hole
	slot, above := r.firstGap(), int64(0)
	refused := r.refusal(errHole)
	if refused >= 0 {
		op := r.in.Ops[refused]
		slot, above = op.Slot, op.Above
		refusals := 0
		for _, o := range r.in.Ops {
			if o.Kind == history.OpList && o.Err == errHole && o.Slot == slot {
				refusals++
			}
		}
		ex.View = &View{Actor: op.Actor, Pages: []Page{{After: op.After.Text(), Start: op.Start, End: op.End}}}
		ex.Evidence = append(ex.Evidence, fmt.Sprintf("%s's load at %s refused empty slot %d below committed slot %d (%d refusals of that slot in all)",
			op.Actor, clock(op.Start), slot, above, refusals))
	}
	if slot == 0 {
		ex.Class = Unknown
		ex.MissingEvidence = append(ex.MissingEvidence, "no load refused a hole and the final log has none")
		return
	}
	ex.Offending = &Event{Index: -1, Seq: slot}
	if i := slices.IndexFunc(r.ordered, func(e eventlog.Event) bool { return e.Seq == slot }); i >= 0 {
		ev := r.event(i)
		ex.Offending = &ev
		msg := fmt.Sprintf("slot %d was filled by %s %s", slot, ev.Type, ev.ID)
		if ev.Writer != "" {
			msg += " written by " + ev.Writer
		}
		if !ev.CommittedAt.IsZero() && refused >= 0 {
			msg += fmt.Sprintf(", committed %s after the first refusal", ms(ev.CommittedAt.Sub(r.in.Ops[refused].Start)))
		}
		ex.Evidence = append(ex.Evidence, msg)
	} else {
		ex.Evidence = append(ex.Evidence, fmt.Sprintf("slot %d is still empty in the final log: its writer never committed and nobody sealed it", slot))
	}
	// The writers that failed before the first refusal are the candidates
	// for the reservation that was never committed in time.
	var failed []string
	for _, op := range r.in.Ops {
		if (op.Kind == history.OpAppend || op.Kind == history.OpAppendFenced) && op.Err != "" && op.Err != "conflict" &&
			(refused < 0 || op.Start.Before(r.in.Ops[refused].Start)) && len(failed) < 3 {
			failed = append(failed, fmt.Sprintf("%s (%s at %s: %s)", op.Actor, writtenTypes(op), clock(op.Start), op.Err))
		}
	}
	if len(failed) > 0 {
		ex.Evidence = append(ex.Evidence, "appends that failed before the first refusal (a reservation left empty): "+joinList(failed))
	}
	if ex.Offending.ID == "" && len(failed) == 0 {
		ex.MissingEvidence = append(ex.MissingEvidence, fmt.Sprintf("the history does not say who reserved slot %d", slot))
	}
}

// writtenTypes names the types an append tried to write.
func writtenTypes(op history.Op) string {
	var ts []string
	for _, w := range op.Wrote {
		ts = append(ts, string(w.Type))
	}
	return joinList(ts)
}
