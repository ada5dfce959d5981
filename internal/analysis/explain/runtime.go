package explain

import (
	"fmt"

	"github.com/stormctl/stormctl/internal/engine"
)

// This file explains a corrupted or silent run of an engine explain has no
// reference replay of: the devkit engine, the published @workflow/core.
//
// The model's replay is no reference for such a run. Core mints correlation
// ids as seeded ULIDs where the model hashes positions, so no decision of
// the real log is ever derived as written; and even with the ids mapped by
// their draw ordinal the model's delivery is not core's (in a recorded
// devkit-postgres run, core 4.8.9 took a branch's step path from a view
// whose wait_completed sorts before the step's step_completed, where the
// model's engine wake, in log order, takes the timer's). So the class rests
// on structure alone: the event the runtime's own error names, who wrote
// it (or the decision creating its operation, for a fact), what that writer
// had read, and what the final log places before the write that the view
// lacked. Which missing event decided the write is not replayed.

// noReplay says why no missing event of a runtime's run is marked
// decisive.
const noReplay = "which missing event decided the write: not replayed: explain has no reference replay of @workflow/core"

// runtimeNames is the offending event's Divergence when the runtime's own
// error names it.
const runtimeNames = "@workflow/core's own replay disagreed there (the runtime's error names it)"

// runtimeDivergence explains a corrupted or silent run of the published
// runtime: an entity the world created twice when the runtime's error names
// it (duplicateCreate, without the reference replay's first disagreement);
// else the event the runtime's error names, its writer's view and what that
// view lacked: stale-prefix when it lacked events the final log places
// before the write, cursor-skip when a cursor had passed one of them,
// unknown when the view was exactly the final log's prefix before the
// write (wake order cannot be told without a reference replay) or the
// error names no event of the final log.
func (r *run) runtimeDivergence(ex *Explanation) {
	if r.duplicateCreate(ex, engine.Outcome{}) {
		return
	}
	ps := r.named(r.in.Detail)
	if len(ps) == 0 {
		ex.Class = Unknown
		ex.MissingEvidence = append(ex.MissingEvidence, fmt.Sprintf(
			"the run's error names no event of the final log (%d events), and explain has no reference replay of @workflow/core to find where it went wrong", len(r.ordered)))
		return
	}
	ex.Evidence = append(ex.Evidence, fmt.Sprintf("the offending event is the one the runtime's error names (index %d): its latest divergence; earlier ones, if any, are not recorded", ps[0]))
	r.offend(ex, ps[0], runtimeNames)
}

// unreplayed classes the write at final position j of a runtime's run whose
// writer's view v lacked nothing and held nothing extra: the view was the
// exact prefix, and without a reference replay nothing says whether it
// derives the write.
func (r *run) unreplayed(ex *Explanation, v *view, actor string) {
	ex.Class = Unknown
	ex.MissingEvidence = append(ex.MissingEvidence, fmt.Sprintf(
		"%s's view was exactly the final log's first %d events before its write, and explain has no reference replay of @workflow/core to say whether that view derives the write (the runtime's own wake order, or a disagreement elsewhere)",
		actor, v.n))
}
