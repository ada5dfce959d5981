// Package pgattach reads the event table of an existing Workflow DevKit
// world-postgres database, read-only, and hands each run's events with their
// store commit times to the forensics checkers. It never writes: every query
// runs in a READ ONLY transaction.
package pgattach

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgproto3"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/stormctl/stormctl/forensics"
	"github.com/stormctl/stormctl/internal/eventlog"
	"github.com/stormctl/stormctl/internal/eventlog/pgconnect"
	"github.com/stormctl/stormctl/internal/prodlog"
)

// Options select what to read.
type Options struct {
	URL    string
	Schema string // default "workflow"
	RunID  string // only this run, if set
	Since  time.Time
}

// Info says what the database could tell.
type Info struct {
	Table           string `json:"table"`
	HasSeq          bool   `json:"has_seq"`
	CommitTimestamp bool   `json:"track_commit_timestamp"`
	// Scheme is the table's layout, found from its columns and the ids of
	// the rows read: SchemeULID (ids order the log), SchemeSeq (a seq
	// column does) or SchemeSlot (spec 6/7: ids are slot ids, whose
	// positions do). Layout holds the evidence and the rule.
	Scheme eventlog.Scheme `json:"scheme"`
	Layout Layout          `json:"layout"`
}

// Run is one run's events as stored, in no particular order.
type Run struct {
	ID string
	// Scheme is the table's (Info.Scheme): under SchemeSlot each event's
	// Seq is its slot id's position, under SchemeULID every Seq is 0.
	Scheme eventlog.Scheme
	Events []forensics.CommitEvent
}

// Read connects, checks the table and streams every selected run to fn, in
// run id order. The events' ids are views into blocks shared by many runs:
// an id kept after fn returns keeps its block (megabytes) alive, so clone
// (strings.Clone) the few worth keeping. Connection and authentication
// failures wrap eventlog.ErrUnavailable; a missing table is prodlog.ErrNoTable.
func Read(ctx context.Context, o Options, fn func(Run) error) (Info, error) {
	info, t, err := read(ctx, o)
	if err != nil {
		return info, err
	}
	err = t.each(fn)
	info.Layout.ULIDs = t.minted
	info.Layout.explain(info.Scheme)
	return info, err
}

// Findings are what the forensics find in one run.
type Findings struct {
	// Order compares commit order with seq order (slot position order
	// under SchemeSlot) when every event has one, else with id order.
	Order forensics.CommitOrder
	// Gaps, Duplicates and Unpositioned are the density of a positioned
	// run's seq (zero for a run read by id); under SchemeSlot Gaps are its
	// holes and a seal race is also a duplicate.
	Gaps, Duplicates, Unpositioned int
	// Slots are the slot findings of a run of a SchemeSlot table (nil
	// otherwise): FinalHoles, Seals (noop rows) and SealRaces, as
	// forensics.AnalyzeSlots counts them from a final log without history.
	Slots *forensics.SlotFindings
}

// Examine runs the forensics of one run; it is safe to call from several
// goroutines at once.
func Examine(r Run) Findings {
	if r.Scheme == eventlog.SchemeSlot {
		f := Findings{Order: forensics.AnalyzeCommitOrder(r.Events, true)}
		scan := forensics.ScanPositions(forensics.CommitPositions(r.Events))
		sf := scan.SlotFindings()
		f.Slots, f.Duplicates, f.Gaps = &sf, scan.Duplicates, scan.Gaps
		return f
	}
	bySeq := len(r.Events) > 0 && !slices.ContainsFunc(r.Events, func(e forensics.CommitEvent) bool { return e.Seq == 0 })
	f := Findings{Order: forensics.AnalyzeCommitOrder(r.Events, bySeq)}
	if bySeq {
		f.Gaps, f.Duplicates, f.Unpositioned = forensics.DensityOf(r.Events)
	}
	return f
}

// Report is the attach-mode forensics of a whole table: every run's
// findings in run id order, their totals and the windows of all events.
type Report struct {
	Info  Info
	Runs  []RunFindings
	Total forensics.CommitOrder
	// Windows are the mint-to-commit windows per event type over all runs.
	Windows map[eventlog.Type]forensics.Window
}

// RunFindings is one run's line of a Report.
type RunFindings struct {
	RunID string
	Findings
}

// Forensics reads the table and examines every run on workers goroutines
// (Examine, plus each run's mint-to-commit windows): what `stormctl
// forensics --pg-url` reports. It stops when ctx ends.
func Forensics(ctx context.Context, o Options, workers int) (Report, error) {
	info, t, err := read(ctx, o)
	if err != nil {
		return Report{Info: info}, err
	}
	rep, err := t.examine(ctx, max(workers, 1))
	info.Layout.ULIDs = t.minted
	info.Layout.explain(info.Scheme)
	rep.Info = info
	return rep, err
}

// examine is Forensics once the rows are read; it counts the ULIDs in
// t.minted.
func (t *collected) examine(ctx context.Context, workers int) (Report, error) {
	var rep Report
	ws := newWindowSlots(t)
	scratch := make([][][]float64, workers)
	g := t.group()
	err := eachParallel(ctx, g, workers, func(w int, r Run) Findings {
		scratch[w] = ws.add(scratch[w], r.Events)
		return Examine(r)
	}, func(id string, f Findings) error {
		f.Order.AddTo(&rep.Total)
		rep.Runs = append(rep.Runs, RunFindings{RunID: id, Findings: f})
		return ctx.Err()
	})
	t.minted = int(g.minted.Load())
	if err != nil {
		return rep, err
	}
	rep.Windows = ws.windows(workers)
	return rep, nil
}

// readBuffer is how much of what the server sent one read from the socket
// may take: the server sends 8 KiB at a time, and while the forensics decode
// a row the socket fills with many more.
const readBuffer = 256 << 10

// read connects, checks the table and collects every selected row.
func read(ctx context.Context, o Options) (Info, *collected, error) {
	if o.Schema == "" {
		o.Schema = "workflow"
	}
	info := Info{Table: pgx.Identifier{o.Schema, "workflow_events"}.Sanitize()}
	cfg, err := pgconnect.ParseConfig(o.URL)
	if err != nil {
		return info, nil, pgconnect.Error(o.URL, err)
	}
	cfg.BuildFrontend = func(r io.Reader, w io.Writer) *pgproto3.Frontend {
		return pgproto3.NewFrontend(bufio.NewReaderSize(r, readBuffer), w)
	}
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return info, nil, pgconnect.Error(o.URL, err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	tx, err := conn.BeginTx(ctx, pgx.TxOptions{AccessMode: pgx.ReadOnly})
	if err != nil {
		return info, nil, eventlog.Unavailable("begin a read-only transaction", err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx))

	var cols []string
	rows, err := tx.Query(ctx, `SELECT column_name FROM information_schema.columns
		WHERE table_schema = $1 AND table_name = 'workflow_events'`, o.Schema)
	if err != nil {
		return info, nil, eventlog.Unavailable("read the table's columns", err)
	}
	cols, err = pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return info, nil, eventlog.Unavailable("read the table's columns", err)
	}
	if len(cols) == 0 {
		return info, nil, fmt.Errorf("%s: %w (is --schema right? the Workflow DevKit default is \"workflow\")", info.Table, prodlog.ErrNoTable)
	}
	for _, need := range []string{"id", "run_id", "type"} {
		if !slices.Contains(cols, need) {
			return info, nil, fmt.Errorf("%s has no %q column: not a Workflow DevKit events table", info.Table, need)
		}
	}
	info.HasSeq = slices.Contains(cols, "seq")
	var track string
	if err := tx.QueryRow(ctx, "SHOW track_commit_timestamp").Scan(&track); err != nil {
		return info, nil, eventlog.Unavailable("read track_commit_timestamp", err)
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
	q := fmt.Sprintf(`SELECT run_id, id, type, %s, %s, xmin FROM %s WHERE ($1 = '' OR run_id = $1)`, seq, commit, info.Table)
	args := []any{o.RunID}
	if slices.Contains(cols, "state") {
		// stormctl's own postgres world keeps slot reservations as rows
		// in state 'reserved' until they commit: not events yet.
		q += " AND state IS DISTINCT FROM 'reserved'"
	}
	if !o.Since.IsZero() {
		if !slices.Contains(cols, "created_at") {
			return info, nil, fmt.Errorf("%s has no created_at column for --since", info.Table)
		}
		q += " AND created_at >= $2"
		args = append(args, o.Since)
	}
	t := newCollected(info.HasSeq)
	rows, err = tx.Query(ctx, q, args...)
	if err != nil {
		return info, nil, eventlog.Unavailable("read "+info.Table, err)
	}
	if err := t.collect(rows); err != nil {
		if errors.Is(err, errConnection) {
			return info, nil, eventlog.Unavailable("read "+info.Table, err)
		}
		return info, nil, fmt.Errorf("read %s: %w", info.Table, err)
	}
	info.Scheme, info.Layout = t.layout()
	return info, t, nil
}

// textOIDs are the column types whose value, in either format, is the
// string's bytes; any other type is decoded by pgx as before.
var textOIDs = map[uint32]bool{pgtype.TextOID: true, pgtype.VarcharOID: true, pgtype.BPCharOID: true, pgtype.NameOID: true}

// collect reads rows (run_id, id, type, seq, commit time, xmin): the three
// strings from the raw row; seq, the commit time and xmin straight from
// their binary encodings when the server sent int8, timestamptz and xid in
// binary (what pgx asks for), else through pgx's own scan plans for their
// types and formats, so each value is exactly what scanning into *int64,
// *time.Time and *uint32 gives. (xmin is read as an xid, not cast to text in
// the server: the cast doubled the server's time.)
func (t *collected) collect(rows pgx.Rows) error {
	defer rows.Close()
	fds := rows.FieldDescriptions()
	if len(fds) != 6 {
		return fmt.Errorf("want 6 columns, got %d", len(fds))
	}
	m := rows.Conn().TypeMap()
	sentBinary := func(col int, oid uint32) bool {
		return fds[col].Format == pgx.BinaryFormatCode && fds[col].DataTypeOID == oid
	}
	seqBin, atBin, xminBin := sentBinary(3, pgtype.Int8OID), sentBinary(4, pgtype.TimestamptzOID), sentBinary(5, pgtype.XIDOID)
	var seq pgtype.Int8
	var at pgtype.Timestamptz
	var xmin pgtype.Uint32
	seqPlan := m.PlanScan(fds[3].DataTypeOID, fds[3].Format, &seq)
	atPlan := m.PlanScan(fds[4].DataTypeOID, fds[4].Format, &at)
	xminPlan := m.PlanScan(fds[5].DataTypeOID, fds[5].Format, &xmin)
	// A string column of a non-text type goes through pgx's plan for it.
	var plans [3]pgtype.ScanPlan
	for i := range plans {
		if !textOIDs[fds[i].DataTypeOID] {
			plans[i] = m.PlanScan(fds[i].DataTypeOID, fds[i].Format, new(string))
		}
	}
	field := func(v [][]byte, col int) ([]byte, error) {
		if plans[col] != nil {
			var s string
			if err := plans[col].Scan(v[col], &s); err != nil {
				return nil, fmt.Errorf("column %s: %w", fds[col].Name, err)
			}
			return []byte(s), nil
		}
		if v[col] == nil {
			return nil, fmt.Errorf("column %s: NULL where a string is needed", fds[col].Name)
		}
		return v[col], nil
	}
	colErr := func(col int, err error) error { return fmt.Errorf("column %s: %w", fds[col].Name, err) }
	for rows.Next() {
		v := rows.RawValues()
		var f [3][]byte
		for col := range f {
			var err error
			if f[col], err = field(v, col); err != nil {
				return err
			}
		}
		var row struct {
			seq, commit int64
			tie         uint32
		}
		switch {
		case v[3] == nil:
		case seqBin && len(v[3]) == 8:
			row.seq = int64(be.Uint64(v[3]))
		default:
			if err := seqPlan.Scan(v[3], &seq); err != nil {
				return colErr(3, err)
			}
			row.seq = seq.Int64
		}
		switch {
		case v[4] == nil:
			row.commit = noCommit
		case atBin && len(v[4]) == 8:
			row.commit = int64(be.Uint64(v[4]))
			if row.commit == math.MaxInt64 || row.commit == math.MinInt64 {
				return colErr(4, errInfinite)
			}
		default:
			if err := atPlan.Scan(v[4], &at); err != nil {
				return colErr(4, err)
			}
			if at.InfinityModifier != pgtype.Finite {
				return colErr(4, errInfinite)
			}
			row.commit = commitMicros(at.Time)
		}
		switch {
		case xminBin && len(v[5]) == 4:
			row.tie = be.Uint32(v[5])
		default:
			if err := xminPlan.Scan(v[5], &xmin); err != nil {
				return colErr(5, err)
			}
			row.tie = xmin.Uint32
		}
		if err := t.add(f[0], f[1], f[2], row.seq, row.commit, row.tie); err != nil {
			return err
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("%w: %w", errConnection, err)
	}
	return nil
}

// errConnection marks a read that failed in the connection or the server,
// not in the rows it returned.
var errConnection = errors.New("the read failed")

var errInfinite = errors.New("an infinite commit time")

// be decodes PostgreSQL's binary encodings (network byte order).
var be = binary.BigEndian

// mintTime is the time encoded in a ULID-based event id ("wevt_…"), or zero
// (for a slot id too, though its digits would parse as a ULID of 1970).
func mintTime(id string) time.Time {
	if _, ok := eventlog.SlotPosition(id); ok {
		return time.Time{}
	}
	t, err := eventlog.MintTime(id)
	if err != nil {
		return time.Time{}
	}
	return t
}
