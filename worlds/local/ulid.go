package local

import (
	"context"
	"fmt"
	"slices"

	"github.com/stormctl/stormctl/internal/eventlog"
	"github.com/stormctl/stormctl/worlds"
)

// appendULID writes drafts one by one, the legacy way. On failure it returns
// the events already written with the error.
func (w *World) appendULID(ctx context.Context, run eventlog.Run, d []eventlog.Draft) ([]eventlog.Event, error) {
	runID := run.ID
	out := make([]eventlog.Event, 0, len(d))
	for i, x := range d {
		var e eventlog.Event
		var err error
		if x.Type == eventlog.HookCreated && x.Token != "" && run.HookClaim != eventlog.HookClaimNone {
			e, err = w.writeClaimULID(ctx, run, x)
		} else {
			e, err = w.writeULID(ctx, runID, x)
		}
		if err != nil {
			return out, storeErr(fmt.Sprintf("append to run %s: draft %d (%s)", runID, i, x.Type), err)
		}
		out = append(out, e)
	}
	return out, nil
}

// appendFencedULID is the legacy count guard: count the run's events by a
// directory scan, reject if the count is not expectedSeq, then write. Nothing
// holds the count still between the check and the writes; that window is the
// defect under study, kept on purpose.
func (w *World) appendFencedULID(ctx context.Context, run eventlog.Run, expectedSeq int64, d []eventlog.Draft) ([]eventlog.Event, error) {
	runID := run.ID
	ids, err := w.fs.scan(runID)
	if err != nil {
		return nil, storeErr("fenced append to run "+runID, err)
	}
	if n := int64(len(ids)); n != expectedSeq {
		return nil, storeErr("fenced append to run "+runID, &eventlog.FencedError{RunID: runID, Expected: expectedSeq, Actual: n})
	}
	// The batch checks its keys up front, so a single writer's batch either
	// conflicts before writing anything or writes everything.
	probe := make([]eventlog.Event, len(d))
	for i, x := range d {
		probe[i] = eventlog.Event{Type: x.Type, CorrelationID: x.CorrelationID, Token: x.Token, Dedup: x.Dedup}
	}
	ms, err := markersOf(runID, probe)
	if err == nil {
		err = w.orphans.release(w.fs, runID)
	}
	if err == nil {
		err = w.fs.keysFree(runID, ms)
	}
	if err != nil {
		return nil, storeErr("fenced append to run "+runID, err)
	}
	return w.appendULID(ctx, run, d)
}

// writeULID writes one event (errors unwrapped; the caller adds context): mint, spend the mint-to-commit window, claim the
// keys, write the file through tmp/ and rename it into events/. The file holds
// the commit time observed just before the rename; the returned event holds
// the time just after it, when the event became visible.
func (w *World) writeULID(ctx context.Context, runID string, d eventlog.Draft) (eventlog.Event, error) {
	e := w.newEvent(runID, d)
	if err := worlds.SpendWindow(ctx, w.latency, w.latency.Delay(d.Type)); err != nil {
		return eventlog.Event{}, err
	}
	if err := w.commitULID(runID, &e); err != nil {
		return eventlog.Event{}, err
	}
	return e, nil
}

// listULID scans events/ for the run, sorts by id, keeps the ids past the
// cursor and reads only the files of the page.
func (w *World) listULID(runID string, after eventlog.Cursor, limit int) (eventlog.Page, error) {
	ids, err := w.fs.scan(runID)
	if err != nil {
		return eventlog.Page{}, storeErr("list run "+runID, err)
	}
	slices.Sort(ids)
	if after.ID != "" {
		i, found := slices.BinarySearch(ids, after.ID)
		if found {
			i++
		}
		ids = ids[i:]
	}
	more := false
	if limit > 0 && len(ids) > limit {
		ids, more = ids[:limit], true
	}
	page := make([]eventlog.Event, 0, len(ids))
	for _, id := range ids {
		e, err := w.event(runID, id)
		if err != nil {
			return eventlog.Page{}, storeErr("list run "+runID+": read event "+id, err)
		}
		page = append(page, e)
	}
	return pageAfter(after, page, more), nil
}
