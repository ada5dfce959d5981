// Package worldtest is the conformance suite every world must pass. A world
// hooks in with one test function that runs Exercise once per scheme it
// supports:
//
//	func TestConformance(t *testing.T) {
//		for _, s := range []eventlog.Scheme{eventlog.SchemeULID, eventlog.SchemeSeq} {
//			t.Run(string(s), func(t *testing.T) { worldtest.Exercise(t, s, openWorld) })
//		}
//	}
//
// Every subtest opens a fresh world through the open function, which must
// register its own cleanup, and creates its runs with the scheme under test.
// The suite covers ordering, pagination, cursor resumption, fenced batches,
// the fence basis, idempotency keys, density, concurrent appenders, unknown
// runs and the fields of returned events. It makes no timed assertion.
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
//
// Event ids carry a world prefix (eventlog.LocalPrefix or
// eventlog.ServerPrefix) followed by a ULID.
//
// A world that runs a real implementation as it is (the devkit worlds) may
// lack parts of its scheme's contract; it says which, and why, as
// worlds.Limits (worlds.Limited). The suite then skips exactly those parts,
// printing the reason (fenced appends; the idempotency keys the world does
// not enforce; the event types it cannot store), and for a world whose
// events must follow their entity's lifecycle it writes its drafts in that
// shape (limits.go). Worlds without Limits are checked as before.
package worldtest
