package local

import (
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"slices"

	"github.com/stormctl/stormctl/eventlog"
)

// listSeq reads a seq run without taking its serializer: read the counter
// first (N committed events), then scan, keep the run's events at seq <= N
// (anything above is a batch in flight or being rolled back), sort by seq and
// page by cursor. Every committed event was renamed into place before the
// counter that counts it, so the scan sees all of 1..N; if it does not, or
// sees a position twice, the read fails with the typed density error.
func (w *World) listSeq(runID string, after eventlog.Cursor, limit int) (eventlog.Page, error) {
	if after.Seq < 0 {
		return eventlog.Page{}, fmt.Errorf("local: list run %s: negative cursor seq %d", runID, after.Seq)
	}
	c, err := w.readCounter(runID)
	if err != nil {
		return eventlog.Page{}, storeErr("list run "+runID+": read counter", err)
	}
	all, err := w.committed(runID, c.Committed)
	if err != nil {
		return eventlog.Page{}, err
	}
	if err := eventlog.CheckDensity(runID, 0, all); err != nil {
		return eventlog.Page{}, fmt.Errorf("local: list run %s: %w", runID, err)
	}
	if n := int64(len(all)); n < c.Committed {
		return eventlog.Page{}, fmt.Errorf("local: list run %s: counter says %d events committed, %d on disk, seq %d missing: %w",
			runID, c.Committed, n, n+1, eventlog.ErrGap)
	}
	page := all[min(after.Seq, c.Committed):]
	more := false
	if limit > 0 && len(page) > limit {
		page, more = page[:limit], true
	}
	if err := eventlog.CheckDensity(runID, after.Seq, page); err != nil {
		return eventlog.Page{}, fmt.Errorf("local: list run %s after seq %d: %w", runID, after.Seq, err)
	}
	p := eventlog.Page{Events: page, Next: after, More: more}
	if n := len(page); n > 0 {
		p.Next = eventlog.After(page[n-1])
	}
	return p, nil
}

// committed reads every event file of the run and keeps those at positions
// up to n, sorted by seq (ties by id, so a duplicate shows up next to its twin).
// A file that vanished between the scan and the read was a rolled-back batch.
func (w *World) committed(runID string, n int64) ([]eventlog.Event, error) {
	ids, err := w.fs.scan(runID)
	if err != nil {
		return nil, storeErr("list run "+runID, err)
	}
	out := make([]eventlog.Event, 0, min(int64(len(ids)), n))
	for _, id := range ids {
		e, err := w.event(runID, id)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			continue
		case err != nil:
			return nil, storeErr("list run "+runID+": read event "+id, err)
		}
		if e.Seq <= n { // an unpositioned event (seq 0) fails the density check
			out = append(out, e)
		}
	}
	slices.SortFunc(out, func(a, b eventlog.Event) int {
		return cmp.Or(cmp.Compare(a.Seq, b.Seq), cmp.Compare(a.ID, b.ID))
	})
	return out, nil
}
