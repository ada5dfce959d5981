// Package backend is stormctl's emulation of the world-vercel backend (the
// "workflow-server" behind https://vercel-workflow.com/api): the HTTP API
// the published @workflow/world-vercel package calls, served over the
// vercel world's DynamoDB store (package dynamo), so that the package's
// own client code (v4 frames with CBOR meta, cursors, retries, the status
// codes it maps to errors) runs in a storm (the devkit-vercel world).
//
// # What it serves
//
// Events, v4, for legacy runs (Routes lists every endpoint the package calls; the rest are
// answered 501 with a line naming the method and path, and recorded by
// Server.Calls):
//
//	POST /api/v4/runs/{runId}/events/{eventType}  one frame: u32 len | CBOR meta | u32 len | payload
//	                                               → x-wf-event-id, x-wf-run-id, x-wf-created-at and a
//	                                                 CBOR body {event, run | step | hook | wait}
//	GET  /api/v4/runs/{runId}/events?cursor&limit&sortOrder&remoteRefBehavior
//	                                               → frames, then the sentinel {_end: 1, next?}
//	GET  /api/v4/runs/{runId}/events/{eventId}     → one frame
//	GET  /api/v4/events?correlationId&runId        → frames (without runId: 501, no index across runs)
//
// Entities, read by the published runtime (@workflow/core 4.8.9) beside its
// events, folded from the run's events as the store holds them:
//
//	GET  /api/v2/runs/{runId}?remoteRefBehavior    → the run (CBOR); 404 before run_created
//	GET  /api/v2/hooks/by-token?token              → the live hook holding the token; 404 otherwise
//
// A frame meta field this server does not read is answered 501 naming it
// (nothing is dropped unread). Errors are JSON {message, code}: 400 a bad
// frame or event type, 404 a run, step, hook or wait that does not exist,
// 409 an entity created twice or moved out of a terminal state, 410 a
// run_started or a step's move on a finished run, 425 a step started
// before its retryAfter, 413 a payload over MaxPayload, 503 the store
// unreachable or the request ended in its window.
//
// # How it writes (the legacy contract)
//
// The backend mints each event's id (wevt_ + ULID) when it has decided the
// request, on the run's state folded from its events read just before;
// it then spends the latency profile's window and writes the event in one
// DynamoDB transaction with the keys of the entities it creates or ends
// (a run, a step, its end, a hook and its token, a wait and its
// completion): so ids are in mint order, not commit order, and two
// requests may decide on the same state, as in the legacy contract the
// vercel world models; a key taken in the meantime refuses the second
// (409), or, for a hook's token, turns it into a hook_conflict event. What
// it validates follows @workflow/world-local 4.4.1, the open reference
// implementation of the same storage contract (the real backend is not
// public). So a run_started on a run without run_created that carries the
// run's deployment, workflow name and input (the runtime's start() writes
// run_created and queues the run at once) writes the run_created it implies
// first, in the same transaction, as world-local's "resilient start"; its
// answer carries the run's events read back (the preload core replays
// from). Hook tokens are unique per run, not per project: the devkit
// worlds scope tokens by run, so a check across runs could not fire.
//
// # The slot contract (world-vercel 5.0 betas)
//
// A run whose first event's frame says spec 6 or later (SlotSpecVersion;
// world-vercel 5.0.0-beta.50 stamps 7) is a slot run of the store, and every
// request for it is served under the slot contract (slots.go, batch.go;
// docs/devkit-vercel-beta.md): ids evnt_ + the event's position, allocated
// in the transaction that writes it (dynamo.Store.WriteAtTail: a lost race
// for a position moves to the next), so the log is dense and needs no seal;
// the answers world-vercel 5.0 reads (bump-and-report below maxSlot,
// sinceCursor deltas, run_started's log as frames with x-wf-max-events,
// lazy step starts, (runId, resumeId) convergence of a hook's resume, the
// sentinel's hasMore); and
//
//	POST /api/v4/runs/{runId}/events/batch   frames back to back → CBOR {results}, one per frame
//
// The 5.0 frame fields it does not implement (run attributes) are
// answered 501 naming them, like the legacy contract's.
//
// Each project is a Tenant with a store of its own; Server routes by the
// x-vercel-project-id header.
package backend
