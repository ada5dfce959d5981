// Package vercel is the serverless world: world-vercel's shape, an HTTP
// ingest server that mints event ids at ingest and writes DynamoDB items,
// plus the legacy count-index guard in Redis.
//
// A World is only a client: every operation is one HTTP request to an
// ingest server (package ingest), and the answers map back to the eventlog
// contract (412 an *eventlog.FencedError with Expected and Actual, 409
// eventlog.ErrConflict, or under slot an *eventlog.SealedError or
// *eventlog.HoleError naming the slot, 404 eventlog.ErrNoRun, 503 and
// transport failures eventlog.ErrUnavailable). Without Config.IngestURL, Open starts a Stack on
// loopback ports and Close stops it:
//
//	ingest server   127.0.0.1:0, package ingest
//	DynamoDB        an embedded minidyn server (package dynamo), unless
//	                Config.DynamoEndpoint names DynamoDB Local or AWS
//	Redis           an embedded miniredis (package countindex), unless
//	                Config.RedisURL names one
//
// Nothing touches the disk; Close leaves no listener behind and deletes the
// World's table(s) and Redis keys unless Config.Keep.
//
// # Schemes
//
//   - ulid (the legacy contract): the server mints a wevt_ ULID per event,
//     spends the latency profile's window (the payload drain), then writes
//     the batch in one TransactWriteItems (events and idempotency-key
//     markers). Reads Query the run's partition by sort key (the event id)
//     with ConsistentRead; the cursor is ExclusiveStartKey. Ids are minted
//     before the window, so id order is not commit order: the defect under
//     study. AppendFenced counts the run's events, then drains, then writes.
//   - seq (event_{seq}): the same mint and window, then one
//     TransactWriteItems that moves the run item's counter under a condition
//     and puts the events with their seq; facts retry on a lost counter
//     inside the server, a fenced batch is rejected when the condition
//     fails. Reads Query the whole run with ConsistentRead, sort by seq after
//     the read and assert density.
//   - slot (slot identity with seals): the World is a worlds.Slotter whose
//     Reserve, Commit and Seal are requests to the server's slot endpoints.
//     An Append is, in the server, a reservation (one TransactWriteItems:
//     the run item's slot counter, a reserved item per slot, the key
//     markers, all conditional), the window, then the commit (one
//     TransactWriteItems conditioned on every slot still reserved); the id
//     is eventlog.SlotID of the slot. AppendFenced fences the reservation on
//     the counter. A seal turns a reserved slot into a noop and releases its
//     keys in one transaction; a commit that finds a slot sealed seals the
//     rest of its reservation and fails with an *eventlog.SealedError. A
//     writer whose context ends in the window leaves its slots reserved and
//     empty. Reads Query the slot range from the cursor with ConsistentRead,
//     return committed events and noops in slot order, and refuse an empty
//     slot below a committed one with an *eventlog.HoleError.
//
// A ulid batch holding a hook_created of a run that shares hook tokens
// across runs (eventlog.Run.HookClaim, spec 8) is written by
// dynamo.Store.WriteHookClaims: the token index is a partition of its own,
// and each claim is one TransactWriteItems conditioned on the holder it read
// (and, on a takeover, carrying the holder's hook_disposed{forceClaimedBy}).
//
// # The legacy guard
//
// A run stamped eventlog.GuardCountIndex keeps a count of its events and a
// window of its last 16 ids in Redis (24 h TTL). Its AppendFenced is judged
// by the handler against that count before the write, one-sided: allowed
// when the count is missing or short, rejected (412) when it exceeds the
// writer's expectedSeq. The check and the write are apart by the window, so
// two writers that saw the same log both pass. GuardCounts reports how the
// guard fared per run.
//
// # Forensics
//
// CommitTimes reports, with Source "server", when the ingest server saw
// DynamoDB acknowledge each write: server-observed, never a store commit
// timestamp (DynamoDB keeps none). Dump returns the stored events without
// the density assertion.
package vercel
