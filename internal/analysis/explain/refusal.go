package explain

import (
	"slices"
	"strings"

	"github.com/stormctl/stormctl/forensics"
	"github.com/stormctl/stormctl/internal/eventlog"
	"github.com/stormctl/stormctl/internal/history"
)

// This file finds the load refusals behind the hole and density classes.

// Error classes of recorded operations (eventlog.Classify).
const (
	errHole = "hole"
	errGap  = "gap"
	errDup  = "duplicate"
)

// firstGap is the lowest position missing below a present one in the
// final log (a slot log's first hole), or 0.
func (r *run) firstGap() int64 {
	return forensics.ScanPositions(forensics.PositionsOf(r.ordered)).FirstGap
}

// refusal is the load refusal (a list failing with one of errs) that
// failed the run: the last one before its run_failed by the invocation
// that wrote it, else the first by an invocation, else the first by
// anyone (drivers and hook senders refuse too, but fail nothing). It
// returns -1 when no load was refused.
func (r *run) refusal(errs ...string) int {
	refused := func(op history.Op) bool { return op.Kind == history.OpList && slices.Contains(errs, op.Err) }
	if f := slices.IndexFunc(r.ordered, func(e eventlog.Event) bool { return e.Type == eventlog.RunFailed }); f >= 0 {
		if w, ok := r.writer[r.ordered[f].ID]; ok {
			for i := w - 1; i >= 0; i-- {
				if op := r.in.Ops[i]; op.Actor == r.in.Ops[w].Actor && refused(op) {
					return i
				}
			}
		}
	}
	if i := slices.IndexFunc(r.in.Ops, func(op history.Op) bool { return refused(op) && strings.HasPrefix(op.Actor, "inv-") }); i >= 0 {
		return i
	}
	return slices.IndexFunc(r.in.Ops, refused)
}
