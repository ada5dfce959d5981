package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/stormctl/stormctl/internal/eventlog"
	"github.com/stormctl/stormctl/worlds"
)

// fence is the precondition of a fenced append.
type fence struct {
	on       bool
	expected int64
	// inBand fences a slot run on its in-band count (eventlog.FenceInBand).
	inBand bool
}

// Append writes facts unfenced, the whole batch in one transaction (all or
// nothing under every scheme). Under slot that transaction is Commit's, after
// Reserve's and the window (see Reserve).
func (w *World) Append(ctx context.Context, runID string, d []eventlog.Draft) ([]eventlog.Event, error) {
	return w.append(ctx, runID, d, fence{})
}

// AppendFenced writes a batch of decisions, all or nothing, if the log is
// where the writer expects it (expectedSeq: the number of events it loaded),
// failing with an *eventlog.FencedError otherwise.
//
//   - seq: the fence is a condition on the run's counter row, evaluated by the
//     statement that moves the counter and inserts the batch: next_seq =
//     expectedSeq, or with eventlog.FenceOnDecisions last_fenced_seq <=
//     expectedSeq <= next_seq. A rejection's Actual is next_seq, or
//     last_fenced_seq when a fenced append landed past expectedSeq.
//   - ulid: the legacy count guard. The run's events are counted by one
//     statement and the batch is written by a later transaction, after the
//     write's window: that check-then-write gap is the defect under study,
//     kept on purpose. The fence basis is ignored.
//   - sequence: the count rides the insert statement, but a sequence locks
//     nothing, so writers in flight are invisible to it. The fence basis is
//     ignored.
//   - slot: a condition on the run's slot counter in the reservation's
//     statement (next_slot = expectedSeq: every slot reserved, committed or
//     not); a rejection's Actual is next_slot. The fence basis is ignored.
func (w *World) AppendFenced(ctx context.Context, runID string, expectedSeq int64, d []eventlog.Draft) ([]eventlog.Event, error) {
	return w.append(ctx, runID, d, fence{on: true, expected: expectedSeq})
}

func (w *World) append(ctx context.Context, runID string, d []eventlog.Draft, f fence) ([]eventlog.Event, error) {
	op := "append to run " + runID
	if f.on {
		op = "fenced append to run " + runID
	}
	unlock, run, err := w.enterRun(ctx, runID)
	if err != nil {
		return nil, err
	}
	defer unlock()
	keys, err := checkDrafts(runID, run.basis, d)
	if err != nil || len(d) == 0 {
		return nil, err
	}
	if run.scheme == eventlog.SchemeULID && f.on {
		var n int64
		if err := w.pool.QueryRow(ctx, w.q.count, runID).Scan(&n); err != nil {
			return nil, storeErr(ctx, op+": count", err)
		}
		if n != f.expected {
			return nil, &eventlog.FencedError{RunID: runID, Expected: f.expected, Actual: n}
		}
	}
	var delay time.Duration
	for _, x := range d {
		delay = max(delay, w.cfg.Latency.Delay(x.Type))
	}
	if run.scheme == eventlog.SchemeSlot {
		f.inBand = f.on && run.basis == eventlog.FenceInBand
		return w.appendSlot(ctx, runID, d, plainKeys(run.basis, d, keys), f, delay)
	}
	if run.scheme == eventlog.SchemeULID && claimsToken(run.claim, d) {
		return w.appendClaimULID(ctx, runID, run, d, delay)
	}
	b := w.newBatch(runID, d, keys)
	var res result
	switch run.scheme {
	case eventlog.SchemeSeq:
		res, err = w.writeSeq(ctx, run, b, f, delay)
	case eventlog.SchemeSequence:
		res, err = w.writeSequence(ctx, run, b, f, delay)
	default:
		err = w.exec(ctx, windowAfterWrite, delay, w.q.insertULID, b.args(), nil)
	}
	committed := time.Now()
	if err != nil {
		return nil, w.writeErr(ctx, op, b, err)
	}
	if res.fenced != nil {
		return nil, res.fenced
	}
	if res.conflict != "" {
		return nil, &eventlog.ConflictError{RunID: runID, Key: res.conflict}
	}
	for i := range b.events {
		if run.scheme.Positioned() {
			seq, ok := res.seqs[b.events[i].ID]
			if !ok {
				return nil, fmt.Errorf("postgres: %s: event %s was not positioned by the insert", op, b.events[i].ID)
			}
			b.events[i].Seq = seq
		}
		b.events[i].CommittedAt = committed
	}
	return b.events, nil
}

// result is what a write statement reported besides an error.
type result struct {
	seqs     map[string]int64
	fenced   *eventlog.FencedError
	conflict string // a key found taken before anything was written
}

// args are the statement arguments $1 … $9 of a batch.
func (b *batch) args(extra ...any) []any {
	return append([]any{b.runID, b.ids, b.types, b.corrs, b.payloads, b.tokens, b.dedups, b.idem, b.minted}, extra...)
}

// writeSeq runs the counter statement: one UPDATE … RETURNING feeding the
// inserts, in one round trip; with a window, BEGIN, the window, then the
// statement and COMMIT pipelined, so that the row lock is held for one round
// trip and the commit, never across the window.
func (w *World) writeSeq(ctx context.Context, run runInfo, b *batch, f fence, delay time.Duration) (result, error) {
	sql, args := w.q.insertSeq, b.args()
	if f.on {
		sql = w.q.insertSeqFenced
		if run.basis == eventlog.FenceOnDecisions {
			sql = w.q.insertSeqFenceD
		}
		args = b.args(f.expected)
	}
	res := result{seqs: make(map[string]int64, len(b.ids))}
	err := w.exec(ctx, windowBeforeWrite, delay, sql, args, func(rows pgx.Rows) error {
		var id string
		var seq int64
		if err := rows.Scan(&id, &seq); err != nil {
			return err
		}
		res.seqs[id] = seq
		return nil
	})
	if err != nil || len(res.seqs) == len(b.ids) {
		return res, err
	}
	if len(res.seqs) != 0 || !f.on {
		return res, fmt.Errorf("the insert wrote %d of %d events", len(res.seqs), len(b.ids))
	}
	// The fence held the UPDATE back. Read the counter for the rejection.
	var next, fenced int64
	if err := w.pool.QueryRow(ctx, w.q.counters, b.runID).Scan(&next, &fenced); err != nil {
		return res, err
	}
	actual := next
	if run.basis == eventlog.FenceOnDecisions && fenced > f.expected {
		actual = fenced
	}
	res.fenced = &eventlog.FencedError{RunID: b.runID, Expected: f.expected, Actual: actual}
	return res, nil
}

// writeSequence runs the sequence statement: check, draw numbers, insert;
// with a window, the window runs after the numbers are drawn and before the
// commit, which is when a lower number can still be invisible to a reader
// that already sees a higher one.
func (w *World) writeSequence(ctx context.Context, run runInfo, b *batch, f fence, delay time.Duration) (result, error) {
	args := b.args(sequenceName(w.cfg.Schema, run.no), f.on, f.expected, b.tokenKeys)
	res := result{seqs: make(map[string]int64, len(b.ids))}
	var count *int64
	err := w.exec(ctx, windowAfterWrite, delay, w.q.insertSequence, args, func(rows pgx.Rows) error {
		var takenKey, takenToken, id *string
		var seq *int64
		if err := rows.Scan(&count, &takenKey, &takenToken, &id, &seq); err != nil {
			return err
		}
		switch {
		case takenKey != nil || takenToken != nil:
			res.conflict = b.conflictKey(deref(takenKey), deref(takenToken))
		case id != nil && seq != nil:
			res.seqs[*id] = *seq
		}
		return nil
	})
	if err != nil || res.conflict != "" || len(res.seqs) == len(b.ids) {
		return res, err
	}
	if len(res.seqs) == 0 && f.on && count != nil && *count != f.expected {
		res.fenced = &eventlog.FencedError{RunID: b.runID, Expected: f.expected, Actual: *count}
		return res, nil
	}
	return res, fmt.Errorf("the insert wrote %d of %d events", len(res.seqs), len(b.ids))
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// writeErr turns a failed write into the contract's error: a unique
// violation on an idempotency key is an *eventlog.ConflictError naming the
// key (looked up after the rollback), anything else goes through storeErr.
func (w *World) writeErr(ctx context.Context, op string, b *batch, err error) error {
	code, constraint := pgCode(err)
	if code != codeUniqueViolation || (constraint != idemConstraint && constraint != tokenIndex) || ctx.Err() != nil {
		return storeErr(ctx, op+" ("+b.describe()+")", err)
	}
	var taken string
	var lerr error
	if constraint == tokenIndex {
		lerr = w.pool.QueryRow(ctx, w.q.takenToken, b.runID, b.tokenKeys).Scan(&taken)
		if lerr == nil {
			taken = tokenKeyPrefix + taken
		}
	} else {
		lerr = w.pool.QueryRow(ctx, w.q.takenKey, b.runID, b.idem).Scan(&taken)
	}
	if lerr != nil || taken == "" {
		taken = b.conflictKey("", "")
		if constraint == tokenIndex && b.hasToken() {
			taken = tokenKeyPrefix + b.tokenKeys[0]
		}
	}
	return &eventlog.ConflictError{RunID: b.runID, Key: taken}
}

// window says where a write spends its mint-to-commit window inside its
// transaction.
type window int

const (
	// windowAfterWrite: BEGIN and the statement, then the window, then
	// COMMIT. The rows (and the numbers a sequence drew for them) exist,
	// uncommitted, for the whole window: ulid and sequence.
	windowAfterWrite window = iota
	// windowBeforeWrite: BEGIN, the window, then the statement and COMMIT in
	// one pipelined round trip: seq, whose statement takes the run's row lock.
	windowBeforeWrite
)

// exec runs one write statement, feeding each result row to scan (may be
// nil). Without a window it is one statement in an implicit transaction, one
// round trip. With one, the statement runs in an explicit transaction shaped
// by where.
func (w *World) exec(ctx context.Context, where window, delay time.Duration, sql string, args []any, scan func(pgx.Rows) error) error {
	if delay <= 0 {
		rows, err := w.pool.Query(ctx, sql, args...)
		if err != nil {
			return err
		}
		return drain(rows, scan)
	}
	conn, err := w.pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer conn.Release()
	err = w.execTx(ctx, conn, where, delay, sql, args, scan)
	if err != nil {
		rollback(ctx, conn)
	}
	return err
}

func (w *World) execTx(ctx context.Context, conn *pgxpool.Conn, where window, delay time.Duration, sql string, args []any, scan func(pgx.Rows) error) error {
	bt := &pgx.Batch{}
	bt.Queue("BEGIN")
	if where == windowBeforeWrite {
		if err := sendBatch(ctx, conn, bt, nil); err != nil {
			return err
		}
		if err := worlds.SpendWindow(ctx, w.cfg.Latency, delay); err != nil {
			return err
		}
		bt = &pgx.Batch{}
		bt.Queue(sql, args...)
		bt.Queue("COMMIT")
		return sendBatch(ctx, conn, bt, scan)
	}
	bt.Queue(sql, args...)
	if err := sendBatch(ctx, conn, bt, scan); err != nil {
		return err
	}
	if err := worlds.SpendWindow(ctx, w.cfg.Latency, delay); err != nil {
		return err
	}
	_, err := conn.Exec(ctx, "COMMIT")
	return err
}

// sendBatch sends a pipelined batch whose queries are BEGIN/COMMIT (no rows)
// and at most one statement whose rows go to scan.
func sendBatch(ctx context.Context, conn *pgxpool.Conn, bt *pgx.Batch, scan func(pgx.Rows) error) error {
	br := conn.SendBatch(ctx, bt)
	for _, qq := range bt.QueuedQueries {
		if qq.SQL == "BEGIN" || qq.SQL == "COMMIT" {
			if _, err := br.Exec(); err != nil {
				_ = br.Close()
				return err
			}
			continue
		}
		rows, err := br.Query()
		if err == nil {
			err = drain(rows, scan)
		}
		if err != nil {
			_ = br.Close()
			return err
		}
	}
	return br.Close()
}

// drain reads every row into scan and closes rows.
func drain(rows pgx.Rows, scan func(pgx.Rows) error) error {
	defer rows.Close()
	for rows.Next() {
		if scan == nil {
			continue
		}
		if err := scan(rows); err != nil {
			return err
		}
	}
	return rows.Err()
}

// rollback ends a failed explicit transaction so the connection goes back to
// the pool clean; if that fails the pool discards the connection.
func rollback(ctx context.Context, conn *pgxpool.Conn) {
	pc := conn.Conn().PgConn()
	if pc.IsClosed() || pc.TxStatus() == 'I' {
		return
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	_, _ = conn.Exec(rctx, "ROLLBACK")
}
