// Package replay re-executes a recorded run deterministically: every
// invocation of the run goes through the engine that ran it again (the
// model: a Detached engine.Runtime, one invocation at a time; a devkit
// run: a rerun.Runtime, the published @workflow/core in a replay host, whose
// world serves the same record, runtime.go) against a read-only world
// that serves the invocation's recorded operations in order. Each
// events.list is answered with exactly the page the invocation read (the
// caller rebuilds the pages: explain.Pages does it from the history's
// count and id hash and the final log's commit times), each append is
// checked against the recorded one (type, correlation id, token, payload),
// taken into a scratch log and answered as the store answered it, and the
// world's clock is the end of the operation it served last.
//
// A replay either does again exactly what the invocation recorded, or
// leaves its record at a first operation (a Deviation): another read,
// another write, a write the record lacks, or one it holds that the replay
// never made. Replayed N times, each invocation gets a verdict (every
// time, sometimes, never, or cut: its record ends before the replay did,
// the run having ended while it was in flight), and the run's recorded
// divergence (the run_failed an invocation wrote, with its error) gets
// one too. Replays of one invocation that do different things read the
// same pages every time: their nondeterminism is inside the engine, not
// in the log, and the report names the invocation and its behaviours.
//
// A run that cannot be replayed (no history, no invocation that read,
// holes whose sealing waits ran on the wall clock, a devkit run whose
// final log lacks the package's own events) is refused with an
// *UnreplayableError saying why.
//
// Prefixes replays every prefix of a stored log (a production database,
// a world-local directory) through the model or, with a rerun.Runtime, the
// published runtime, and reports the first that diverges.
package replay
