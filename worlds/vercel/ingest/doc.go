// Package ingest is the vercel world's ingest server: a small JSON API over
// HTTP in front of a DynamoDB store (package dynamo) and the count index of
// the legacy guard (package countindex). It mints each event's wevt_ ULID
// when the request arrives, spends the latency profile's window (the payload
// drain of world-vercel's server), then writes. Under the slot scheme the
// slots are the ids: an append reserves them, spends the window, then
// commits (see Slots).
//
// # API
//
//	POST /v1/runs                          eventlog.Run                → 201 the run
//	POST /v1/runs/{runId}/events           AppendRequest (facts)       → 201 EventsResponse
//	POST /v1/runs/{runId}/events/fenced    FencedRequest (decisions)   → 201 EventsResponse
//	POST /v1/runs/{runId}/slots/reserve    ReserveRequest              → 201 ReservationResponse
//	POST /v1/runs/{runId}/slots/commit     CommitRequest               → 201 EventsResponse
//	POST /v1/runs/{runId}/slots/{slot}/seal  SealRequest               → 200 SealResponse
//	GET  /v1/runs/{runId}/events?afterId=&afterSeq=&limit=             → 200 eventlog.Page
//	GET  /v1/runs/{runId}/dump             every event, no density check → 200 EventsResponse
//	GET  /v1/runs/{runId}/commit-times     server-observed             → 200 CommitTimesResponse
//	GET  /v1/runs/{runId}/guard            guard tallies, count, window → 200 GuardResponse
//	POST /v1/reset                         drop every run              → 204
//	GET  /healthz                                                      → 204
//
// An append, reservation or commit of no events answers 200 and writes
// nothing. Every error answers with an ErrorBody {"error": "...", "code":
// "..."}:
//
//	400 bad_json, unknown_event_type, invalid_payload, invalid_run,
//	    hook_claim (a hook-claim mode on a scheme the token index is
//	    not built for), invalid_request (also: a slot operation on a run
//	    of another scheme), batch_too_large
//	404 no_run, no_slot (a slot never reserved), not_found
//	405 method_not_allowed
//	409 conflict (with "key"), run_exists,
//	    sealed (with "slot": the commit is void),
//	    not_reserved (a commit's slots are committed already, or were
//	    reserved for other drafts or at another time),
//	    hole (with "slot" and "above": a read refused an empty slot below a
//	    committed one), gap (with "want" and "got"), duplicate (with "seq")
//	412 fenced (with "expected" and "actual")
//	413 too_large (bodies over Config.MaxBody, 1 MiB by default; event
//	    payloads over MaxPayload, 300 KiB)
//	503 unavailable (DynamoDB or Redis unreachable), contention, cancelled
//	500 internal
//
// A client maps them back to the eventlog contract: 412 fenced to an
// *eventlog.FencedError, 409 conflict to an *eventlog.ConflictError, sealed
// to an *eventlog.SealedError, hole to an *eventlog.HoleError, gap and
// duplicate to an *eventlog.GapError and *eventlog.DuplicateError, 404
// no_run to eventlog.ErrNoRun, 503 to eventlog.ErrUnavailable.
//
// Nothing is half-written: every append is one DynamoDB transaction (a
// slot append two: the reservation, then the commit), and a request
// refused for any reason writes nothing (but a slot append refused at its
// commit, which leaves noops, see Slots). A write, once sent to DynamoDB,
// runs to its end even if the client goes away, so that the server knows
// its outcome and its commit time.
//
// # Slots
//
// On a slot run (eventlog.SchemeSlot) an event's id is its slot,
// eventlog.SlotID(position), taken when its write starts:
//
//   - reserve takes the run's next slots for the drafts and claims their
//     idempotency keys, in one transaction with the run item's slot counter
//     (package dynamo); a taken key is a 409 conflict and takes nothing;
//     with expectedSeq, a counter (slots reserved, committed or not) other
//     than expectedSeq is a 412 fenced and takes nothing. Readers see no
//     reservation.
//   - commit fills the reservation's slots with its drafts (the same ones,
//     in order, with the reservation's first and reservedAt) in one
//     transaction conditioned on every slot still being reserved. If one was
//     sealed, nothing is committed: the server seals the rest of the
//     reservation itself (sealed by the request's actor), so it leaves no
//     hole, and answers 409 sealed naming the sealed slot.
//   - seal fills one reserved, empty slot with an eventlog.Noop whose
//     payload is an eventlog.NoopPayload (the reservation time and the
//     request's actor) and releases the keys the slot claimed: 200 with
//     sealed true and the noop. A slot committed or sealed already is left
//     alone: 200 with sealed false. A slot never reserved is a 404 no_slot.
//
// POST …/events is reserve, the window, commit; POST …/events/fenced the
// same with the reservation fenced on the slot counter at expectedSeq
// (whatever the run's fence basis), unless the run is guarded (then the
// count-index guard judges first and the append is unfenced). A request
// that ends in the window answers 503 cancelled and leaves its slots
// reserved and empty, without cleaning up: a hole only a seal fills. Reads
// (events, dump, commit-times) return committed events and noops only, in
// slot order; a page of events with an empty slot below a committed one is
// a 409 hole (dump shows the holes); empty slots past the last committed
// one end the page.
//
// # Fenced appends
//
// On a seq run the fence is the condition of the write's own transaction
// (package dynamo); on a slot run, of its reservation's, before the window.
// On a ulid run the handler counts the run's events with
// one Query, then drains, then writes: the legacy store count. On a run
// stamped eventlog.GuardCountIndex the handler judges expectedSeq against
// the run's Redis count before the drain, then writes unfenced: see judge
// for the verdicts. Either way the check and the write are apart by the
// window, on purpose: that gap is what the legacy guards are measured for.
//
// # Commit times
//
// The server keeps, in memory, the time it saw DynamoDB acknowledge each
// write it sent, and reports it as CommittedAt on appends and reads and
// through /commit-times with source "server" (noops included: a seal is a
// write; a slot's commit, not its reservation). It is the server's
// observation, not a store commit timestamp: DynamoDB exposes none. Events
// this server did not write (a kept table, a restarted server) carry the
// time their write was sent instead, and no commit time. A slot event's
// MintedAt is the time its slot was reserved.
package ingest
