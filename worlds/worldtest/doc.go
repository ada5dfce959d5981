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
//
// Event ids carry a world prefix (eventlog.LocalPrefix or
// eventlog.ServerPrefix) followed by a ULID.
package worldtest
