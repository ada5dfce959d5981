// Package dynamo is the vercel world's event store on DynamoDB, through
// aws-sdk-go-v2, plus an embedded DynamoDB-API server (minidyn) for storms
// and tests that are given no endpoint.
//
// # Items
//
// One table per Store (TablePrefix + random suffix), created by Open and
// deleted by Close unless Config.Keep; partition key runId, sort key eventId
// (strings), billed per request. A run's partition holds:
//
//	eventId "#run"          the run item: scheme, fenceBasis, guard,
//	                        createdAt; seq runs also next_seq (events
//	                        committed, the last seq) and last_fenced_seq;
//	                        slot runs next_seq (slots reserved, committed
//	                        or not)
//	eventId "#key#<key>"    an idempotency-key marker (eventlog.Draft.Keys),
//	                        owner = the event id (or slot id) that claimed it
//	eventId "wevt_<ULID>"   an event (ulid and seq runs): seq (seq runs
//	                        only) and "event", the rest of the event as JSON
//	                        (type, correlation id, token, dedup, payload,
//	                        mint and send times)
//	eventId "evnt_<slot>"   a slot (slot runs; eventlog.SlotID, zero-padded
//	                        so sort-key order is slot order): seq, state
//	                        (reserved, committed or noop), reservedAt, keys
//	                        (the draft's keys, JSON), and once committed or
//	                        sealed "event" (the event or the noop)
//
// Markers and the run item sort under '#', events under "wevt_", slots
// under "evnt_", so event reads use KeyConditionExpression "runId = :run
// AND begins_with(eventId, :wevt_)" and slot reads "runId = :run AND
// eventId BETWEEN :from AND :last", and never see the others.
//
// # Writes
//
// Every write is one TransactWriteItems (at most MaxTransactItems actions),
// so a batch is all or nothing:
//
//	ulid: Put event items and key markers, each
//	      ConditionExpression attribute_not_exists(eventId)
//	seq:  Update the run item
//	        SET next_seq = :next [, last_fenced_seq = :next]
//	        IF  next_seq = :base [AND last_fenced_seq <= :expected]
//	        ReturnValuesOnConditionCheckFailure ALL_OLD
//	      + the same Puts, events carrying seq = base+1 … base+n
//
// A Store's seq writers of one run take turns for the transaction (never
// for the window, which the ingest server spends before), and facts start
// from the counter the Store last saw: a throughput optimization, like
// Temporal's per-run lock. The condition on the counter stays the
// correctness mechanism and is what fences writers in other processes.
//
// Slot runs (eventlog.SchemeSlot) write in two steps, each one
// transaction, and a seal is a third:
//
//	Reserve: Update the run item
//	           SET next_seq = :next  IF next_seq = :base  (ALL_OLD)
//	         + Put slot items base+1 … base+n, state reserved,
//	           IF attribute_not_exists(eventId)
//	         + Put key markers (owner: the slot id), IF attribute_not_exists
//	Commit:  Update each slot item of the reservation
//	           SET state = committed, event = :event
//	           IF state = reserved AND reservedAt = :at AND keys = :keys
//	           (ALL_OLD)
//	Seal:    Update one slot item
//	           SET state = noop, event = :noop
//	           IF state = reserved AND reservedAt = :at  (ALL_OLD)
//	         + Delete its key markers IF owner = the slot id
//
// Reserve counts like a seq write (facts retry a lost counter, a fenced
// reservation is rejected with the counter as Actual; the fence basis does
// not apply). A slot changes state once: a commit and a seal of it race on
// the same condition and exactly one wins. A Commit refused because a slot
// is a noop seals the rest of its reservation (one Seal per slot still
// reserved) and fails with an *eventlog.SealedError; the noops' payloads
// are eventlog.NoopPayload.
//
// A cancelled transaction is read per item from its CancellationReasons: a
// failed condition on the run item is the counter (a fence rejection, or a
// lost race that facts retry with the counter ALL_OLD returned, up to
// MaxAttempts); one on a marker is an *eventlog.ConflictError naming the
// key; TransactionConflict is retried after a tiny jittered pause. When
// both fail the counter decides (DynamoDB reports every failed condition;
// minidyn only the first). The legacy count guard of ulid runs uses Count,
// a separate Query with Select COUNT.
//
// # Reads
//
// Query with ConsistentRead, sort key ascending. ulid: ExclusiveStartKey is
// the cursor's event id and Limit one more than the page. seq: the whole run
// is read, sorted by the seq attribute after the read (seed gotcha 7,
// option (a): the sort key stays the immutable event id and no eventually
// consistent index is involved), cut after the cursor's seq and checked with
// eventlog.CheckDensity. Whole-run reads of one run are coalesced: a reader
// shares the next Query that starts after it arrived, never one already in
// flight, so what it gets is a consistent read taken after its arrival.
// slot: the sort-key range from the cursor's next slot, Limit one more than
// the page, following LastEvaluatedKey past reserved slots, which are
// skipped (readers never see a reservation); the page of committed events
// and noops is checked with eventlog.CheckSlots, so an empty slot below a
// committed one fails the read with an *eventlog.HoleError, and empty slots
// past the last committed one end it. Dump returns every committed event
// and noop, holes and all. On DynamoDB a Query is read-committed and may
// see part of a commit's transaction (its lower slots committed, its upper
// still reserved): a reader may then refuse a hole that is closing, and a
// seal of such a slot loses the race to the commit on its condition, so it
// never voids a commit that has landed.
//
// # minidyn
//
// The embedded server is github.com/truora/minidyn's HTTP server on a
// loopback port (StartEmbedded). It supports what the store uses:
// TransactWriteItems with per-item CancellationReasons (ALL_OLD items
// included), condition and update expressions, begins_with key conditions,
// ExclusiveStartKey, Limit. Where it differs from DynamoDB:
//
//   - it holds one mutex over every table and executes a transaction's items
//     in order, stopping at the first failed condition, so it never reports
//     TransactionConflict and names only the first failed item;
//   - ConsistentRead is accepted and means nothing: every read is
//     consistent, and a Query never sees part of a transaction (DynamoDB's
//     read-committed Query may);
//   - DescribeTable reports no TableStatus (treated as active);
//   - it does not enforce the 100-action transaction limit or the 400 KB
//     item size (the store enforces the former itself);
//   - an ExclusiveStartKey must name an existing item (cursors always do);
//   - every transaction deep-copies each table it touches (its rollback
//     snapshot) and every Query scans the whole table, both under the global
//     lock, at about 20 µs per item scanned and 3 µs per item copied: cost
//     grows with table size. Config.TablePerRun gives each run two tables
//     (its events; its run item and key markers) so those costs grow with
//     the run instead of the storm, and event Queries scan events only; it
//     changes where items live, not what they are or how they are written.
//     Against DynamoDB Local or AWS use one table.
package dynamo
