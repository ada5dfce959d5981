// Package engine is stormctl's model of the Workflow DevKit replay runtime.
//
// A workflow Program is a Go function over *Ctx. Every invocation loads the
// run's log, replays the program from the top through a consumer that matches
// events to the operations the code calls (by correlation id), raises the
// engine's divergence errors when they disagree, and then suspends: it writes
// the decisions it derived and enqueues the work they imply (step workers,
// timers). Nothing serializes invocations of one run; up to Concurrency of
// them replay at once, as in production.
//
// Two policies decide what a replay can get wrong:
//
//   - IDs: positional ids are the k-th draw of a per-run generator in wake
//     order, so one ordinal of skew renames every later entity; callsite ids
//     are core's call-site ids (#3179): a scope ("step <name>
//     <Fingerprint(args)>", "wait", "hook <token>", "attr") plus an ordinal
//     within it, so skew stays in its scope and a step called with other
//     arguments draws another id (a loud divergence, not a silent result).
//   - Wake: ordered delivers results in log order, each woken branch running
//     until it blocks before the next delivery (strict in-order delivery);
//     engine is the shipped engine's log-order delivery through barriers with
//     its one named gap (GapBufferedHook: a step result overtakes a wait
//     completion parked behind an unclaimed hook payload of the same load);
//     shuffle resumes the branches a run of facts woke through goroutines of
//     their own, so they draw ids in whatever order the Go scheduler gives
//     (far more nondeterminism than the real engine; for sensitivity studies).
//
// Who writes what: step workers write step_started and step_completed (and a
// step's own attributes, out of band); hook senders write hook_received; a
// wait's wait_completed is written by the first invocation that loads the
// log after its resumeAt, the suspension having enqueued one wake-up for the
// earliest pending wait, rounded up to whole timer ticks (core: seconds).
//
// An operation's consumer lives, as in core 4.8.9, until its terminal event:
// a creation a world wrote twice is consumed again before it (a second
// wait_created sets the resumeAt the completion must carry, while the
// completion is written with the first's), and any event of the id after it
// is consumed by nobody. So a duplicated creation fails a replay exactly
// where core's would, by where the log puts it.
//
// The engine never decides an outcome: corruption appears only when real
// concurrency against a real store makes a replay see or derive something
// different from another.
package engine
