// Package worldtest is the conformance suite every world must pass. A world
// hooks in with one test function that hands the suite its registry entry:
//
//	func TestConformance(t testing.TB) {
//		worldtest.Exercise(t, myworld.Entry(), nil)
//	}
//
// The suite runs once per scheme the entry lists, so a world supporting
// only ulid is checked only under ulid. Every subtest opens a fresh world,
// through entry.Open (open nil) or the test's own Opener (for a world that
// needs a server the test owns, or extra checks on Close), with Options
// carrying a directory of its own (t.TempDir) and a seed; it creates its
// runs with the scheme under test and runs in parallel with the scheme's
// other checks (except the stress checks, which run alone).
// The suite covers ordering, pagination, cursor resumption, fenced batches,
// the fence basis, idempotency keys, density, concurrent appenders, unknown
// runs, the fields of returned events and a closed world. It checks the
// optional abilities where the world has them and skips them, saying why,
// where it has not: a write cancelled in the mint-to-commit window drawn
// from Options.Latency writes nothing; a worlds.Dumper's Dump equals List;
// a worlds.CommitTimes covers every event; a worlds.Resetter's Reset drops
// every run. It makes no timed assertion.
//
// Beside Exercise the package has small helpers for a world's own tests
// (NewRun, Draft, Append, AppendFenced, ListAll, Latency), and Holder, a
// latency profile that holds chosen writes in their mint-to-commit window
// until the test releases them, so that a world's tests check what happens
// in a window by the order of events instead of by timing.
//
// The schemes' contracts as the suite checks them:
//   - ulid: events are ordered and cursored by id and carry no seq; a fenced
//     append compares expectedSeq with the number of events in the log, a
//     best-effort guard checked here only with a single writer;
//   - seq: events are ordered and cursored by seq, dense from 1; a fenced
//     batch is atomic and honours the run's fence basis; every read is dense.
//   - sequence (a non-transactional database sequence, seed gotcha 1): as seq
//     for a single writer, except that the fence compares expectedSeq with
//     the event count and ignores the fence basis; while writes overlap a
//     read may meet a hole and fail with eventlog.ErrGap, which the
//     concurrent subtest counts and retries instead of failing on. Once the
//     writers are done the log must be dense and hold every accepted event.
//   - slot: as seq for a single writer, ids eventlog.SlotID(seq); the fence
//     counts reserved slots; the world is a worlds.Slotter and a worlds.Dumper;
//     a reservation left uncommitted below a committed event is a hole every
//     read refuses with eventlog.ErrHole (tolerated while writes overlap)
//     until a seal fills it.
//
// Event ids carry a world prefix (eventlog.LocalPrefix or
// eventlog.ServerPrefix) followed by a ULID.
//
// A world that runs a real implementation as it is (the devkit worlds) may
// lack parts of its scheme's contract; its entry says which, and why, in
// worlds.Entry.Limits. The suite then skips exactly those parts, printing
// the reason (fenced appends; the idempotency keys the world does not
// enforce; the event types it cannot store), and for a world whose events
// must follow their entity's lifecycle it writes its drafts in that shape
// (limits.go). Worlds without Limits are checked as before.
package worldtest
