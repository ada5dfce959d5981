package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/stormctl/stormctl/internal/eventlog"
)

// markerPrefix starts the comment a World puts on the schema it creates; the
// rest is the World's random token. Only a schema carrying this World's
// marker is ever dropped.
const markerPrefix = "stormctl world "

// Table and constraint names inside a World's schema.
const (
	runsTable        = "workflow_runs"
	eventsTable      = "workflow_events"
	idemConstraint   = "workflow_events_idem"
	tokenIndex       = "workflow_events_hook_token"
	runSeqConstraint = "workflow_events_run_seq"
	// tokensTable is the cross-run hook token index (eventlog.Run.HookClaim):
	// the hook that holds each token of the runs that share tokens.
	tokensTable = "hook_tokens"
)

// The states of a workflow_events row. Only the slot scheme ever has rows in
// another state than committed: a reservation (slots taken, keys claimed,
// nothing visible) and a seal (a noop holding no key).
const (
	stateReserved  = "reserved"
	stateCommitted = "committed"
	stateNoop      = "noop"
)

// ddl creates a World's tables in schema (a sanitized identifier).
//
// workflow_events is shaped like world-postgres's table (id, type,
// correlation_id, created_at, run_id, payload jsonb) plus seq (null under
// ulid; the slot under slot), the hook token, the dedup value, the first
// idempotency key (null only for a noop), the mint time and the row's state:
// 'committed' for every event of the other schemes; under slot 'reserved'
// from Reserve to Commit (claiming its keys, invisible to readers), then
// 'committed', or 'noop' once sealed. workflow_runs holds each run's scheme
// and fence basis and its counter row: for seq runs next_seq is the number of
// committed events (the seq of the last one) and last_fenced_seq the seq of
// the last event a fenced append committed; for slot runs next_slot is the
// number of slots reserved (the last one taken) and, under the in-band
// fence basis (spec 9), seq_in_band the slots fenced appends reserved
// (rows marked in_band) and seq_in_band_done those of them committed or
// sealed, the count a list's snapshot gives.
func ddl(schema, marker string) []string {
	r, e := schema+"."+runsTable, schema+"."+eventsTable
	return []string{
		"CREATE SCHEMA " + schema,
		fmt.Sprintf("COMMENT ON SCHEMA %s IS '%s'", schema, marker),
		`CREATE TABLE ` + r + ` (
			id              varchar PRIMARY KEY,
			run_no          bigserial UNIQUE,
			scheme          varchar NOT NULL CHECK (scheme IN ('ulid', 'seq', 'sequence', 'slot')),
			fence_basis     varchar NOT NULL DEFAULT '',
			hook_claim      varchar NOT NULL DEFAULT '',
			next_seq        bigint NOT NULL DEFAULT 0,
			last_fenced_seq bigint NOT NULL DEFAULT 0,
			next_slot       bigint NOT NULL DEFAULT 0,
			seq_in_band     bigint NOT NULL DEFAULT 0,
			seq_in_band_done bigint NOT NULL DEFAULT 0,
			created_at      timestamptz NOT NULL DEFAULT now()
		)`,
		`CREATE TABLE ` + e + ` (
			id             varchar NOT NULL,
			type           varchar NOT NULL,
			correlation_id varchar,
			created_at     timestamptz NOT NULL DEFAULT now(),
			run_id         varchar NOT NULL,
			payload        jsonb,
			seq            bigint,
			token          varchar,
			dedup          varchar,
			idem_key       varchar,
			in_band        boolean NOT NULL DEFAULT false,
			minted_at      timestamptz NOT NULL,
			state          varchar NOT NULL DEFAULT '` + stateCommitted + `'
			               CHECK (state IN ('` + stateReserved + `', '` + stateCommitted + `', '` + stateNoop + `')),
			-- world-postgres keys on id alone; here an id is unique within
			-- its run, since a slot id (eventlog.SlotID) is a position that
			-- every slot run of the schema has.
			PRIMARY KEY (run_id, id),
			CONSTRAINT ` + runSeqConstraint + ` UNIQUE (run_id, seq),
			CONSTRAINT ` + idemConstraint + ` UNIQUE (run_id, idem_key),
			-- a key is released only by a seal: every other row holds its own.
			CHECK (idem_key IS NOT NULL OR state = '` + stateNoop + `')
		)`,
		// The second key of a hook_created draft: its token, unique per run.
		`CREATE UNIQUE INDEX ` + tokenIndex + ` ON ` + e + ` (run_id, token)
			WHERE type = 'hook_created' AND token IS NOT NULL`,
		// ulid reads (WHERE run_id = $1 AND id > $2 ORDER BY id). Partial, so
		// positioned rows, read through (run_id, seq), do not maintain it.
		`CREATE INDEX workflow_events_run_id ON ` + e + ` (run_id, id) WHERE seq IS NULL`,
		`CREATE TABLE ` + schema + "." + tokensTable + ` (
			token   varchar PRIMARY KEY,
			run_id  varchar NOT NULL,
			hook_id varchar NOT NULL
		)`,
	}
}

// createSchema creates the World's schema, marked with marker, and its
// tables in one transaction. An existing schema is refused with
// ErrSchemaTaken and left as it was.
func createSchema(ctx context.Context, pool *pgxpool.Pool, name, marker string) error {
	schema := pgx.Identifier{name}.Sanitize()
	err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		for _, stmt := range ddl(schema, marker) {
			if _, err := tx.Exec(ctx, stmt); err != nil {
				return err
			}
		}
		return nil
	})
	if code, _ := pgCode(err); code == codeDuplicateSchema {
		return fmt.Errorf("postgres: schema %s already exists; a World only uses a schema it creates, so it is left untouched "+
			"(choose another schema name, or drop it yourself if it is a leftover of a --keep storm): %w", name, ErrSchemaTaken)
	}
	return storeErr(ctx, "create schema "+name, err)
}

// DropMarkedSchema drops schema name, with everything in it, if its comment
// still is marker; a schema without it is not the caller's and is left
// alone (an error says so). A schema already gone is no error. The World
// and the benchmarks (bench/) mark what they create this way.
func DropMarkedSchema(ctx context.Context, pool *pgxpool.Pool, name, marker string) error {
	var comment *string
	err := pool.QueryRow(ctx, `SELECT obj_description(oid, 'pg_namespace') FROM pg_namespace WHERE nspname = $1`, name).Scan(&comment)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return nil // already gone
	case err != nil:
		return storeErr(ctx, "drop schema "+name, err)
	case comment == nil || *comment != marker:
		return fmt.Errorf("postgres: drop schema %s: it no longer carries the marker %q it was created with; left untouched", name, marker)
	}
	_, err = pool.Exec(ctx, "DROP SCHEMA "+pgx.Identifier{name}.Sanitize()+" CASCADE")
	return storeErr(ctx, "drop schema "+name, err)
}

// queries is the SQL of one World, its schema spelled in.
type queries struct {
	runs, events string

	createRun, loadRun, counters, count         string
	tokenLock, tokenHolder, hookLive, setHolder string
	insertULIDQuiet                             string
	takenKey, takenToken                        string
	insertULID                                  string
	insertSeq, insertSeqFenced, insertSeqFenceD string
	insertSequence                              string
	listULID, listSeq, dumpULID, dumpSeq        string
	commitULID, commitSeq                       string

	// The slot scheme's: reserve (counter and reserved rows, one
	// statement), the counter a rejected fenced reservation reports, a
	// reservation's rows locked, committed or voided, and one slot sealed.
	insertSlot, insertSlotFenced, insertSlotInBand, slotCounter, slotCounters, slotSnapshot string
	lockSlots, commitSlots, voidSlots                                                       string
	sealSlot, slotState                                                                     string
}

// unnestCols are the batch arrays every insert reads: $2 … $9.
const unnestCols = `unnest($2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[], $9::timestamptz[])`

// insertCols and insertVals name and fill workflow_events from unnest row u;
// %s is the seq expression.
const (
	insertCols = `(id, type, correlation_id, run_id, payload, seq, token, dedup, idem_key, minted_at)`
	insertVals = `u.id, u.type, NULLIF(u.corr, ''), $1, NULLIF(u.payload, '')::jsonb, %s, NULLIF(u.token, ''), NULLIF(u.dedup, ''), u.idem, u.minted`
	unnestRow  = `u(id, type, corr, payload, token, dedup, idem, minted`
)

func newQueries(name string, commitTS bool) queries {
	s := pgx.Identifier{name}.Sanitize()
	q := queries{runs: s + "." + runsTable, events: s + "." + eventsTable}
	r, e := q.runs, q.events

	q.createRun = `INSERT INTO ` + r + ` (id, scheme, fence_basis, hook_claim) VALUES ($1, $2, $3, $4) RETURNING run_no`
	q.loadRun = `SELECT run_no, scheme, fence_basis, hook_claim FROM ` + r + ` WHERE id = $1`
	t := s + "." + tokensTable
	q.tokenLock = `SELECT pg_advisory_xact_lock(hashtextextended($1, 0))`
	q.tokenHolder = `SELECT run_id, hook_id FROM ` + t + ` WHERE token = $1`
	q.hookLive = `SELECT NOT EXISTS (SELECT 1 FROM ` + e + ` WHERE run_id = $1 AND idem_key = ANY($2::text[]))`
	q.setHolder = `INSERT INTO ` + t + ` (token, run_id, hook_id) VALUES ($1, $2, $3)
		ON CONFLICT (token) DO UPDATE SET run_id = EXCLUDED.run_id, hook_id = EXCLUDED.hook_id`
	q.counters = `SELECT next_seq, last_fenced_seq FROM ` + r + ` WHERE id = $1`
	q.count = `SELECT count(*) FROM ` + e + ` WHERE run_id = $1 AND seq IS NULL`
	q.takenKey = `SELECT idem_key FROM ` + e + ` WHERE run_id = $1 AND idem_key = ANY($2::text[]) LIMIT 1`
	q.takenToken = `SELECT token FROM ` + e + ` WHERE run_id = $1 AND type = 'hook_created' AND token = ANY($2::text[]) LIMIT 1`

	// ulid: the client-minted id is the order; no counter, no position.
	q.insertULID = `INSERT INTO ` + e + ` ` + insertCols + `
		SELECT ` + fmt.Sprintf(insertVals, "NULL") + `
		FROM ` + unnestCols + ` AS ` + unnestRow + `)`

	// seq: the counter row and the inserts in one statement. The UPDATE takes
	// the run's row lock and yields the base position; positions follow the
	// draft order. A fence is a condition on the UPDATE: when it fails the
	// CTE is empty and nothing is inserted.
	q.insertULIDQuiet = q.insertULID + ` ON CONFLICT DO NOTHING`

	seq := func(set, where string) string {
		return `WITH c AS (
			UPDATE ` + r + ` SET next_seq = next_seq + cardinality($2::text[])` + set + `
			WHERE id = $1` + where + `
			RETURNING next_seq - cardinality($2::text[]) AS base
		)
		INSERT INTO ` + e + ` ` + insertCols + `
		SELECT ` + fmt.Sprintf(insertVals, "c.base + u.ord") + `
		FROM c, ` + unnestCols + ` WITH ORDINALITY AS ` + unnestRow + `, ord)
		RETURNING id, seq`
	}
	const setFenced = `, last_fenced_seq = next_seq + cardinality($2::text[])`
	q.insertSeq = seq("", "")
	q.insertSeqFenced = seq(setFenced, ` AND next_seq = $10::bigint`)
	q.insertSeqFenceD = seq(setFenced, ` AND last_fenced_seq <= $10::bigint AND next_seq >= $10::bigint`)

	// sequence: seq is nextval of the run's own sequence, drawn row by row at
	// insert time, outside any transaction's control. pre reads the statement
	// snapshot first: the run's event count (fenced appends compare it with
	// the expected count) and any key of the batch already taken, so that a
	// rejected batch draws no number.
	q.insertSequence = `WITH pre AS MATERIALIZED (
			SELECT CASE WHEN $11::bool THEN (SELECT count(*) FROM ` + e + ` WHERE run_id = $1) END AS n,
			       (SELECT idem_key FROM ` + e + ` WHERE run_id = $1 AND idem_key = ANY($8::text[]) LIMIT 1) AS taken_key,
			       (SELECT token FROM ` + e + ` WHERE run_id = $1 AND type = 'hook_created' AND token = ANY($13::text[]) LIMIT 1) AS taken_token
		), ins AS (
			INSERT INTO ` + e + ` ` + insertCols + `
			SELECT ` + fmt.Sprintf(insertVals, "nextval($10::regclass)") + `
			FROM pre, ` + unnestCols + ` WITH ORDINALITY AS ` + unnestRow + `, ord)
			WHERE pre.taken_key IS NULL AND pre.taken_token IS NULL AND (NOT $11::bool OR pre.n = $12::bigint)
			RETURNING id, seq
		)
		SELECT pre.n, pre.taken_key, pre.taken_token, ins.id, ins.seq FROM pre LEFT JOIN ins ON true`

	// slot: the counter row and the reserved rows in one statement, as for
	// seq, but the rows are reservations (state reserved) that only claim
	// their slots and keys; the id is the slot's (eventlog.SlotID), spelled
	// by the server since only the UPDATE knows the base. A taken key fails
	// the INSERT and rolls the counter back with it. A fence is a condition
	// on the reservation counter (reserved slots, committed or not).
	slot := func(set, where, inBand string) string {
		return `WITH c AS (
			UPDATE ` + r + ` SET next_slot = next_slot + cardinality($2::text[])` + set + `
			WHERE id = $1` + where + `
			RETURNING next_slot - cardinality($2::text[]) AS base
		)
		INSERT INTO ` + e + ` (id, type, correlation_id, run_id, payload, seq, token, dedup, idem_key, minted_at, state, in_band)
		SELECT ` + slotID("c.base + u.ord") + `, u.type, NULLIF(u.corr, ''), $1, NULLIF(u.payload, '')::jsonb, c.base + u.ord,
			NULLIF(u.token, ''), NULLIF(u.dedup, ''), u.idem, u.minted, '` + stateReserved + `', ` + inBand + `
		FROM c, ` + unnestCols + ` WITH ORDINALITY AS ` + unnestRow + `, ord)
		RETURNING id, seq`
	}
	q.insertSlot = slot("", "", "false")
	q.insertSlotFenced = slot("", ` AND next_slot = $10::bigint`, "false")
	// spec 9's in-band fence: a condition on the in-band count, which the
	// accepted write moves by its length in the same statement.
	q.insertSlotInBand = slot(`, seq_in_band = seq_in_band + cardinality($2::text[])`, ` AND seq_in_band = $10::bigint`, "true")
	q.slotCounter = `SELECT next_slot FROM ` + r + ` WHERE id = $1`
	q.slotCounters = `SELECT next_slot, seq_in_band FROM ` + r + ` WHERE id = $1`
	q.slotSnapshot = `SELECT next_slot, seq_in_band_done FROM ` + r + ` WHERE id = $1`
	// done moves seq_in_band_done by the in-band rows a statement filled
	// (the CTE f: committed or sealed), in the same statement.
	done := `, d AS (
			UPDATE ` + r + ` SET seq_in_band_done = seq_in_band_done + n.k
			FROM (SELECT count(*) AS k FROM f WHERE f.in_band) n
			WHERE id = $1 AND n.k > 0
		)`

	// A commit locks its reservation's rows ($2 … $3) in slot order (a seal
	// locks one row, so the two cannot deadlock), then either commits them
	// all or, when any was sealed, voids the rest. Both are UPDATEs, so every
	// row's xmin, and with it pg_xact_commit_timestamp, is the transaction
	// that filled the slot, not the one that reserved it. created_at becomes
	// that transaction's start too (List's commit time without
	// track_commit_timestamp).
	slots := ` WHERE run_id = $1 AND seq BETWEEN $2::bigint AND $3::bigint`
	q.lockSlots = `SELECT seq, state FROM ` + e + slots + ` ORDER BY seq FOR UPDATE`
	q.commitSlots = `WITH f AS (UPDATE ` + e + ` SET state = '` + stateCommitted + `', created_at = now()` + slots +
		` AND state = '` + stateReserved + `'
		RETURNING *)` + done + `
		SELECT ` + eventCols("now()") + ` FROM f`
	// A seal turns a reserved row into a noop in place: the slot's id and
	// position stay, the draft and its keys go, and the payload records when
	// the slot was reserved (the row's minted_at) and who sealed it ($4,
	// omitted when ""). minted_at becomes the seal's own mint time ($5). A
	// seal is a void of the one slot $2 = $3 that returns its noop.
	seal := `SET state = '` + stateNoop + `', type = '` + string(eventlog.Noop) + `',
		correlation_id = NULL, token = NULL, dedup = NULL, idem_key = NULL,
		payload = jsonb_strip_nulls(jsonb_build_object('reservedAt', minted_at, 'sealedBy', NULLIF($4::text, ''))),
		minted_at = $5::timestamptz, created_at = now()`
	void := `WITH f AS (UPDATE ` + e + ` ` + seal + slots + ` AND state = '` + stateReserved + `' RETURNING *)` + done
	q.voidSlots = void + ` SELECT 1`
	q.sealSlot = void + ` SELECT ` + eventCols("now()") + ` FROM f`
	q.slotState = `SELECT state FROM ` + e + ` WHERE run_id = $1 AND seq = $2::bigint`

	committed := "created_at"
	if commitTS {
		committed = "COALESCE(pg_xact_commit_timestamp(xmin), created_at)"
	}
	// Readers see committed rows and noops, never a reservation (only slot
	// runs have any, so the condition costs the other schemes nothing).
	const visible = ` AND state <> '` + stateReserved + `'`
	cols := `SELECT ` + eventCols(committed) + ` FROM ` + e
	q.listULID = cols + ` WHERE run_id = $1 AND seq IS NULL AND id > $2 ORDER BY id LIMIT $3::bigint`
	q.listSeq = cols + ` WHERE run_id = $1 AND seq > $2` + visible + ` ORDER BY seq LIMIT $3::bigint`
	q.dumpULID = cols + ` WHERE run_id = $1 ORDER BY id`
	q.dumpSeq = cols + ` WHERE run_id = $1` + visible + ` ORDER BY seq NULLS LAST, id`

	ct := `SELECT id, COALESCE(seq, 0), pg_xact_commit_timestamp(xmin) FROM ` + e + ` WHERE run_id = $1` + visible + ` ORDER BY `
	q.commitULID = ct + `id`
	q.commitSeq = ct + `seq NULLS LAST, id`
	return q
}

// eventCols is the select list of an event as query scans it; committed is
// the commit time's expression.
func eventCols(committed string) string {
	return `id, type, COALESCE(correlation_id, ''), payload, COALESCE(seq, 0), COALESCE(token, ''),
		COALESCE(dedup, ''), minted_at, ` + committed
}

// slotID is the SQL spelling of eventlog.SlotID(pos).
func slotID(pos string) string {
	return fmt.Sprintf(`'%s' || lpad((%s)::text, %d, '0')`, eventlog.SlotPrefix, pos, eventlog.SlotDigits)
}

// sequenceName is the sanitized name of a sequence run's own sequence.
func sequenceName(schema string, runNo int64) string {
	return pgx.Identifier{schema, fmt.Sprintf("run_seq_%d", runNo)}.Sanitize()
}
