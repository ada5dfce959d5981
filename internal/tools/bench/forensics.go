package bench

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/stormctl/stormctl/forensics"
	"github.com/stormctl/stormctl/internal/eventlog"
	"github.com/stormctl/stormctl/internal/eventlog/pgconnect"
	"github.com/stormctl/stormctl/internal/prodlog/pgattach"
)

// Forensics runs commit-order forensics over <schema>.workflow_events of the
// server at url and writes a JSON report to out whose "totals" object holds
// runs, events, displaced, inverted_pairs and without_commit_ts: the shape of
// `stormctl forensics --pg-url URL --format json`.
type Forensics func(ctx context.Context, url, schema string, out io.Writer) error

// Totals are the forensics' totals over the whole table.
type Totals struct {
	Runs            int `json:"runs"`
	Events          int `json:"events"`
	Displaced       int `json:"displaced"`
	InvertedPairs   int `json:"inverted_pairs"`
	WithoutCommitTS int `json:"without_commit_ts"`
}

// AttachForensics is the attach-mode forensics of `stormctl forensics
// --pg-url` as a library call (pgattach.Forensics on every core), reporting
// the totals and windows.
func AttachForensics(ctx context.Context, url, schema string, out io.Writer) error {
	rep, err := pgattach.Forensics(ctx, pgattach.Options{URL: url, Schema: schema}, runtime.GOMAXPROCS(0))
	if err != nil {
		return err
	}
	t := rep.Total
	return json.NewEncoder(out).Encode(struct {
		Totals  Totals                             `json:"totals"`
		Windows map[eventlog.Type]forensics.Window `json:"windows"`
	}{Totals{Runs: len(rep.Runs), Events: t.Events, Displaced: t.Displaced, InvertedPairs: t.InvertedPairs, WithoutCommitTS: t.WithoutCommitTS}, rep.Windows})
}

// ForensicsResult is the outcome of the forensics benchmark.
type ForensicsResult struct {
	Config ForensicsConfig `json:"config"`
	Server string          `json:"server_version"`
	Load   LoadStats       `json:"load"`
	// Rows is what the bare read returned; Totals what the forensics
	// reported (library side, last round).
	Rows   int64  `json:"rows"`
	Totals Totals `json:"totals"`
	// Sides are (a) the bare read, (b) the library forensics and, when
	// measured, (c) the command.
	Sides []ForensicsSide `json:"sides"`
}

// ForensicsSide is one side's measurements.
type ForensicsSide struct {
	Name string `json:"name"`
	// Rounds are the rounds' wall times, connection included.
	Rounds []time.Duration `json:"rounds_ns"`
	Median time.Duration   `json:"median_ns"`
	// Ratio is the median of the rounds' time over the bare read's (1 for
	// the bare read itself).
	Ratio float64 `json:"ratio"`
	// PeakHeap is the largest in-use Go heap sampled while the side ran,
	// over the rounds; PeakRSS the largest resident set (VmHWM, reset before
	// each round; 0 where /proc cannot tell).
	PeakHeap uint64 `json:"peak_heap_bytes"`
	PeakRSS  uint64 `json:"peak_rss_bytes"`
}

// ForensicsDeps are what RunForensics needs from its caller.
type ForensicsDeps struct {
	// URL is the server; the benchmark creates a schema of its own there and
	// drops it at the end.
	URL string
	// Library is side (b) (nil: AttachForensics).
	Library Forensics
	// Command, when set, is side (c): the forensics command as shipped.
	Command Forensics
	// Progress receives a line per phase and round (nil: none).
	Progress io.Writer
}

// Side names of the forensics benchmark.
const (
	SideBare    = "(a) bare SELECT id, pg_xact_commit_timestamp(xmin), read through pgx"
	SideLibrary = "(b) attach-mode forensics: pgattach.Forensics (one read, runs examined on every core)"
	SideCommand = "(c) stormctl forensics --pg-url --format json, output discarded"
)

// benchSchemaPrefix starts the schema the forensics benchmark creates.
const benchSchemaPrefix = "stormctl_bench_"

// RunForensics loads Events events over Runs runs into a workflow_events
// table of a new schema, then times, over Rounds rounds in rotating order,
// the bare commit-time read and the forensics of the same rows, and drops
// the schema.
func RunForensics(ctx context.Context, cfg ForensicsConfig, deps ForensicsDeps) (res *ForensicsResult, err error) {
	cfg = cfg.Defaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	progress := deps.Progress
	if progress == nil {
		progress = io.Discard
	}
	pool, err := poolOf(ctx, deps.URL, cfg.Loaders+1)
	if err != nil {
		return nil, err
	}
	defer pool.Close()
	res = &ForensicsResult{Config: cfg}
	if err := pool.QueryRow(ctx, "SHOW server_version").Scan(&res.Server); err != nil {
		return nil, eventlog.Unavailable("bench: connect", err)
	}
	var tok [6]byte
	if _, err := rand.Read(tok[:]); err != nil {
		return nil, err
	}
	schema := benchSchemaPrefix + hex.EncodeToString(tok[:])
	tbl := &table{schema: schema, marker: "stormctl bench " + hex.EncodeToString(tok[:])}
	if err := tbl.create(ctx, pool); err != nil {
		return nil, err
	}
	defer func() {
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
		defer cancel()
		err = errors.Join(err, tbl.drop(dctx, pool))
	}()
	fmt.Fprintf(progress, "bench forensics: loading %d events over %d runs into %s (%d per transaction, %d loaders)\n",
		cfg.Events, cfg.Runs, tbl.name(), cfg.Batch, cfg.Loaders)
	if res.Load, err = tbl.load(ctx, pool, cfg); err != nil {
		return res, err
	}
	fmt.Fprintf(progress, "bench forensics: loaded in %.1f s (%d transactions, %d pairs committed out of id order on purpose); vacuum and a warm-up read\n",
		res.Load.Seconds, res.Load.Transactions, res.Load.Swapped)
	if _, err := pool.Exec(ctx, "VACUUM (ANALYZE) "+tbl.name()); err != nil {
		return res, fmt.Errorf("bench: vacuum: %w", err)
	}
	if _, err := bareRead(ctx, deps.URL, tbl.name()); err != nil {
		return res, err
	}

	library := deps.Library
	if library == nil {
		library = AttachForensics
	}
	// A side's run is what is timed; its check (reading the report back)
	// runs after the clock stops.
	type side struct {
		ForensicsSide
		run    func() (string, error)
		check  func(out string) error
		ratios []float64
	}
	sides := []*side{{ForensicsSide: ForensicsSide{Name: SideBare}}}
	sides[0].run = func() (string, error) {
		n, err := bareRead(ctx, deps.URL, tbl.name())
		res.Rows = n
		return "", err
	}
	sides[0].check = func(string) error { return nil }
	forensicsSide := func(name string, f Forensics, totals bool) *side {
		s := &side{ForensicsSide: ForensicsSide{Name: name}}
		s.run = func() (string, error) {
			var out strings.Builder
			err := f(ctx, deps.URL, schema, &out)
			return out.String(), err
		}
		s.check = func(out string) error {
			var rep struct {
				Totals Totals `json:"totals"`
			}
			if err := json.Unmarshal([]byte(out), &rep); err != nil {
				return fmt.Errorf("bench: the forensics report: %w", err)
			}
			if totals {
				res.Totals = rep.Totals
			}
			return nil
		}
		return s
	}
	sides = append(sides, forensicsSide(SideLibrary, library, true))
	if deps.Command != nil {
		sides = append(sides, forensicsSide(SideCommand, deps.Command, false))
	}
	for round := range cfg.Rounds {
		times := make([]time.Duration, len(sides))
		for k := range sides {
			i := (k + round) % len(sides) // rotate which side goes first
			s := sides[i]
			settle()
			resetPeakRSS()
			heap := startHeapSampler()
			start := time.Now()
			out, err := s.run()
			times[i] = time.Since(start)
			peak, rss := heap.stop(), peakRSS()
			if err == nil {
				err = s.check(out)
			}
			if err != nil {
				return res, err
			}
			s.Rounds = append(s.Rounds, times[i])
			s.PeakHeap, s.PeakRSS = max(s.PeakHeap, peak), max(s.PeakRSS, rss)
		}
		line := fmt.Sprintf("bench forensics: round %d/%d:", round+1, cfg.Rounds)
		for i, s := range sides {
			s.ratios = append(s.ratios, ratio(times[i].Seconds(), times[0].Seconds()))
			line += fmt.Sprintf(" %s %s (x%.2f, heap %s);", s.Name[:3], times[i].Round(time.Millisecond), s.ratios[round], MiB(s.PeakHeap))
		}
		fmt.Fprintln(progress, line)
	}
	for _, s := range sides {
		s.Median, s.Ratio = medianDuration(s.Rounds), median(s.ratios)
		res.Sides = append(res.Sides, s.ForensicsSide)
	}
	return res, nil
}

// bareRead is side (a): every row's id and commit time, read to completion
// through pgx on a connection of its own.
func bareRead(ctx context.Context, url, table string) (int64, error) {
	conn, err := pgconnect.Connect(ctx, url)
	if err != nil {
		return 0, fmt.Errorf("bench: %w", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	rows, err := conn.Query(ctx, "SELECT id, pg_xact_commit_timestamp(xmin) FROM "+table)
	if err != nil {
		return 0, fmt.Errorf("bench: bare read: %w", err)
	}
	var n int64
	var id string
	var at *time.Time
	_, err = pgx.ForEachRow(rows, []any{&id, &at}, func() error { n++; return nil })
	if err != nil {
		return n, fmt.Errorf("bench: bare read: %w", err)
	}
	return n, nil
}

// settle collects garbage and returns freed memory to the OS, so that each
// measured side starts from the same heap.
func settle() {
	debug.FreeOSMemory() // a forced collection, then the freed memory returned
}

func medianDuration(ds []time.Duration) time.Duration {
	xs := make([]float64, len(ds))
	for i, d := range ds {
		xs[i] = float64(d)
	}
	return time.Duration(median(xs))
}

// MiB renders a byte count in MiB ("n/a" for 0).
func MiB(b uint64) string {
	if b == 0 {
		return "n/a"
	}
	return fmt.Sprintf("%.0f MiB", float64(b)/(1<<20))
}
