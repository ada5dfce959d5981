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
	"strings"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/oklog/ulid/v2"
	"github.com/stormctl/stormctl/eventlog"
	"github.com/stormctl/stormctl/forensics"
	"golang.org/x/sync/errgroup"
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

// Read connects, checks the table and streams every selected run to fn, in
// run id order. Connection and authentication failures wrap
// eventlog.ErrUnavailable; a missing table is ErrNoTable.
func Read(ctx context.Context, o Options, fn func(Run) error) (Info, error) {
	info, t, err := read(ctx, o)
	if err != nil {
		return info, err
	}
	return info, t.each(fn)
}

// Analyze reads like Read, runs analyze on every run from up to workers
// goroutines at once, and hands each run's result to collect from one
// goroutine, in run id order, while later runs are still being analyzed.
// analyze is told which worker (0 … workers-1) calls it, so that it can keep
// state of its own per worker without locks; the run's events it is given
// live in that worker's buffer and are valid only during the call. The table
// is read in one pass either way; once it is, the per-run work (gathering a
// run's events, sorts and merges of O(n log n)) spreads over the cores.
func Analyze[R any](ctx context.Context, o Options, workers int, analyze func(worker int, r Run) R, collect func(runID string, r R) error) (Info, error) {
	info, t, err := read(ctx, o)
	if err != nil {
		return info, err
	}
	return info, eachParallel(ctx, t.group(), max(workers, 1), analyze, collect)
}

// Findings are what the forensics find in one run.
type Findings struct {
	// Order compares commit order with seq order when every event has a
	// seq, else with id order.
	Order forensics.CommitOrder
	// Gaps, Duplicates and Unpositioned are the density of a positioned
	// run's seq (zero for a run read by id).
	Gaps, Duplicates, Unpositioned int
}

// Examine runs the forensics of one run; it is safe to call from several
// goroutines at once.
func Examine(r Run) Findings {
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
// (Examine, plus each run's windows, gathered per worker and merged at the
// end): what `stormctl forensics --pg-url` reports. It stops when ctx ends.
func Forensics(ctx context.Context, o Options, workers int) (Report, error) {
	workers = max(workers, 1)
	windows := make([]forensics.WindowSet, workers)
	var rep Report
	info, err := Analyze(ctx, o, workers, func(w int, r Run) Findings {
		windows[w].Add(r.Events)
		return Examine(r)
	}, func(id string, f Findings) error {
		f.Order.AddTo(&rep.Total)
		rep.Runs = append(rep.Runs, RunFindings{RunID: id, Findings: f})
		return ctx.Err()
	})
	rep.Info = info
	if err != nil {
		return rep, err
	}
	for i := 1; i < workers; i++ {
		windows[0].Merge(&windows[i])
	}
	rep.Windows = windows[0].Windows()
	return rep, nil
}

// read connects, checks the table and collects every selected row.
func read(ctx context.Context, o Options) (Info, *collected, error) {
	if o.Schema == "" {
		o.Schema = "workflow"
	}
	info := Info{Table: pgx.Identifier{o.Schema, "workflow_events"}.Sanitize()}
	conn, err := pgx.Connect(ctx, o.URL)
	if err != nil {
		return info, nil, eventlog.Unavailable("connect to "+redact(o.URL), rootCause(err))
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
		return info, nil, fmt.Errorf("%s: %w (is --schema right? the Workflow DevKit default is \"workflow\")", info.Table, ErrNoTable)
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
	if !o.Since.IsZero() {
		if !slices.Contains(cols, "created_at") {
			return info, nil, fmt.Errorf("%s has no created_at column for --since", info.Table)
		}
		q += " AND created_at >= $2"
		args = append(args, o.Since)
	}
	t := &collected{}
	if o.RunID == "" && o.Since.IsZero() {
		t.reserve(ctx, tx, o.Schema)
	}
	rows, err = tx.Query(ctx, q, args...)
	if err != nil {
		return info, nil, eventlog.Unavailable("read "+info.Table, err)
	}
	if err := t.collect(rows); err != nil {
		return info, nil, eventlog.Unavailable("read "+info.Table, err)
	}
	return info, t, nil
}

// collected holds every row read, in arrival order, with the run each
// belongs to. Run ids and event types are interned and event ids copied into
// large shared blocks, so that a million events are a few thousand objects
// for the garbage collector rather than millions.
type collected struct {
	events []forensics.CommitEvent
	runOf  []int32 // index into runs, per event
	runs   []string
	runIdx map[string]int32
	types  map[string]eventlog.Type
	ids    stringBlocks
	runIDs stringBlocks
}

// textOIDs are the column types whose value, in either format, is the
// string's bytes; any other type is decoded by pgx as before.
var textOIDs = map[uint32]bool{pgtype.TextOID: true, pgtype.VarcharOID: true, pgtype.BPCharOID: true, pgtype.NameOID: true}

// collect reads rows (run_id, id, type, seq, commit time, xmin): the three
// strings from the raw row, the other columns through pgx's own scan plans
// for their types and formats, so each value decodes to exactly what
// scanning into *int64, *time.Time and *uint32 gives. (xmin is read as an
// xid, not cast to text in the server: the cast doubled the server's time.)
func (t *collected) collect(rows pgx.Rows) error {
	defer rows.Close()
	t.runIdx, t.types = map[string]int32{}, map[string]eventlog.Type{}
	fds := rows.FieldDescriptions()
	if len(fds) != 6 {
		return fmt.Errorf("want 6 columns, got %d", len(fds))
	}
	m := rows.Conn().TypeMap()
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
	for rows.Next() {
		v := rows.RawValues()
		var f [3][]byte
		for col := range f {
			var err error
			if f[col], err = field(v, col); err != nil {
				return err
			}
		}
		run, id, typ := t.run(f[0]), t.ids.copy(f[1]), t.typeOf(f[2])
		if err := seqPlan.Scan(v[3], &seq); err != nil {
			return fmt.Errorf("column %s: %w", fds[3].Name, err)
		}
		if err := atPlan.Scan(v[4], &at); err != nil {
			return fmt.Errorf("column %s: %w", fds[4].Name, err)
		}
		e := forensics.CommitEvent{ID: id, Type: typ, MintedAt: mintTime(id)}
		if seq.Valid {
			e.Seq = seq.Int64
		}
		if at.Valid {
			if at.InfinityModifier != pgtype.Finite {
				return fmt.Errorf("column %s: an infinite commit time", fds[4].Name)
			}
			e.CommitAt = at.Time
		}
		if err := xminPlan.Scan(v[5], &xmin); err != nil {
			return fmt.Errorf("column xmin: %w", err)
		}
		e.Tie = uint64(xmin.Uint32)
		t.events = append(t.events, e)
		t.runOf = append(t.runOf, run)
	}
	return rows.Err()
}

// maxReserve bounds the events reserved from the table's row estimate.
const maxReserve = 50_000_000

// reserve sizes the event arrays from the planner's row estimate of a whole
// table read (pg_class.reltuples; unknown before the table's first VACUUM or
// ANALYZE), so that reading a large table does not copy its events over and
// over as the arrays grow. Reserved memory that is never filled is never
// touched. The estimate is read under a savepoint: should it fail, the
// transaction goes on as if it had not been asked.
func (t *collected) reserve(ctx context.Context, tx pgx.Tx, schema string) {
	sp, err := tx.Begin(ctx)
	if err != nil {
		return
	}
	defer sp.Rollback(context.WithoutCancel(ctx))
	var n float64
	err = sp.QueryRow(ctx, `SELECT c.reltuples FROM pg_class c JOIN pg_namespace s ON s.oid = c.relnamespace
		WHERE s.nspname = $1 AND c.relname = 'workflow_events'`, schema).Scan(&n)
	if err != nil || n <= 0 {
		return
	}
	n = min(n*1.05+1024, maxReserve)
	t.events = make([]forensics.CommitEvent, 0, int(n))
	t.runOf = make([]int32, 0, int(n))
}

// run returns the index of the run whose id is b, adding it if new.
func (t *collected) run(b []byte) int32 {
	if i, ok := t.runIdx[string(b)]; ok {
		return i
	}
	i := int32(len(t.runs))
	id := t.runIDs.copy(b) // side by side in memory: lookups stay in cache
	t.runs = append(t.runs, id)
	t.runIdx[id] = i
	return i
}

// typeOf interns an event type.
func (t *collected) typeOf(b []byte) eventlog.Type {
	if typ, ok := t.types[string(b)]; ok {
		return typ
	}
	typ := eventlog.Type(b)
	t.types[string(typ)] = typ
	return typ
}

// grouped indexes the rows by run without moving them: run r's events are
// evs[perm[start[r]]], …, evs[perm[start[r+1]-1]], in arrival order, and
// order lists the runs in run id order.
type grouped struct {
	runs  []string
	evs   []forensics.CommitEvent
	perm  []int32
	start []int
	order []int32
}

// gather copies the i-th run in run id order into buf (reused) and returns
// its id and events.
func (g *grouped) gather(i int, buf []forensics.CommitEvent) (string, []forensics.CommitEvent) {
	r := g.order[i]
	buf = buf[:0]
	for _, j := range g.perm[g.start[r]:g.start[r+1]] {
		buf = append(buf, g.evs[j])
	}
	return g.runs[r], buf
}

// group indexes the events by run (a stable counting sort of their
// positions: 4 bytes per event, where moving the events themselves cost a
// random access of ~100 bytes each on one core) and orders the runs by id.
func (t *collected) group() *grouped {
	start := make([]int, len(t.runs)+1)
	for _, r := range t.runOf {
		start[r+1]++
	}
	for i := 1; i < len(start); i++ {
		start[i] += start[i-1]
	}
	perm, next := make([]int32, len(t.runOf)), slices.Clone(start[:len(t.runs)])
	for i, r := range t.runOf {
		perm[next[r]] = int32(i)
		next[r]++
	}
	order := make([]int32, len(t.runs))
	for i := range order {
		order[i] = int32(i)
	}
	slices.SortFunc(order, func(a, b int32) int { return strings.Compare(t.runs[a], t.runs[b]) })
	g := &grouped{runs: t.runs, evs: t.events, perm: perm, start: start, order: order}
	*t = collected{}
	return g
}

// each hands fn every run in run id order, each in a slice of its own whose
// capacity ends with the run (appending to it copies).
func (t *collected) each(fn func(Run) error) error {
	g := t.group()
	for i := range g.order {
		id, evs := g.gather(i, nil)
		if err := fn(Run{ID: id, Events: evs[:len(evs):len(evs)]}); err != nil {
			return err
		}
	}
	return nil
}

// chunkRuns is how many runs a worker of eachParallel takes at a time: few
// enough for the work to spread evenly, enough to keep the hand-offs rare.
const chunkRuns = 64

// eachParallel analyzes the runs from workers goroutines, a chunk of
// consecutive runs at a time, and collects them in run id order from the
// calling goroutine as their chunks finish.
func eachParallel[R any](ctx context.Context, gr *grouped, workers int, analyze func(int, Run) R, collect func(string, R) error) error {
	n := len(gr.order)
	results := make([]R, n)
	chunks := (n + chunkRuns - 1) / chunkRuns
	ready := make([]chan struct{}, chunks)
	for c := range ready {
		ready[c] = make(chan struct{})
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var next atomic.Int64
	var g errgroup.Group
	for w := range min(workers, chunks) {
		g.Go(func() error {
			var buf []forensics.CommitEvent
			for {
				c := int(next.Add(1) - 1)
				if c >= chunks || ctx.Err() != nil {
					return nil
				}
				for i := c * chunkRuns; i < min(n, (c+1)*chunkRuns); i++ {
					var r Run
					r.ID, buf = gr.gather(i, buf)
					r.Events = buf
					results[i] = analyze(w, r)
				}
				close(ready[c])
			}
		})
	}
	err := func() error {
		for c := range chunks {
			select {
			case <-ready[c]:
			case <-ctx.Done():
				return ctx.Err()
			}
			for i := c * chunkRuns; i < min(n, (c+1)*chunkRuns); i++ {
				if err := collect(gr.runs[gr.order[i]], results[i]); err != nil {
					return err
				}
				var zero R
				results[i] = zero // collected: let it go
			}
		}
		return nil
	}()
	cancel() // a failed collect stops the workers at their next chunk
	return errors.Join(err, g.Wait())
}

// stringBlocks copies short strings into shared 64 KiB blocks: one
// allocation per block instead of one per string. A block's bytes never
// change once written, so the strings stay valid.
type stringBlocks struct {
	b strings.Builder
}

const blockSize = 64 << 10

func (s *stringBlocks) copy(p []byte) string {
	if s.b.Cap()-s.b.Len() < len(p) {
		s.b = strings.Builder{}
		s.b.Grow(max(blockSize, len(p)))
	}
	off := s.b.Len()
	s.b.Write(p)
	return s.b.String()[off:]
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
