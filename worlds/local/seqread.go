package local

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"slices"

	"github.com/stormctl/stormctl/internal/eventlog"
)

// listSeq reads a seq run without taking its serializer: read the counter
// first (N committed events), then scan, keep the run's events at seq <= N
// (anything above is a batch in flight or being rolled back), sort by seq and
// page by cursor. Every committed event was renamed into place before the
// counter that counts it, so the scan sees all of 1..N; if it does not, or
// sees a position twice, the read fails with the typed density error.
func (w *World) listSeq(runID string, after eventlog.Cursor, limit int) (eventlog.Page, error) {
	if err := checkCursor(runID, after); err != nil {
		return eventlog.Page{}, err
	}
	c, err := w.readCounter(runID)
	if err != nil {
		return eventlog.Page{}, storeErr("list run "+runID+": read counter", err)
	}
	all, err := w.committed(runID, c.Committed)
	if err != nil {
		return eventlog.Page{}, err
	}
	if err := checkRefs(runID, 0, all); err != nil {
		return eventlog.Page{}, fmt.Errorf("local: list run %s: %w", runID, err)
	}
	if n := int64(len(all)); n < c.Committed {
		return eventlog.Page{}, fmt.Errorf("local: list run %s: counter says %d events committed, %d on disk, seq %d missing: %w",
			runID, c.Committed, n, n+1, eventlog.ErrGap)
	}
	refs := all[min(after.Seq, c.Committed):]
	more := false
	if limit > 0 && len(refs) > limit {
		refs, more = refs[:limit], true
	}
	// checkRefs proved all is seq 1..n without a hole or a repeat, so the
	// page, a slice of it from the cursor on, is dense too.
	page := make([]eventlog.Event, len(refs))
	for i, r := range refs {
		page[i] = r.event.clone()
	}
	return pageAfter(after, page, more), nil
}

// checkCursor refuses a cursor before the start of a positioned run.
func checkCursor(runID string, after eventlog.Cursor) error {
	if after.Seq < 0 {
		return fmt.Errorf("local: list run %s: negative cursor seq %d", runID, after.Seq)
	}
	return nil
}

// pageAfter is eventlog.PageAfter for a page cut before its events were
// read (on the scanned ids, the counted refs, the slot table), so that no
// file past the page is read: more says whether events follow it.
func pageAfter(after eventlog.Cursor, events []eventlog.Event, more bool) eventlog.Page {
	p := eventlog.PageAfter(after, events, 0)
	p.More = more
	return p
}

// ref is a cached event looked at without copying its payload.
type ref struct {
	seq   int64
	id    string
	event *cachedEvent
}

// checkRefs is eventlog.CheckDensity over refs.
func checkRefs(runID string, after int64, refs []ref) error {
	want := after + 1
	for _, r := range refs {
		switch {
		case r.seq == want:
			want++
		case r.seq != 0 && r.seq < want:
			return &eventlog.DuplicateError{RunID: runID, Seq: r.seq}
		default:
			return &eventlog.GapError{RunID: runID, Want: want, Got: r.seq}
		}
	}
	return nil
}

// committed reads every event file of the run and keeps those at positions
// up to n, sorted by seq (ties by id, so a duplicate shows up next to its twin).
// A file that vanished between the scan and the read was a rolled-back batch.
func (w *World) committed(runID string, n int64) ([]ref, error) {
	ids, err := w.fs.scan(runID)
	if err != nil {
		return nil, storeErr("list run "+runID, err)
	}
	out := make([]ref, 0, min(int64(len(ids)), n))
	for _, id := range ids {
		e, err := w.cached(runID, id)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			continue
		case err != nil:
			return nil, storeErr("list run "+runID+": read event "+id, err)
		}
		if e.e.Seq <= n { // an unpositioned event (seq 0) fails the density check
			out = append(out, ref{seq: e.e.Seq, id: e.e.ID, event: e})
		}
	}
	slices.SortFunc(out, func(a, b ref) int {
		return cmp.Or(cmp.Compare(a.seq, b.seq), cmp.Compare(a.id, b.id))
	})
	return out, nil
}

// Dump returns every stored event of the run in scheme order without the
// density assertion, so forensics can count what a reader would refuse.
// Under slot that is every committed event and noop, holes and all, and
// never a reservation.
func (w *World) Dump(ctx context.Context, runID string) ([]eventlog.Event, error) {
	if err := w.usable(ctx); err != nil {
		return nil, err
	}
	run, err := w.loadRun(runID)
	if err != nil {
		return nil, err
	}
	switch run.Scheme {
	case eventlog.SchemeULID:
		p, err := w.listULID(runID, eventlog.Cursor{}, 0)
		return p.Events, err
	case eventlog.SchemeSlot:
		return w.dumpSlot(runID)
	}
	refs, err := w.committed(runID, math.MaxInt64)
	if err != nil {
		return nil, err
	}
	out := make([]eventlog.Event, len(refs))
	for i, r := range refs {
		out[i] = r.event.clone()
	}
	return out, nil
}
