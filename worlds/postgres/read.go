package postgres

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/stormctl/stormctl/internal/eventlog"
	"github.com/stormctl/stormctl/worlds"
)

// List returns up to limit events after the cursor in the run's scheme order
// (limit <= 0: all of them), each read by one statement, so from one
// snapshot.
//
//   - ulid: WHERE id > cursor ORDER BY id.
//   - seq and sequence: WHERE seq > cursor ORDER BY seq, and the page must be
//     dense from the cursor (eventlog.CheckDensity): a hole fails the read
//     with eventlog.ErrGap. Under seq a hole cannot happen, since a counter
//     row orders the commits; under sequence it does whenever a lower number
//     has not committed yet (or never will), and the read says so loudly.
//   - slot: the same read of committed rows and noops (reservations are
//     filtered out), checked with eventlog.CheckSlots: a slot reserved and
//     still empty below a committed one fails the read with an
//     *eventlog.HoleError; empty slots at the tail end the page.
func (w *World) List(ctx context.Context, runID string, after eventlog.Cursor, limit int) (eventlog.Page, error) {
	unlock, run, err := w.enterRun(ctx, runID)
	if err != nil {
		return eventlog.Page{}, err
	}
	defer unlock()
	var fetch *int64
	if limit > 0 {
		n := int64(limit) + 1 // one more tells whether there is more
		fetch = &n
	}
	var snap *eventlog.Snapshot
	if run.basis == eventlog.FenceInBand {
		// Read before the page, as spec 9's events.list does: a write that
		// lands between the two reads is in the page, not in the count.
		snap = &eventlog.Snapshot{}
		if err := w.pool.QueryRow(ctx, w.q.slotSnapshot, runID).Scan(&snap.Seq, &snap.SeqInBand); err != nil {
			return eventlog.Page{}, storeErr(ctx, "list run "+runID+": read the snapshot", err)
		}
	}
	var evs []eventlog.Event
	if run.scheme == eventlog.SchemeULID {
		evs, err = w.query(ctx, runID, w.q.listULID, runID, after.ID, fetch)
	} else {
		if after.Seq < 0 {
			return eventlog.Page{}, fmt.Errorf("postgres: list run %s: negative cursor seq %d", runID, after.Seq)
		}
		evs, err = w.query(ctx, runID, w.q.listSeq, runID, after.Seq, fetch)
	}
	if err != nil {
		return eventlog.Page{}, storeErr(ctx, "list run "+runID, err)
	}
	p := eventlog.PageAfter(after, evs, limit)
	if run.scheme.Positioned() {
		check := eventlog.CheckDensity
		if run.scheme == eventlog.SchemeSlot {
			check = eventlog.CheckSlots
		}
		if err := check(runID, after.Seq, p.Events); err != nil {
			return eventlog.Page{}, fmt.Errorf("postgres: list run %s after seq %d: %w", runID, after.Seq, err)
		}
	}
	p.Snapshot = snap
	return p, nil
}

// Dump returns every stored event of the run in scheme order without the
// density assertion, so forensics can count what a reader would refuse
// (under slot: committed events and noops, holes and all, no reservation).
func (w *World) Dump(ctx context.Context, runID string) ([]eventlog.Event, error) {
	unlock, run, err := w.enterRun(ctx, runID)
	if err != nil {
		return nil, err
	}
	defer unlock()
	sql := w.q.dumpSeq
	if run.scheme == eventlog.SchemeULID {
		sql = w.q.dumpULID
	}
	evs, err := w.query(ctx, runID, sql, runID)
	return evs, storeErr(ctx, "dump run "+runID, err)
}

// query reads events with one statement.
func (w *World) query(ctx context.Context, runID, sql string, args ...any) ([]eventlog.Event, error) {
	rows, err := w.pool.Query(ctx, sql, args...)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) (eventlog.Event, error) {
		return scanEvent(runID, row)
	})
}

// scanEvent scans one row of eventCols into an event of run runID.
func scanEvent(runID string, row interface{ Scan(...any) error }) (eventlog.Event, error) {
	e := eventlog.Event{RunID: runID}
	var typ string
	var payload []byte
	err := row.Scan(&e.ID, &typ, &e.CorrelationID, &payload, &e.Seq, &e.Token, &e.Dedup, &e.MintedAt, &e.CommittedAt)
	e.Type = eventlog.Type(typ)
	if payload != nil {
		e.Payload = json.RawMessage(payload)
	}
	return e, err
}

// CommitTimes implements worlds.CommitTimes with the server's own commit
// times, pg_xact_commit_timestamp(xmin) (Source "store"), in scheme order. A
// row committed while track_commit_timestamp was off has a zero At: never a
// guess. A server running with it off fails with ErrNoCommitTimestamps.
func (w *World) CommitTimes(ctx context.Context, runID string) ([]worlds.CommitTime, error) {
	unlock, err := w.enter(ctx)
	if err != nil {
		return nil, err
	}
	defer unlock()
	if !w.commitTS {
		return nil, fmt.Errorf("postgres: commit times of run %s: %w", runID, ErrNoCommitTimestamps)
	}
	run, err := w.run(ctx, runID)
	if err != nil {
		return nil, err
	}
	sql := w.q.commitSeq
	if run.scheme == eventlog.SchemeULID {
		sql = w.q.commitULID
	}
	rows, err := w.pool.Query(ctx, sql, runID)
	if err != nil {
		return nil, storeErr(ctx, "commit times of run "+runID, err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (worlds.CommitTime, error) {
		ct := worlds.CommitTime{Source: "store"}
		var at *time.Time
		err := row.Scan(&ct.EventID, &ct.Seq, &at)
		if at != nil {
			ct.At = *at
		}
		return ct, err
	})
	return out, storeErr(ctx, "commit times of run "+runID, err)
}
