package postgres

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/stormctl/stormctl/internal/eventlog"
	"github.com/stormctl/stormctl/worlds"
)

var _ worlds.Slotter = (*World)(nil)

// Reserve implements worlds.Slotter: one short transaction moves the run's
// slot counter (next_slot) and inserts one reserved row per draft at the
// slots it yields, claiming the drafts' keys through the unique indexes. A
// taken key fails it with an *eventlog.ConflictError and takes nothing.
// Readers do not see reserved rows; other writers (through the counter and
// the keys) and sealers do. An empty d reserves nothing: a Reservation with
// First 0, which Commit accepts as a no-op.
func (w *World) Reserve(ctx context.Context, runID string, d []eventlog.Draft) (worlds.Reservation, error) {
	unlock, err := w.enter(ctx)
	if err != nil {
		return worlds.Reservation{}, err
	}
	defer unlock()
	run, err := w.slotRun(ctx, runID, "reserve")
	if err != nil {
		return worlds.Reservation{}, err
	}
	keys, err := checkDrafts(runID, run.basis, d)
	if err != nil {
		return worlds.Reservation{}, err
	}
	return w.reserve(ctx, runID, d, plainKeys(run.basis, d, keys), fence{})
}

// Commit implements worlds.Slotter: one transaction locks the reservation's
// rows in slot order and, when all are still reserved, commits them in place
// (state committed, so the row's xmin, read by CommitTimes and forensics, is
// this transaction's). When a seal got to any of them first it commits
// nothing: it seals the reservation's still-reserved rows itself, releasing
// their keys, so the batch leaves no hole, and fails with an
// *eventlog.SealedError naming the first slot found sealed.
func (w *World) Commit(ctx context.Context, r worlds.Reservation) ([]eventlog.Event, error) {
	unlock, err := w.enter(ctx)
	if err != nil {
		return nil, err
	}
	defer unlock()
	if _, err := w.slotRun(ctx, r.RunID, "commit"); err != nil {
		return nil, err
	}
	return w.commit(ctx, r)
}

// Seal implements worlds.Slotter with one UPDATE … WHERE state = 'reserved'
// RETURNING on the slot's row: a reserved row becomes a noop in place
// (payload eventlog.NoopPayload: the row's reservation time and the actor of
// ctx), its keys released; the noop is returned with sealed true. A slot
// already committed or sealed is left alone (sealed false, nil error): a
// commit racing the seal locks the same row, so exactly one of them fills
// it. A slot never reserved is an error.
func (w *World) Seal(ctx context.Context, runID string, slot int64) (eventlog.Event, bool, error) {
	unlock, err := w.enter(ctx)
	if err != nil {
		return eventlog.Event{}, false, err
	}
	defer unlock()
	if _, err := w.slotRun(ctx, runID, "seal"); err != nil {
		return eventlog.Event{}, false, err
	}
	op := fmt.Sprintf("seal slot %d of run %s", slot, runID)
	if slot < 1 {
		return eventlog.Event{}, false, fmt.Errorf("postgres: %s: slots start at 1", op)
	}
	// A reservation is committed before any later slot can be taken, so a
	// row this UPDATE's snapshot missed yet the follow-up read sees reserved
	// was reserved in between: seal again, once.
	for range 2 {
		minted := time.Now().Truncate(time.Microsecond)
		evs, err := w.query(ctx, runID, w.q.sealSlot, runID, slot, slot, worlds.ActorFrom(ctx), minted)
		if err != nil {
			return eventlog.Event{}, false, storeErr(ctx, op, err)
		}
		if len(evs) == 1 {
			noop := evs[0]
			noop.CommittedAt = time.Now()
			return noop, true, nil
		}
		var state string
		err = w.pool.QueryRow(ctx, w.q.slotState, runID, slot).Scan(&state)
		switch {
		case errors.Is(err, pgx.ErrNoRows):
			return eventlog.Event{}, false, fmt.Errorf("postgres: %s: the slot was never reserved", op)
		case err != nil:
			return eventlog.Event{}, false, storeErr(ctx, op, err)
		case state != stateReserved:
			return eventlog.Event{}, false, nil
		}
	}
	return eventlog.Event{}, false, fmt.Errorf("postgres: %s: the slot stayed reserved but could not be sealed", op)
}

// slotRun returns the record of a slot run; any other scheme is an error.
func (w *World) slotRun(ctx context.Context, runID, what string) (runInfo, error) {
	run, err := w.run(ctx, runID)
	if err != nil {
		return run, err
	}
	if run.scheme != eventlog.SchemeSlot {
		return run, fmt.Errorf("postgres: %s in run %s: the run's scheme is %s, not slot", what, runID, run.scheme)
	}
	return run, nil
}

// appendSlot is Append and AppendFenced under slot: Reserve (fenced on the
// reservation counter), the window with no transaction open and no lock
// held, then Commit. A context that ends in the window returns its error
// and leaves the slots reserved: a hole only a seal fills.
func (w *World) appendSlot(ctx context.Context, runID string, d []eventlog.Draft, keys []eventKeys, f fence, delay time.Duration) ([]eventlog.Event, error) {
	r, err := w.reserve(ctx, runID, d, keys, f)
	if err != nil {
		return nil, err
	}
	if err := worlds.SpendWindow(ctx, w.cfg.Latency, delay); err != nil {
		return nil, err
	}
	return w.commit(ctx, r)
}

// reserve runs the reservation statement: the counter moves and the rows
// are inserted in one statement, so the run's row lock is held for one
// statement only (and never across a window). Fenced, the counter must be
// f.expected (under the in-band basis the in-band count, which moves with
// it); a rejection reads the counter for its Actual.
func (w *World) reserve(ctx context.Context, runID string, d []eventlog.Draft, keys []eventKeys, f fence) (worlds.Reservation, error) {
	op := "reserve slots in run " + runID
	now := time.Now().Truncate(time.Microsecond)
	r := worlds.Reservation{RunID: runID, Drafts: slices.Clone(d), ReservedAt: now}
	if len(d) == 0 {
		return r, nil
	}
	b := newSlotBatch(runID, d, keys, now)
	sql, args := w.q.insertSlot, b.args()
	switch {
	case f.inBand:
		sql, args = w.q.insertSlotInBand, b.args(f.expected)
	case f.on:
		sql, args = w.q.insertSlotFenced, b.args(f.expected)
	}
	got := make(map[int64]string, len(d))
	// No window here (it comes after, in appendSlot): one statement in an
	// implicit transaction, one round trip.
	err := w.exec(ctx, windowBeforeWrite, 0, sql, args, func(rows pgx.Rows) error {
		var id string
		var seq int64
		if err := rows.Scan(&id, &seq); err != nil {
			return err
		}
		got[seq] = id
		return nil
	})
	if err != nil {
		return worlds.Reservation{}, w.writeErr(ctx, op, b, err)
	}
	if len(got) == 0 && f.on {
		var next, inBand int64
		if err := w.pool.QueryRow(ctx, w.q.slotCounters, runID).Scan(&next, &inBand); err != nil {
			return worlds.Reservation{}, storeErr(ctx, op+": read the slot counter", err)
		}
		if f.inBand {
			return worlds.Reservation{}, &eventlog.FencedError{RunID: runID, Expected: f.expected, Actual: inBand, InBand: true}
		}
		return worlds.Reservation{}, &eventlog.FencedError{RunID: runID, Expected: f.expected, Actual: next}
	}
	if len(got) != len(d) {
		return worlds.Reservation{}, fmt.Errorf("postgres: %s: the insert reserved %d of %d slots", op, len(got), len(d))
	}
	r.First = slices.Min(slices.Collect(maps.Keys(got)))
	for i := range d {
		pos := r.First + int64(i)
		if got[pos] != eventlog.SlotID(pos) {
			return worlds.Reservation{}, fmt.Errorf("postgres: %s: slot %d reserved as %q, want %s at consecutive slots", op, pos, got[pos], eventlog.SlotID(pos))
		}
	}
	return r, nil
}

// commit is Commit once admitted: BEGIN and the lock (pipelined), then the
// commit or the void and COMMIT (pipelined): two round trips, holding the
// reservation's rows only, never the run's row.
func (w *World) commit(ctx context.Context, r worlds.Reservation) ([]eventlog.Event, error) {
	n := int64(len(r.Drafts))
	if n == 0 {
		return nil, nil
	}
	op := fmt.Sprintf("commit slots %d-%d of run %s", r.First, r.First+n-1, r.RunID)
	if r.First < 1 {
		return nil, fmt.Errorf("postgres: %s: not a reservation (slots start at 1)", op)
	}
	conn, err := w.pool.Acquire(ctx)
	if err != nil {
		return nil, storeErr(ctx, op, err)
	}
	defer conn.Release()
	evs, err := w.commitTx(ctx, conn, r, op)
	if err != nil {
		rollback(ctx, conn)
		if se := (*eventlog.SealedError)(nil); errors.As(err, &se) {
			return nil, se
		}
		return nil, storeErr(ctx, op, err)
	}
	committed := time.Now()
	for i := range evs {
		evs[i].CommittedAt = committed
	}
	return evs, nil
}

func (w *World) commitTx(ctx context.Context, conn *pgxpool.Conn, r worlds.Reservation, op string) ([]eventlog.Event, error) {
	last := r.First + int64(len(r.Drafts)) - 1
	bt := &pgx.Batch{}
	bt.Queue("BEGIN")
	bt.Queue(w.q.lockSlots, r.RunID, r.First, last)
	states := make(map[int64]string, len(r.Drafts))
	err := sendBatch(ctx, conn, bt, func(rows pgx.Rows) error {
		var seq int64
		var state string
		if err := rows.Scan(&seq, &state); err != nil {
			return err
		}
		states[seq] = state
		return nil
	})
	if err != nil {
		return nil, err
	}
	var sealed int64
	for pos := r.First; pos <= last; pos++ {
		switch states[pos] {
		case stateReserved:
		case stateNoop:
			if sealed == 0 {
				sealed = pos
			}
		case stateCommitted:
			return nil, fmt.Errorf("slot %d is already committed (a reservation commits once)", pos)
		default:
			return nil, fmt.Errorf("slot %d was never reserved", pos)
		}
	}
	bt = &pgx.Batch{}
	if sealed != 0 {
		minted := time.Now().Truncate(time.Microsecond)
		bt.Queue(w.q.voidSlots, r.RunID, r.First, last, worlds.ActorFrom(ctx), minted)
		bt.Queue("COMMIT")
		if err := sendBatch(ctx, conn, bt, nil); err != nil {
			return nil, err
		}
		return nil, &eventlog.SealedError{RunID: r.RunID, Slot: sealed}
	}
	evs := make([]eventlog.Event, 0, len(r.Drafts))
	bt.Queue(w.q.commitSlots, r.RunID, r.First, last)
	bt.Queue("COMMIT")
	err = sendBatch(ctx, conn, bt, func(rows pgx.Rows) error {
		e, err := scanEvent(r.RunID, rows)
		evs = append(evs, e)
		return err
	})
	if err != nil {
		return nil, err
	}
	if len(evs) != len(r.Drafts) {
		return nil, fmt.Errorf("committed %d of %d locked reserved slots", len(evs), len(r.Drafts))
	}
	slices.SortFunc(evs, func(a, b eventlog.Event) int { return cmp.Compare(a.Seq, b.Seq) })
	return evs, nil
}
