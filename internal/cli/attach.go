package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"
	"time"

	"github.com/stormctl/stormctl/internal/eventlog"
	"github.com/stormctl/stormctl/internal/prodlog/pgattach"
	"github.com/stormctl/stormctl/reports/table"
	"github.com/stormctl/stormctl/worlds/postgres"
)

// attachReport prints the attach report (pgattach.Summary): its layout
// line, the runs' table with its total, then the type pairs and windows;
// its JSON is the summary's own.
type attachReport struct {
	*pgattach.Summary
	// maxPairs bounds the type-pair rows in a table.
	maxPairs int
}

// Table writes the layout line, the runs' table with its total, and the
// type pairs and windows.
func (rep attachReport) Table(w io.Writer) error { return rep.write(w, table.Boxed) }

// Markdown writes what Table does as a paragraph and markdown tables.
func (rep attachReport) Markdown(w io.Writer) error { return rep.write(w, table.Markdown) }

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
	rep := attachReport{Summary: pgattach.Summarize(found), maxPairs: opts.Pairs}
	if !rep.Info.CommitTimestamp {
		fmt.Fprintln(opts.IO.ErrOut, "note: track_commit_timestamp is off on this server: no commit times, so no commit-order forensics "+
			"(enable it with ALTER SYSTEM SET track_commit_timestamp = on and a restart; rows written before that stay without)")
	}
	return opts.Format.Print(opts.IO.Out, rep)
}

// write writes the layout line, the runs' table with its total, and the
// type pairs and windows, every table in style.
func (rep attachReport) write(w io.Writer, style table.Style) error {
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
	row := func(name string, c pgattach.Counts) []string {
		cells := []string{name, fmt.Sprint(c.Events), pct(c.Displaced, c.Events), fmt.Sprint(c.InvertedPairs),
			fmt.Sprint(c.WithoutCommitTS), fmt.Sprint(c.Gaps), fmt.Sprint(c.Duplicates)}
		if slot {
			var s pgattach.SlotCounts
			if c.Slot != nil {
				s = *c.Slot
			}
			cells = append(cells, fmt.Sprint(s.Noops), fmt.Sprint(s.SealRaces))
		}
		return cells
	}
	rows := make([][]string, 0, len(rep.Runs)+1)
	for _, r := range rep.Runs {
		rows = append(rows, row(r.RunID, r.Counts))
	}
	tt := rep.Totals
	rows = append(rows, row(fmt.Sprintf("total (%d runs)", tt.Runs), tt.Counts))
	if err := table.Write(w, style, header, rows); err != nil {
		return err
	}
	return printPairsAndWindows(w, rep.Pairs, rep.Windows, style, rep.maxPairs)
}
