package local

import (
	"cmp"
	"errors"
	"fmt"
	"io/fs"

	"github.com/stormctl/stormctl/internal/eventlog"
)

// listSlot reads a slot run without taking its serializer and without a
// directory scan: read the slot table (one atomically renamed file), take
// the filled slots past the cursor from it, and read their event files by
// name (a slot's id is its file name). The table is renamed only after the
// files of the slots it fills are in place, and a filled slot's file never
// changes, so the page is the log as of that table: reserved slots are
// empty to the reader, and files of a commit or seal still before its
// table (or left by a holder that died there) are never looked at.
//
// The page is the first limit filled slots past the cursor (limit <= 0: all
// of them). An empty slot below a filled one in it is a hole: the read
// fails with the *eventlog.HoleError eventlog.CheckSlots gives the page.
// Empty slots at the tail end the page. On an eventlog.FenceInBand run
// the page carries the table's counters (the snapshot a writer adopts).
func (w *World) listSlot(run eventlog.Run, after eventlog.Cursor, limit int) (eventlog.Page, error) {
	runID := run.ID
	if err := checkCursor(runID, after); err != nil {
		return eventlog.Page{}, err
	}
	t, err := w.readTable(runID)
	if err != nil {
		return eventlog.Page{}, storeErr("list run "+runID+": read slot table", err)
	}
	var (
		slots []int64
		empty int64 // the first empty slot past the cursor
		s     = after.Seq + 1
	)
	for ; s <= t.counter() && (limit <= 0 || len(slots) < limit); s++ {
		switch {
		case !t.filled(s):
			empty = cmp.Or(empty, s)
		case empty != 0:
			return eventlog.Page{}, fmt.Errorf("local: list run %s: %w", runID, &eventlog.HoleError{RunID: runID, Slot: empty, Above: s})
		default:
			slots = append(slots, s)
		}
	}
	more := false
	for ; s <= t.counter() && !more; s++ {
		more = t.filled(s)
	}
	page, err := w.slotEvents(runID, slots)
	if err != nil {
		return eventlog.Page{}, err
	}
	p := pageAfter(after, page, more)
	if run.FenceBasis == eventlog.FenceInBand {
		p.Snapshot = &eventlog.Snapshot{Seq: t.counter(), SeqInBand: t.InBandDone}
	}
	return p, nil
}

// dumpSlot returns every filled slot's event, committed or noop, in slot
// order, holes and all; reserved slots are never shown.
func (w *World) dumpSlot(runID string) ([]eventlog.Event, error) {
	t, err := w.readTable(runID)
	if err != nil {
		return nil, storeErr("dump run "+runID+": read slot table", err)
	}
	var slots []int64
	for s := int64(1); s <= t.counter(); s++ {
		if t.filled(s) {
			slots = append(slots, s)
		}
	}
	return w.slotEvents(runID, slots)
}

// slotEvents reads the events of filled slots (cached: a filled slot's file
// is final). A filled slot without its file, or with a file that is not its
// event, is damage, reported as a gap.
func (w *World) slotEvents(runID string, slots []int64) ([]eventlog.Event, error) {
	out := make([]eventlog.Event, len(slots))
	for i, s := range slots {
		id := eventlog.SlotID(s)
		ce, err := w.cached(runID, id)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return nil, fmt.Errorf("local: read run %s: slot %d is filled in the slot table but its event file is missing: %w", runID, s, eventlog.ErrGap)
		case err != nil:
			return nil, storeErr("read run "+runID+": read event "+id, err)
		case ce.e.RunID != runID || ce.e.ID != id || ce.e.Seq != s:
			return nil, fmt.Errorf("local: read run %s: the file of slot %d holds event %s@%d of run %s: %w", runID, s, ce.e.ID, ce.e.Seq, ce.e.RunID, eventlog.ErrGap)
		}
		out[i] = ce.clone()
	}
	return out, nil
}
