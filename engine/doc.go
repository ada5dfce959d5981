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
//     are the call site plus a per-site ordinal, so skew stays at its site.
//   - Wake: racy wakes the branches a run of facts resolves together, each
//     through its own hydration goroutine, so ids are drawn in whatever order
//     the Go scheduler gives; ordered resumes one branch at a time in log order.
//
// The engine never decides an outcome: corruption appears only when real
// concurrency against a real store makes a replay see or derive something
// different from another.
package engine
