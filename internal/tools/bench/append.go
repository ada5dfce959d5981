package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"golang.org/x/sync/errgroup"

	"github.com/stormctl/stormctl/internal/base/leftover"
	"github.com/stormctl/stormctl/internal/eventlog"
	"github.com/stormctl/stormctl/worlds/postgres"
)

// AppendResult is the outcome of the append benchmark.
type AppendResult struct {
	Config  AppendConfig `json:"config"`
	Server  string       `json:"server_version"`
	Pgbench string       `json:"pgbench"`
	Rows    []AppendRow  `json:"rows"`
}

// AppendRow is one row: a script on a placement with a number of clients.
type AppendRow struct {
	Script    Script    `json:"script"`
	Placement Placement `json:"placement"`
	Clients   int       `json:"clients"`
	Pgbench   Side      `json:"pgbench"`
	Stormctl  Side      `json:"stormctl"`
	// Ratio is stormctl/pgbench in committed events per second (for the
	// one-event scripts, TPS), the median of the per-round ratios.
	Ratio float64 `json:"ratio"`
}

// Name is the row's label, e.g. "seq counter+insert, HOT, 16 clients".
func (r AppendRow) Name() string {
	return fmt.Sprintf("%s, %s, c=%d", r.Script.Label(), placementLabel(r.Placement), r.Clients)
}

func placementLabel(p Placement) string {
	if p == PlaceHot {
		return "HOT"
	}
	return "SPREAD"
}

// Side is one side's measurements of a row.
type Side struct {
	// TPS is the median of the rounds' attempts per second (a fenced attempt
	// may be rejected and commit nothing).
	TPS float64 `json:"tps"`
	// EventsPerSec is the median of the rounds' committed events per second.
	EventsPerSec float64  `json:"events_per_sec"`
	Rounds       []Sample `json:"rounds"`
}

// Sample is one side's round.
type Sample struct {
	Attempts     int64   `json:"attempts"`
	Events       int64   `json:"events"`
	Seconds      float64 `json:"seconds"`
	TPS          float64 `json:"tps"`
	EventsPerSec float64 `json:"events_per_sec"`
}

func (s *Side) summarize() {
	tps, evs := make([]float64, len(s.Rounds)), make([]float64, len(s.Rounds))
	for i, r := range s.Rounds {
		tps[i], evs[i] = r.TPS, r.EventsPerSec
	}
	s.TPS, s.EventsPerSec = median(tps), median(evs)
}

// AppendDeps are what RunAppend needs from its caller.
type AppendDeps struct {
	// URL is the server both sides write to; its worlds' schemas are
	// created and dropped by the benchmark.
	URL string
	// Progress receives a line per measured round (nil: none).
	Progress io.Writer
}

// RunAppend runs the append benchmark: for every row, Rounds rounds in which
// pgbench (the world's SQL, see pgbenchScript) and the world's own write path
// each append for Duration, alternating which goes first. Each script and
// placement gets a fresh World (a schema of its own, dropped at the end).
func RunAppend(ctx context.Context, cfg AppendConfig, deps AppendDeps) (*AppendResult, error) {
	cfg = cfg.Defaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	bin, err := findPgbench(cfg.Pgbench)
	if err != nil {
		return nil, err
	}
	if slices.Contains(cfg.Scripts, ScriptFenced) {
		major, err := pgbenchMajor(ctx, bin)
		if err != nil {
			return nil, fmt.Errorf("bench: %w", err)
		}
		if major < minAsetMajor {
			return nil, fmt.Errorf("bench: %s is pgbench %d; the fenced script needs \\aset, pgbench %d or later (pass --pgbench PATH, or leave fenced out of --script)", bin, major, minAsetMajor)
		}
	}
	progress := deps.Progress
	if progress == nil {
		progress = io.Discard
	}
	dir, err := os.MkdirTemp("", "stormctl-bench-")
	if err == nil {
		// A killed benchmark cannot remove dir: the next stormctl does.
		err = leftover.Claim(dir, leftover.KindBench)
	}
	defer os.RemoveAll(dir)
	if err != nil {
		return nil, fmt.Errorf("bench: %w", err)
	}
	maxClients := slices.Max(cfg.Clients)
	admin, err := pgxpool.New(ctx, deps.URL)
	if err != nil {
		return nil, eventlog.Unavailable("bench: connect", err)
	}
	defer admin.Close()
	res := &AppendResult{Config: cfg, Pgbench: bin}
	if err := admin.QueryRow(ctx, "SHOW server_version").Scan(&res.Server); err != nil {
		return nil, eventlog.Unavailable("bench: connect", err)
	}
	pb := &pgbench{bin: bin, url: deps.URL, dir: dir}
	for _, s := range cfg.Scripts {
		for _, p := range cfg.Placements {
			rows, err := appendRows(ctx, cfg, deps.URL, pb, s, p, maxClients, progress)
			res.Rows = append(res.Rows, rows...)
			if err != nil {
				return res, err
			}
		}
	}
	return res, nil
}

// appendRows measures one script on one placement for every client count,
// in a World of its own.
func appendRows(ctx context.Context, cfg AppendConfig, url string, pb *pgbench, s Script, p Placement,
	maxClients int, progress io.Writer) (rows []AppendRow, err error) {
	w, err := postgres.Open(ctx, postgres.Config{URL: url, PoolSize: int32(maxClients)})
	if err != nil {
		return nil, err
	}
	defer func() { err = errors.Join(err, w.Close()) }()
	// A fenced attempt reads its run's counter through the World's pool,
	// so that stormctl holds as many connections as pgbench's clients
	// (a second pool of 17 doubled the backends on two cores); the event
	// counts before and after a side go through a small pool of their own.
	pool, err := poolOf(ctx, url, 2)
	if err != nil {
		return nil, err
	}
	defer pool.Close()
	nruns := 1
	if p == PlaceSpread {
		nruns = cfg.Runs
	}
	a := &appender{w: w, pool: pool, sql: postgres.WriteStatements(w.Schema()), script: s}
	if a.runs, err = createRuns(ctx, w, s, nruns); err != nil {
		return nil, err
	}
	script, vars, err := pgbenchScript(s, p, a.sql, cfg.Runs)
	if err != nil {
		return nil, err
	}
	secs := cfg.seconds()
	for _, clients := range cfg.Clients {
		row := AppendRow{Script: s, Placement: p, Clients: clients}
		var ratios []float64
		for round := range cfg.Rounds {
			var pg, st Sample
			sides := []func() error{
				func() (err error) { pg, err = a.pgbench(ctx, pb, script, vars, clients, secs); return err },
				func() (err error) { st, err = a.stormctl(ctx, clients, time.Duration(secs)*time.Second); return err },
			}
			if round%2 == 1 {
				slices.Reverse(sides)
			}
			for _, side := range sides {
				if err := pb.checkpoint(ctx, a.pool, progress); err != nil {
					return rows, fmt.Errorf("bench: %s, round %d: %w", row.Name(), round+1, err)
				}
				if err := side(); err != nil {
					return rows, fmt.Errorf("bench: %s, round %d: %w", row.Name(), round+1, err)
				}
			}
			row.Pgbench.Rounds = append(row.Pgbench.Rounds, pg)
			row.Stormctl.Rounds = append(row.Stormctl.Rounds, st)
			ratios = append(ratios, ratio(st.EventsPerSec, pg.EventsPerSec))
			fmt.Fprintf(progress, "bench append: %-40s round %d/%d: pgbench %8.0f TPS %8.0f ev/s | stormctl %8.0f TPS %8.0f ev/s | ratio %.2f\n",
				row.Name(), round+1, cfg.Rounds, pg.TPS, pg.EventsPerSec, st.TPS, st.EventsPerSec, ratios[len(ratios)-1])
		}
		row.Pgbench.summarize()
		row.Stormctl.summarize()
		row.Ratio = median(ratios)
		rows = append(rows, row)
	}
	return rows, nil
}

func poolOf(ctx context.Context, url string, size int) (*pgxpool.Pool, error) {
	pc, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("bench: connection string: %w", err)
	}
	pc.MaxConns = int32(size)
	pool, err := pgxpool.NewWithConfig(ctx, pc)
	if err != nil {
		return nil, eventlog.Unavailable("bench: connect", err)
	}
	return pool, nil
}

// createRuns creates runs "1" … "n" (the names pgbench's integer :run
// spells), under the script's scheme.
func createRuns(ctx context.Context, w *postgres.World, s Script, n int) ([]string, error) {
	scheme := eventlog.SchemeSeq
	if s == ScriptLegacy {
		scheme = eventlog.SchemeULID
	}
	runs := make([]string, n)
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(8)
	for i := range runs {
		runs[i] = strconv.Itoa(i + 1)
		g.Go(func() error { return w.CreateRun(gctx, eventlog.Run{ID: runs[i], Scheme: scheme}) })
	}
	return runs, g.Wait()
}

// appender is stormctl's side of one script and placement.
type appender struct {
	w      *postgres.World
	pool   *pgxpool.Pool
	sql    postgres.WriteSQL
	script Script
	runs   []string
	corr   atomic.Int64 // numbers the drafts' correlation ids
}

// pgbench measures pgbench's side: its TPS, and the committed events it
// added to the table over its measured time.
func (a *appender) pgbench(ctx context.Context, pb *pgbench, script string, vars map[string]string, clients, secs int) (Sample, error) {
	before, err := a.count(ctx)
	if err != nil {
		return Sample{}, err
	}
	r, err := pb.run(ctx, script, vars, clients, secs)
	if err != nil {
		return Sample{}, err
	}
	after, err := a.count(ctx)
	if err != nil {
		return Sample{}, err
	}
	if r.Failed > 0 {
		return Sample{}, fmt.Errorf("pgbench reported %d failed transactions", r.Failed)
	}
	s := Sample{Attempts: r.Transactions, Events: after - before, TPS: r.TPS}
	if r.TPS > 0 {
		s.Seconds = float64(r.Transactions) / r.TPS
		s.EventsPerSec = float64(s.Events) / s.Seconds
	}
	return s, nil
}

// checkpoint starts a side from a fresh checkpoint (untimed), so that the
// server's own checkpoints (every 5 minutes or 1 GB of WAL, and a 7-minute
// benchmark writes both) do not land in one side's few seconds and slow its
// commits while the other side's run clean. A user not allowed to
// CHECKPOINT is told once and the rounds go on without.
func (pb *pgbench) checkpoint(ctx context.Context, pool *pgxpool.Pool, progress io.Writer) error {
	if pb.noCheckpoint {
		return nil
	}
	_, err := pool.Exec(ctx, "CHECKPOINT")
	if pe, ok := errors.AsType[*pgconn.PgError](err); ok && pe.Code == "42501" { // insufficient_privilege
		pb.noCheckpoint = true
		fmt.Fprintln(progress, "bench append: this user may not CHECKPOINT (a superuser may, or on PostgreSQL 15+ a member of pg_checkpoint): rounds may catch the server's own checkpoints")
		return nil
	}
	if err != nil {
		return fmt.Errorf("checkpoint: %w", err)
	}
	return nil
}

func (a *appender) count(ctx context.Context) (int64, error) {
	var n int64
	if err := a.pool.QueryRow(ctx, "SELECT count(*) FROM "+a.sql.Events).Scan(&n); err != nil {
		return 0, fmt.Errorf("count events: %w", err)
	}
	return n, nil
}

// stormctl measures the world's side: clients goroutines appending through
// the World for d, after one untimed attempt each (connections and prepared
// statements warm, as pgbench's figure excludes its connection time).
func (a *appender) stormctl(ctx context.Context, clients int, d time.Duration) (Sample, error) {
	rngs := make([]*rand.Rand, clients)
	for i := range rngs {
		rngs[i] = rand.New(rand.NewPCG(uint64(i)+1, uint64(time.Now().UnixNano())))
	}
	warm, wctx := errgroup.WithContext(ctx)
	for i := range clients {
		warm.Go(func() error { _, err := a.attempt(wctx, rngs[i]); return err })
	}
	if err := warm.Wait(); err != nil {
		return Sample{}, err
	}
	attempts, events := make([]int64, clients), make([]int64, clients)
	g, gctx := errgroup.WithContext(ctx)
	start := time.Now()
	deadline := start.Add(d)
	for i := range clients {
		g.Go(func() error {
			for time.Now().Before(deadline) {
				n, err := a.attempt(gctx, rngs[i])
				if err != nil {
					return err
				}
				attempts[i]++
				events[i] += int64(n)
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return Sample{}, err
	}
	s := Sample{Seconds: time.Since(start).Seconds()}
	for i := range clients {
		s.Attempts += attempts[i]
		s.Events += events[i]
	}
	s.TPS, s.EventsPerSec = float64(s.Attempts)/s.Seconds, float64(s.Events)/s.Seconds
	return s, nil
}

// attempt is one append through the World; it returns the events committed.
// A fenced attempt reads the run's counter first (the position a writer
// expects) and counts a rejection as an attempt that committed nothing.
func (a *appender) attempt(ctx context.Context, rng *rand.Rand) (int, error) {
	run := a.runs[0]
	if len(a.runs) > 1 {
		run = a.runs[rng.IntN(len(a.runs))]
	}
	d := make([]eventlog.Draft, a.script.Events())
	for k := range d {
		d[k] = eventlog.Draft{Type: eventlog.Type(draftType(a.script)),
			CorrelationID: "s" + strconv.FormatInt(a.corr.Add(1), 10), Payload: json.RawMessage(payload)}
	}
	if a.script != ScriptFenced {
		evs, err := a.w.Append(ctx, run, d)
		return len(evs), err
	}
	next, _, err := a.w.Counters(ctx, run)
	if err != nil {
		return 0, err
	}
	evs, err := a.w.AppendFenced(ctx, run, next, d)
	var fe *eventlog.FencedError
	if errors.As(err, &fe) {
		return 0, nil
	}
	return len(evs), err
}

func ratio(a, b float64) float64 {
	if b <= 0 {
		return 0
	}
	return a / b
}

// median returns the median of xs (0 for none).
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
