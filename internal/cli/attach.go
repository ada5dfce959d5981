package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"runtime"
	"time"

	"github.com/stormctl/stormctl/eventlog"
	"github.com/stormctl/stormctl/forensics"
	"github.com/stormctl/stormctl/pgattach"
	"github.com/stormctl/stormctl/reports/table"
	"github.com/stormctl/stormctl/worlds/postgres"
)

// attachCounts are what the attach report counts, per run and in total.
type attachCounts struct {
	Events          int `json:"events"`
	Displaced       int `json:"displaced"`
	InvertedPairs   int `json:"inverted_pairs"`
	WithoutCommitTS int `json:"without_commit_ts"`
	Gaps            int `json:"gaps"`
	Duplicates      int `json:"duplicates"`
	Unpositioned    int `json:"unpositioned"`
	// Slot holds a slot table's own counts; null for the other layouts.
	Slot *attachSlot `json:"slot,omitempty"`
}

// attachSlot are the slot counts of a run (or of all runs) of a spec-6/7
// slot table: its holes (the gaps: positions missing below the highest
// one present), its noop seals, and its seal races (positions holding a
// noop and another event, each also counted in duplicates).
type attachSlot struct {
	Holes     int `json:"holes"`
	Noops     int `json:"noops"`
	SealRaces int `json:"seal_races"`
}

// add adds o to s, saturating: positions in a foreign table can be huge.
func (s *attachSlot) add(o attachSlot) {
	s.Holes, s.Noops, s.SealRaces = addSat(s.Holes, o.Holes), addSat(s.Noops, o.Noops), addSat(s.SealRaces, o.SealRaces)
}

// addSat is a+b for non-negative counts, held at math.MaxInt.
func addSat(a, b int) int {
	if a > math.MaxInt-b {
		return math.MaxInt
	}
	return a + b
}

// attachRun is one run's line of the attach report.
type attachRun struct {
	RunID string `json:"run_id"`
	attachCounts
}

type attachTotals struct {
	Runs int `json:"runs"`
	attachCounts
}

type attachReport struct {
	Info    pgattach.Info                      `json:"source"`
	Runs    []attachRun                        `json:"runs"`
	Totals  attachTotals                       `json:"totals"`
	Pairs   []pairRow                          `json:"pairs"`
	Windows map[eventlog.Type]forensics.Window `json:"windows"`
	// maxPairs bounds the type-pair rows in a table.
	maxPairs int
}

// Table writes the layout line, the runs' table with its total, and the
// type pairs and windows.
func (rep *attachReport) Table(w io.Writer) error { return rep.write(w, table.Boxed) }

// Markdown writes what Table does as a paragraph and markdown tables.
func (rep *attachReport) Markdown(w io.Writer) error { return rep.write(w, table.Markdown) }

func runAttach(ctx context.Context, opts *ForensicsOptions) error {
	if err := postgres.ValidURL("--pg-url", opts.PGURL); err != nil {
		return &UsageError{Err: err}
	}
	o := pgattach.Options{URL: opts.PGURL, Schema: opts.Schema, RunID: opts.RunID}
	if opts.Since != "" {
		var err error
		if o.Since, err = time.Parse(time.RFC3339, opts.Since); err != nil {
			return usage("--since %q: want an RFC 3339 time such as 2026-07-29T00:00:00Z", opts.Since)
		}
	}
	found, err := pgattach.Forensics(ctx, o, runtime.GOMAXPROCS(0))
	switch {
	case errors.Is(err, context.Canceled):
		return ErrInterrupted
	case errors.Is(err, eventlog.ErrUnavailable):
		return &InfraError{Err: fmt.Errorf("%w (check --pg-url: host, port, user, password and database)", err)}
	case err != nil:
		return &UsageError{Err: err}
	}
	rep := attachReport{Info: found.Info, Windows: found.Windows, Runs: make([]attachRun, 0, len(found.Runs)), maxPairs: opts.Pairs}
	slot := found.Info.Scheme == eventlog.SchemeSlot
	if slot {
		rep.Totals.Slot = &attachSlot{}
	}
	for _, r := range found.Runs {
		co := r.Order
		line := attachRun{RunID: r.RunID, attachCounts: attachCounts{Events: co.Events, Displaced: co.Displaced, InvertedPairs: co.InvertedPairs,
			WithoutCommitTS: co.WithoutCommitTS, Gaps: r.Gaps, Duplicates: r.Duplicates, Unpositioned: r.Unpositioned}}
		if slot && r.Slots != nil {
			line.Slot = &attachSlot{Holes: r.Slots.FinalHoles, Noops: r.Slots.Seals, SealRaces: r.Slots.SealRaces}
			rep.Totals.Slot.add(*line.Slot)
		}
		rep.Runs = append(rep.Runs, line)
		rep.Totals.Runs++
		rep.Totals.Gaps = addSat(rep.Totals.Gaps, line.Gaps)
		rep.Totals.Duplicates += line.Duplicates
		rep.Totals.Unpositioned += line.Unpositioned
	}
	total := found.Total
	rep.Totals.Events, rep.Totals.Displaced = total.Events, total.Displaced
	rep.Totals.InvertedPairs, rep.Totals.WithoutCommitTS = total.InvertedPairs, total.WithoutCommitTS
	rep.Pairs = []pairRow{} // [] rather than null in JSON, for jq
	for _, p := range total.SortedPairs() {
		rep.Pairs = append(rep.Pairs, pairRow{p.TypePair, p.PairStat})
	}
	if rep.Windows == nil {
		rep.Windows = map[eventlog.Type]forensics.Window{}
	}
	if !rep.Info.CommitTimestamp {
		fmt.Fprintln(opts.IO.ErrOut, "note: track_commit_timestamp is off on this server: no commit times, so no commit-order forensics "+
			"(enable it with ALTER SYSTEM SET track_commit_timestamp = on and a restart; rows written before that stay without)")
	}
	return opts.Format.Print(opts.IO.Out, &rep)
}

// write writes the layout line, the runs' table with its total, and the
// type pairs and windows, every table in style.
func (rep *attachReport) write(w io.Writer, style table.Style) error {
	layout := "layout: " + rep.Info.Layout.Why + "\n"
	if style == table.Markdown {
		layout += "\n" // a paragraph, then the table
	}
	if _, err := io.WriteString(w, layout); err != nil {
		return err
	}
	// A slot table's gaps are its holes; it adds its noops and seal races.
	slot := rep.Info.Scheme == eventlog.SchemeSlot
	header := []string{"run", "events", "displaced", "inverted pairs", "no commit ts", "gaps", "dups"}
	if slot {
		header = []string{"run", "events", "displaced", "inverted pairs", "no commit ts", "holes", "dups", "noops", "seal races"}
	}
	row := func(name string, c attachCounts) []string {
		cells := []string{name, fmt.Sprint(c.Events), pct(c.Displaced, c.Events), fmt.Sprint(c.InvertedPairs),
			fmt.Sprint(c.WithoutCommitTS), fmt.Sprint(c.Gaps), fmt.Sprint(c.Duplicates)}
		if slot {
			var s attachSlot
			if c.Slot != nil {
				s = *c.Slot
			}
			cells = append(cells, fmt.Sprint(s.Noops), fmt.Sprint(s.SealRaces))
		}
		return cells
	}
	rows := make([][]string, 0, len(rep.Runs)+1)
	for _, r := range rep.Runs {
		rows = append(rows, row(r.RunID, r.attachCounts))
	}
	tt := rep.Totals
	rows = append(rows, row(fmt.Sprintf("total (%d runs)", tt.Runs), tt.attachCounts))
	if err := table.Write(w, style, header, rows); err != nil {
		return err
	}
	c := &cellForensics{Pairs: rep.Pairs, Windows: rep.Windows}
	return printPairsAndWindows(w, c, style, rep.maxPairs)
}

// JSON writes the report as one JSON object: the source, totals, pairs and
// windows first, indented, then the runs, one per line, so that a report of
// many thousands of runs stays quick to write and to grep.
func (rep *attachReport) JSON(w io.Writer) error {
	bw := bufio.NewWriter(w) // keeps its first write error; Flush returns it
	head := []struct {
		key string
		v   any
	}{{"source", rep.Info}, {"totals", rep.Totals}, {"pairs", rep.Pairs}, {"windows", rep.Windows}}
	bw.WriteString("{\n")
	for _, h := range head {
		b, err := json.MarshalIndent(h.v, "  ", "  ")
		if err != nil {
			return err
		}
		fmt.Fprintf(bw, "  %q: %s,\n", h.key, b)
	}
	bw.WriteString(`  "runs": [`)
	for i, r := range rep.Runs {
		b, err := json.Marshal(r)
		if err != nil {
			return err
		}
		if i > 0 {
			bw.WriteByte(',')
		}
		bw.WriteString("\n    ")
		bw.Write(b)
	}
	if len(rep.Runs) > 0 {
		bw.WriteString("\n  ")
	}
	bw.WriteString("]\n}\n")
	return bw.Flush()
}
