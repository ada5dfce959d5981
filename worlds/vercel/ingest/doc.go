// Package ingest is the vercel world's ingest server: a small JSON API over
// HTTP in front of a DynamoDB store (package dynamo) and the count index of
// the legacy guard (package countindex). It mints each event's wevt_ ULID
// when the request arrives, spends the latency profile's window (the payload
// drain of world-vercel's server), then writes.
//
// # API
//
//	POST /v1/runs                          eventlog.Run                → 201 the run
//	POST /v1/runs/{runId}/events           AppendRequest (facts)       → 201 EventsResponse
//	POST /v1/runs/{runId}/events/fenced    FencedRequest (decisions)   → 201 EventsResponse
//	GET  /v1/runs/{runId}/events?afterId=&afterSeq=&limit=             → 200 eventlog.Page
//	GET  /v1/runs/{runId}/dump             every event, no density check → 200 EventsResponse
//	GET  /v1/runs/{runId}/commit-times     server-observed             → 200 CommitTimesResponse
//	GET  /v1/runs/{runId}/guard            guard tallies, count, window → 200 GuardResponse
//	POST /v1/reset                         drop every run              → 204
//	GET  /healthz                                                      → 204
//
// Every error answers with an ErrorBody {"error": "...", "code": "..."}:
//
//	400 bad_json, unknown_event_type, invalid_payload, invalid_run,
//	    invalid_request, batch_too_large
//	404 no_run, not_found        405 method_not_allowed
//	409 conflict (with "key"), run_exists
//	412 fenced (with "expected" and "actual")
//	413 too_large (bodies over Config.MaxBody, 1 MiB by default; event
//	    payloads over MaxPayload, 300 KiB)
//	503 unavailable (DynamoDB or Redis unreachable), contention, cancelled
//	500 internal
//
// Nothing is half-written: every append is one DynamoDB transaction, and a
// request refused for any reason writes nothing. A write, once sent to
// DynamoDB, runs to its end even if the client goes away, so that the server
// knows its outcome and its commit time.
//
// # Fenced appends
//
// On a seq run the fence is the condition of the write's own transaction
// (package dynamo). On a ulid run the handler counts the run's events with
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
// through /commit-times with source "server". It is the server's
// observation, not a store commit timestamp: DynamoDB exposes none. Events
// this server did not write (a kept table, a restarted server) carry the
// time their write was sent instead, and no commit time.
package ingest
