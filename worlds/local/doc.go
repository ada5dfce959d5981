// Package local is the filesystem world: the real world-local layout of the
// Workflow DevKit, one JSON file per event, plus the event_{seq} variant.
//
// Everything lives under the world's directory (Options.Dir), which the world
// owns:
//
//	runs/<runId>.json             the run record (id, scheme, fence basis)
//	runs/<runId>.seq              seq runs only: the commit counter
//	runs/<runId>.slot             slot runs only: the slot table
//	events/<runId>/<runId>-<eventId>.json
//	                              one file per event (an eventlog.Event)
//	keys/<runId>/<sha256(key)>    idempotency markers, created with O_EXCL
//	locks/<runId>.lock            seq and slot runs: the flock append serializer
//	tmp/                          temp files; renamed into place, never scanned
//	tokens/<sha256(token key)>    runs that share hook tokens (eventlog.Run.HookClaim):
//	                              the hook that holds each token, written under
//	                              the flock of locks/~tokens.lock
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
// purpose. A hook_created of a run that shares tokens across runs
// (spec 8) is written the same way, but after its window it takes the
// world-wide token lock, reads the token's holder, and writes what
// eventlog.ClaimToken decides (the hook_created, or a hook_conflict in its
// place, and on a takeover the holder's hook_disposed{forceClaimedBy}) and
// the index entry before releasing it.
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
// Under the slot scheme (worlds.Slotter) the event id is the slot,
// eventlog.SlotID(position), so the file names above sort in slot order. The
// run's slot table holds one state per slot handed out (reserved, committed
// or noop), the open reservations (first slot, count, reservation time,
// a digest of their drafts, the hashes of the keys they claimed) and the key
// markers the last seal freed. Every transition is one rename of a new table
// under the run's serializer, after the files it depends on: a reservation
// (fence against the table's counter, check every key, rename the table with
// the slots reserved and the keys held, then create the markers), a commit
// (check that no slot of the reservation was sealed, write the event files,
// rename the table with them committed) and a seal (write a noop file,
// rename the table with the slot noop and its reservation's keys released,
// then remove their markers). A seal and a commit of one slot therefore
// exclude each other, and whichever takes the serializer second finds the
// slot filled: the seal leaves it alone, the commit is void and seals the
// rest of its reservation. The mint-to-commit window lies between the
// reservation and the commit, outside the serializer; a writer whose context
// ends there leaves its slots reserved. Readers never take the serializer
// and never scan: they read the table and then the files of the slots it
// says are filled, by name, so a reservation, or a file written before its
// table (or left by a holder that died there), is never seen, and a batch
// becomes visible all at once. An empty slot below a filled one is a hole
// (eventlog.HoleError).
//
// Commit times are the world's own observations: an event file holds the time
// taken just before its rename (ulid) or just before its batch's files were
// written under the serializer (seq, slot); an append returns the time just
// after the event became visible (ulid: its rename; seq: the counter's
// rename; slot: the table's). A slot event's MintedAt is its reservation time.
//
// Event files never change once renamed into place, so a World caches the
// events it has read; only names found by a fresh scan (or, under slot, the
// filled slots of a fresh table) are looked up. The one file that does
// change is one a slot holder wrote and died before its table rename: the
// slot's filler overwrites it, but no reader looks up a slot before its
// table says it is filled.
package local
