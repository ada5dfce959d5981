package explain

import (
	"slices"

	"github.com/stormctl/stormctl/internal/engine"
	"github.com/stormctl/stormctl/internal/eventlog"
	"github.com/stormctl/stormctl/internal/history"
)

// Pages rebuilds what the recorded pages of one run returned, from its
// final log and commit times, as explanations rebuild a writer's view: a
// page holds the final log's events in its cursor range that had
// committed when it read, the events committing while it read chosen so
// that the recorded count and id hash match. A replay serves these pages
// to the invocations it re-executes (package replay).
type Pages struct{ r *run }

// NewPages prepares a run's final log (in any order) and its recorded
// history ops for rebuilding its pages under scheme.
func NewPages(scheme eventlog.Scheme, final []eventlog.Event, ops []history.Op) *Pages {
	return &Pages{r: prepare(Input{Knobs: engine.Knobs{Scheme: scheme}, Final: final, Ops: ops})}
}

// Page returns the events the list operation ops[i] returned, in the
// scheme's order, and whether they have its recorded count and id hash.
// When they do not (ok false) the events are a best guess: those in its
// range that had committed when it ended. An op that is no list, or whose
// read failed, returns nothing and false.
func (p *Pages) Page(i int) (events []eventlog.Event, ok bool) {
	if i < 0 || i >= len(p.r.in.Ops) {
		return nil, false
	}
	op := p.r.in.Ops[i]
	if op.Kind != history.OpList || op.Read == nil {
		return nil, false
	}
	if op.Read.N == 0 {
		return nil, true
	}
	// A page holding every event of its range is known by count and hash
	// alone, whatever the commit times say.
	lo, hi := p.r.upTo(op.After), p.r.upTo(op.Read.Last)
	if hi-lo == op.Read.N {
		var h uint64
		for _, e := range p.r.ordered[lo:hi] {
			h += history.IDHash(e.ID)
		}
		if h == op.Read.SetHash {
			return append([]eventlog.Event(nil), p.r.ordered[lo:hi]...), true
		}
	}
	pos, ok := p.r.pageVisible(op)
	slices.Sort(pos)
	for _, k := range pos {
		events = append(events, p.r.ordered[k])
	}
	return events, ok
}
