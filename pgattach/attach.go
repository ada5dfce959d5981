// Package pgattach reads the event table of an existing Workflow DevKit
// world-postgres database, read-only, and hands each run's events with their
// store commit times to the forensics checkers. It never writes: every query
// runs in a READ ONLY transaction.
package pgattach

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/oklog/ulid/v2"
	"github.com/stormctl/stormctl/eventlog"
	"github.com/stormctl/stormctl/forensics"
)

// Options select what to read.
type Options struct {
	URL    string
	Schema string // default "workflow"
	RunID  string // only this run, if set
	Since  time.Time
}

// ErrNoTable is returned when <schema>.workflow_events does not exist.
var ErrNoTable = errors.New("no workflow_events table")

// Info says what the database could tell.
type Info struct {
	Table           string `json:"table"`
	HasSeq          bool   `json:"has_seq"`
	CommitTimestamp bool   `json:"track_commit_timestamp"`
}

// Run is one run's events as stored, in no particular order.
type Run struct {
	ID     string
	Events []forensics.CommitEvent
}

// Read connects, checks the table and streams every selected run to fn.
// Connection and authentication failures wrap eventlog.ErrUnavailable; a
// missing table is ErrNoTable.
func Read(ctx context.Context, o Options, fn func(Run) error) (Info, error) {
	if o.Schema == "" {
		o.Schema = "workflow"
	}
	info := Info{Table: pgx.Identifier{o.Schema, "workflow_events"}.Sanitize()}
	conn, err := pgx.Connect(ctx, o.URL)
	if err != nil {
		return info, eventlog.Unavailable("connect to "+redact(o.URL), rootCause(err))
	}
	defer conn.Close(context.WithoutCancel(ctx))
	tx, err := conn.BeginTx(ctx, pgx.TxOptions{AccessMode: pgx.ReadOnly})
	if err != nil {
		return info, eventlog.Unavailable("begin a read-only transaction", err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx))

	var cols []string
	rows, err := tx.Query(ctx, `SELECT column_name FROM information_schema.columns
		WHERE table_schema = $1 AND table_name = 'workflow_events'`, o.Schema)
	if err != nil {
		return info, eventlog.Unavailable("read the table's columns", err)
	}
	cols, err = pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return info, eventlog.Unavailable("read the table's columns", err)
	}
	if len(cols) == 0 {
		return info, fmt.Errorf("%s: %w (is --schema right? the Workflow DevKit default is \"workflow\")", info.Table, ErrNoTable)
	}
	for _, need := range []string{"id", "run_id", "type"} {
		if !slices.Contains(cols, need) {
			return info, fmt.Errorf("%s has no %q column: not a Workflow DevKit events table", info.Table, need)
		}
	}
	info.HasSeq = slices.Contains(cols, "seq")
	var track string
	if err := tx.QueryRow(ctx, "SHOW track_commit_timestamp").Scan(&track); err != nil {
		return info, eventlog.Unavailable("read track_commit_timestamp", err)
	}
	info.CommitTimestamp = track == "on"

	commit := "NULL::timestamptz"
	if info.CommitTimestamp {
		commit = "pg_xact_commit_timestamp(xmin)"
	}
	seq := "NULL::bigint"
	if info.HasSeq {
		seq = "seq"
	}
	q := fmt.Sprintf(`SELECT run_id, id, type, %s, %s, xmin::text FROM %s WHERE ($1 = '' OR run_id = $1)`, seq, commit, info.Table)
	args := []any{o.RunID}
	if !o.Since.IsZero() {
		if !slices.Contains(cols, "created_at") {
			return info, fmt.Errorf("%s has no created_at column for --since", info.Table)
		}
		q += " AND created_at >= $2"
		args = append(args, o.Since)
	}
	rows, err = tx.Query(ctx, q, args...)
	if err != nil {
		return info, eventlog.Unavailable("read "+info.Table, err)
	}
	byRun := map[string][]forensics.CommitEvent{}
	var order []string
	var runID, id, typ, xmin string
	var seqv *int64
	var at *time.Time
	_, err = pgx.ForEachRow(rows, []any{&runID, &id, &typ, &seqv, &at, &xmin}, func() error {
		e := forensics.CommitEvent{ID: id, Type: eventlog.Type(typ), MintedAt: mintTime(id)}
		if seqv != nil {
			e.Seq = *seqv
		}
		if at != nil {
			e.CommitAt = *at
		}
		e.Tie, _ = strconv.ParseUint(xmin, 10, 64)
		if _, ok := byRun[runID]; !ok {
			order = append(order, runID)
		}
		byRun[runID] = append(byRun[runID], e)
		return nil
	})
	if err != nil {
		return info, eventlog.Unavailable("read "+info.Table, err)
	}
	slices.Sort(order)
	for _, r := range order {
		if err := fn(Run{ID: r, Events: byRun[r]}); err != nil {
			return info, err
		}
		delete(byRun, r)
	}
	return info, nil
}

// mintTime is the time encoded in a ULID-based event id ("wevt_…"), or zero.
func mintTime(id string) time.Time {
	i := strings.LastIndexByte(id, '_')
	u, err := ulid.ParseStrict(id[i+1:])
	if err != nil {
		return time.Time{}
	}
	return ulid.Time(u.Time())
}

// redact hides a password in a connection URL for messages.
func redact(url string) string {
	if cfg, err := pgx.ParseConfig(url); err == nil && cfg.Password != "" {
		return strings.Replace(url, cfg.Password, "xxxxx", 1)
	}
	return url
}

// rootCause is the innermost error of a chain: a one-line reason such as
// "dial tcp 127.0.0.1:1: connect: connection refused" instead of pgx's
// multi-line account of every address it tried.
func rootCause(err error) error {
	for {
		var next error
		switch u := err.(type) {
		case interface{ Unwrap() []error }:
			if errs := u.Unwrap(); len(errs) > 0 {
				next = errs[0]
			}
		case interface{ Unwrap() error }:
			next = u.Unwrap()
		}
		if next == nil {
			return err
		}
		err = next
	}
}
