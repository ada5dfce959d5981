// Package local is the filesystem world: the real world-local layout of the
// Workflow DevKit, one JSON file per event, plus the event_{seq} variant.
//
// Everything lives under the world's directory (Options.Dir), which the world
// owns:
//
//	runs/<runId>.json             the run record (id, scheme, fence basis)
//	runs/<runId>.seq              seq runs only: the commit counter
//	events/<runId>/<runId>-<eventId>.json
//	                              one file per event (an eventlog.Event)
//	keys/<runId>/<sha256(key)>    idempotency markers, created with O_EXCL
//	locks/<runId>.lock            seq runs only: the flock append serializer
//	tmp/                          temp files; renamed into place, never scanned
//
// world-local keeps every run's event files in one events/ directory; this
// world gives each run its own directory under events/ and keeps world-local's
// file names and prefix-filtered scan inside it. A scan then costs what the
// run holds rather than what the whole storm holds: in a storm of 24 runs per
// cell a shared directory made every page read scan ~17,000 names (9 ms), and
// the storm measured the directory's size instead of the ordering contract.
// Visibility is unchanged: a write is visible exactly when its rename lands.
//
// Under the ulid scheme (the legacy contract) a write mints its evnt_ ULID,
// spends the latency profile's mint-to-commit window, claims its keys and
// renames its file into events/; a listing is a directory scan sorted by id
// with the last id as cursor. AppendFenced counts the run's files and then
// writes: that check-then-write window is the legacy guard's defect, kept on
// purpose.
//
// Under the seq scheme a write mints and waits first, then takes the run's
// serializer (an in-process semaphore in front of flock on the run's lock file,
// so it also excludes other processes), evaluates the fence, checks every key,
// writes the batch's files and finally renames the counter file: that rename is
// the commit point. Before its first file a batch records its intent in the
// counter, so that whatever a writer that died mid-batch left behind is rolled
// back by the next writer before its positions and keys are reused. Readers
// never take the lock: they read the counter, scan, keep the events at or
// below it and assert density.
//
// Commit times are the world's own observations: an event file holds the time
// taken just before its rename (ulid) or just before its batch's files were
// written under the serializer (seq); an append returns the time just after
// the event became visible (ulid: its rename; seq: the counter's rename).
//
// Event files never change once renamed into place, so a World caches the
// events it has read; only names found by a fresh scan are looked up.
package local
