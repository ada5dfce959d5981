// Package explain says why one run of a storm went wrong, from what was
// recorded of it (its history of reads and appends and its final log),
// never from the outcome alone.
//
// Classify finds the offending event (the first event a reference replay
// of the final log, in the scheme's order, disagrees with; the empty
// position of a hole or a gap; the operation a stuck run waits on), who
// wrote it and what that writer had read before it wrote, and names a
// root-cause class:
//
//   - stale-prefix: the writer's view was not the final log's prefix before
//     its write: events the final log places before the write were not
//     visible when it loaded (they committed after its load began). Either
//     the view was itself not a prefix (a later event visible without an
//     earlier one), or it was a prefix that events minted before the write
//     and committed after the load extended underneath it.
//   - cursor-skip: as stale-prefix, but a missing event had committed
//     before the view's last page started, while the writer's cursor had
//     already passed it (an earlier page of the same load, or of an earlier
//     load, since an invocation's loads read on from its cursor): pagination,
//     not the snapshot, hid it. Forensics counts the same events as cursor
//     skips, so a run of this class counts at least one.
//   - wake-order: the view was exactly the final prefix before the write,
//     yet a replay of that view with the reference wake does not derive
//     what the writer wrote: same view, another draw order (model-engine
//     runs only).
//   - duplicate-create: the final log creates one step, wait or hook more
//     than once (forensics.ScanCreations), and the engine's error names that
//     entity (an event id or its correlation id), or the reference replay
//     first disagrees at an event of it: the world accepted a creation its
//     uniqueness contract forbids, a world-layer finding whoever wrote it.
//     Duplicates that are not where the run went wrong are a line of
//     evidence of the class the run gets.
//   - hole: under the slot scheme, a load refused an empty slot below a
//     committed one (the hole outcome), or the final log still has one.
//   - density: a positioned log's load met a gap (the gap outcome).
//   - blocked-branch: a stuck run with no write for a quiet period before
//     its end whose final log, replayed, derives decisions nobody wrote
//     (a lost wake-up: the log held what the workflow needed to go on), or
//     holds an operation created and never completed that was due to
//     advance (a step never started, a started step whose work, by the
//     scenario's step function, was over, a wait whose timer was due) a
//     quiet period before the run's end.
//   - slow: a stuck run that was still working when it timed out (a commit
//     within the quiet period before its end, or an append or a load in
//     flight through it), or whose pending operations were none of them due (a
//     step still working, a timer not yet due, hooks waiting on their
//     senders): the timeout cut a run in progress, not a blocked one; the
//     evidence names its slowest append or what each operation awaited.
//   - unknown: none of the above could be shown; the explanation says what
//     evidence was missing.
//
// The reference replay uses the condition's id policy and its wake when
// that is deterministic (engine, ordered), else ordered wake. It is the
// model's: a run of another engine (Input.Engine: the devkit engine's
// published @workflow/core) is classed without it, from the event the
// runtime's own error names, its writer's view and what that view lacked
// (stale-prefix, cursor-skip), or an entity created twice the error names
// (duplicate-create); never wake-order, no missing event marked decisive,
// and unknown when the view was the exact prefix before the write. Every
// explanation carries its evidence and an Elle-style numbered narrative;
// when the engine's error names an event of the final log (by id, or by
// its operation's correlation id), the narrative's last step says how that
// event relates to the offending one (the same, written after the same
// view, lacked by it, written later from a view holding it, ...).
package explain
