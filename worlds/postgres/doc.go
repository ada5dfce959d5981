// Package postgres is the PostgreSQL world: world-postgres's event table on
// pgx/v5, under the four ordering schemes, plus a throw-away embedded
// cluster for storms and tests that are given no server.
//
// # Namespace
//
// A World creates one schema (stormctl_<suffix>), marks it with a comment
// holding a random token, and works only inside it:
//
//	<schema>.workflow_runs    id, run_no, scheme, fence_basis,
//	                          next_seq, last_fenced_seq (the seq counter row),
//	                          next_slot (the slot counter)
//	<schema>.workflow_events  id (wevt_ ULID, or evnt_ slot id), type,
//	                          correlation_id, created_at, run_id, payload jsonb,
//	                          seq, token, dedup, idem_key, minted_at, state
//	                          (reserved, committed or noop);
//	                          PRIMARY KEY (run_id, id), UNIQUE (run_id, seq),
//	                          UNIQUE (run_id, idem_key), a partial unique
//	                          index on (run_id, token) of hook_created rows
//	<schema>.run_seq_<run_no> one sequence per sequence-scheme run
//
// Draft.Keys maps onto idem_key (the first key) and token (the hook token of
// a hook_created draft), so the two unique indexes are the idempotency keys;
// they hold a slot run's reservations too, and a noop holds none. The
// primary key is (run_id, id), not world-postgres's id alone, because slot
// ids are positions every slot run has.
// A schema that already exists is refused (ErrSchemaTaken) and left alone;
// Close drops the schema unless Config.Keep, and only if it still carries the
// World's marker. Nothing outside the schema is read or written.
//
// # Write paths
//
// Every event gets a wevt_ ULID minted in the client first (its identity and
// idempotency handle; under ulid also its position). The latency profile's
// mint-to-commit window is then spent inside the open transaction:
//
//   - ulid: BEGIN and one INSERT … SELECT FROM unnest(…) of the batch
//     (pipelined), the window, COMMIT. The rows sit uncommitted in the table
//     for the whole window, as a real handler's do while it finishes. Reads
//     are ORDER BY id with WHERE id > cursor. AppendFenced counts the run's
//     events with one statement and only then writes: the legacy guard's
//     check-then-write gap, kept on purpose.
//   - seq: BEGIN, the window, then one statement and COMMIT pipelined in one
//     round trip: WITH c AS (UPDATE workflow_runs SET next_seq = next_seq + n
//     WHERE id = $1 [AND fence] RETURNING …) INSERT … SELECT … FROM c,
//     unnest(…). The counter moves in the insert's own transaction, so a
//     position is visible exactly when everything below it is. The window
//     comes before the statement because the UPDATE takes the run's row lock,
//     held until the commit is flushed: sleeping while holding it would
//     serialize every writer of the run behind every window, a contention
//     the design does not prescribe (positions are assigned at commit) and
//     that PERF-ANCHORS shows is already the limit of a hot run. For the same
//     reason the counter update and the inserts are one statement and the
//     COMMIT rides the same round trip. A fence is a condition on that
//     UPDATE (next_seq = expected, or last_fenced_seq <= expected <= next_seq
//     for eventlog.FenceOnDecisions), so the batch commits all or nothing.
//   - sequence: seq is nextval of the run's own sequence, drawn at insert:
//     BEGIN and the INSERT (pipelined), the window, COMMIT. Sequences are
//     non-transactional (seed gotcha 1): writer A draws 5, B draws 6, B
//     commits first, and a reader sees 6 without 5. Reads assert density, so
//     they fail with eventlog.ErrGap while that lasts. One sequence per run
//     (not one bigserial for the table) keeps each run's numbers dense when
//     writes do not overlap, so gaps come from the window and nothing else.
//     The insert first checks the batch's keys (and, fenced, the run's event
//     count) against its snapshot, so a rejected batch draws no number.
//   - slot (worlds.Slotter): Reserve, the window, Commit, each its own
//     transaction. Reserve is one statement: WITH c AS (UPDATE workflow_runs
//     SET next_slot = next_slot + n WHERE id = $1 [AND next_slot = expected]
//     RETURNING …) INSERT … state 'reserved', the ids spelled by the server
//     as evnt_ and the slot. The run's row lock lasts that statement; a taken
//     key (committed or reserved) fails it and rolls the counter back. The
//     window is then spent with no transaction open. Commit locks its rows
//     (SELECT … FOR UPDATE, in slot order) and UPDATEs them to 'committed',
//     so each row's xmin, and pg_xact_commit_timestamp, is Commit's; if a
//     seal filled any of them first it turns the rest into noops (releasing
//     their keys) and fails with *eventlog.SealedError. Seal is one UPDATE …
//     SET state 'noop' … WHERE state = 'reserved' RETURNING on the slot's
//     row: it and Commit lock the same row, so exactly one fills it. Readers
//     (List, Dump, CommitTimes) skip reserved rows; List checks its page
//     with eventlog.CheckSlots and fails with *eventlog.HoleError at an
//     empty slot below a committed one. A writer whose context ends in the
//     window leaves its slots reserved, its keys claimed: a hole until a
//     seal fills it.
//
// A ulid batch holding a hook_created of a run that shares hook tokens
// across runs (eventlog.Run.HookClaim, spec 8) spends its window first, then
// one transaction takes each token's advisory lock, reads the holder from
// the hook_tokens table and whether it is live (its run's keys), and inserts
// what eventlog.ClaimToken decides: the batch (a hook_conflict in place of a
// refused hook_created), a takeover's hook_disposed{forceClaimedBy} into the
// holder's run (ON CONFLICT DO NOTHING: a holder that disposed of the hook
// itself keeps its own), and the claimer as the token's holder.
//
// Without a window (latency none) each write is one statement in an implicit
// transaction: one round trip (under slot, Reserve is; Commit takes two).
//
// Idempotency conflicts fail with *eventlog.ConflictError and roll the whole
// transaction back; an unknown run is eventlog.ErrNoRun; a server that cannot
// be reached, refuses the credentials or goes away is eventlog.ErrUnavailable.
//
// # Commit times
//
// CommitTimes reads pg_xact_commit_timestamp(xmin), the server's own commit
// time of each row, and fails with ErrNoCommitTimestamps when the server runs
// with track_commit_timestamp off. Append returns the client's time just
// after the commit; List returns the server's commit time when it has one,
// else the row's created_at (its transaction's start).
//
// # Embedded cluster
//
// StartEmbedded runs initdb and pg_ctl from the machine's PostgreSQL
// binaries into a temp directory (as an unprivileged user when run as root),
// listens on a free port of 127.0.0.1 with track_commit_timestamp on, and
// Cluster.Stop removes it. A watcher process removes the cluster too if this
// process dies without calling Stop.
package postgres
