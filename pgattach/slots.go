package pgattach

import (
	"cmp"
	"slices"

	"github.com/stormctl/stormctl/eventlog"
	"github.com/stormctl/stormctl/forensics"
)

// slotFindings counts what forensics.AnalyzeSlots(final, nil) counts for a
// run of a slot table (every event's Seq its position, at least 1): the
// empty positions below the highest one present (FinalHoles), the noops
// (Seals) and the positions holding a noop and another event (SealRaces);
// dups counts the events at a position another event already holds, as
// forensics.Density does. An attached table has no history, so nothing else
// is known. One sort of the run's positions, without AnalyzeSlots's map of
// events per position: a table of a million events pays for a sort, not a
// million map entries (TestSlotFindingsMatchAnalyzeSlots holds the two
// together).
func slotFindings(evs []forensics.CommitEvent) (f forensics.SlotFindings, dups int) {
	type slot struct {
		pos  int64
		noop bool
	}
	ps := make([]slot, len(evs))
	for i, e := range evs {
		ps[i] = slot{e.Seq, e.Type == eventlog.Noop}
		if ps[i].noop {
			f.Seals++
		}
	}
	slices.SortFunc(ps, func(a, b slot) int { return cmp.Compare(a.pos, b.pos) })
	var last int64 // the position of the group before
	for i := 0; i < len(ps); {
		j, noop := i, false
		for ; j < len(ps) && ps[j].pos == ps[i].pos; j++ {
			noop = noop || ps[j].noop
		}
		if p := ps[i].pos; p > last+1 {
			f.FinalHoles += int(p - last - 1)
		}
		if j-i > 1 {
			dups += j - i - 1
			if noop {
				f.SealRaces++
			}
		}
		last, i = max(last, ps[i].pos), j
	}
	return f, dups
}
