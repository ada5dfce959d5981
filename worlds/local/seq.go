package local

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"time"

	"github.com/stormctl/stormctl/internal/eventlog"
	"github.com/stormctl/stormctl/worlds"
)

// counter is the content of runs/<runId>.seq, the commit record of a seq run.
// Renaming a new counter into place is the commit point of a batch.
type counter struct {
	// Committed is the number of committed events: seqs 1..Committed.
	Committed int64 `json:"committed_seq"`
	// Fenced is the position of the last event a fenced append committed.
	Fenced int64 `json:"fenced_seq"`
	// Pending is the batch being written, recorded before its first file so
	// that a writer that died mid-batch can be rolled back by the next one.
	Pending *intent `json:"pending,omitempty"`
}

// intent lists what an uncommitted batch may have left on disk.
type intent struct {
	EventIDs []string `json:"event_ids"`
	KeyHash  []string `json:"key_hashes"`
}

// fence is the precondition of a fenced append.
type fence struct {
	on       bool
	expected int64
	basis    eventlog.FenceBasis
}

// check evaluates the fence against the committed counter. FenceOnLog: the
// log must hold exactly expected events. FenceOnDecisions: no fenced append
// may have landed past expected (and the writer cannot have loaded more
// events than exist).
func (f fence) check(runID string, c counter) error {
	if !f.on {
		return nil
	}
	actual := c.Committed
	switch {
	case f.basis == eventlog.FenceOnDecisions && c.Fenced > f.expected:
		actual = c.Fenced
	case f.basis == eventlog.FenceOnDecisions && f.expected <= c.Committed:
		return nil
	case f.basis == eventlog.FenceOnLog && f.expected == c.Committed:
		return nil
	}
	return &eventlog.FencedError{RunID: runID, Expected: f.expected, Actual: actual}
}

// appendSeq writes a batch under the seq scheme. Minting and the
// mint-to-commit window (the longest drawn for the batch's drafts: their
// payloads upload side by side) happen before the serializer is taken.
func (w *World) appendSeq(ctx context.Context, run eventlog.Run, d []eventlog.Draft, f fence) ([]eventlog.Event, error) {
	op := "append to run " + run.ID
	if f.on {
		op = "fenced append to run " + run.ID
	}
	events := make([]eventlog.Event, len(d))
	var delay time.Duration
	for i, x := range d {
		events[i] = w.newEvent(run.ID, x)
		delay = max(delay, w.latency.Delay(x.Type))
	}
	if err := worlds.SpendWindow(ctx, w.latency, delay); err != nil {
		return nil, storeErr(op, err)
	}
	unlock, err := w.locks.lock(ctx, run.ID)
	if err != nil {
		return nil, storeErr(op+": lock", err)
	}
	err = w.commitSeq(run.ID, f, events)
	if uerr := unlock(); err == nil && uerr != nil {
		err = fmt.Errorf("unlock: %w", uerr)
	}
	if err != nil {
		return nil, storeErr(op, err)
	}
	return events, nil
}

// commitSeq runs under the serializer: recover an abandoned batch, check the
// fence and every key, record the intent, claim the keys, write the event
// files and rename the new counter into place (the commit point). Any failure
// before the commit rolls the batch back. Errors are unwrapped.
func (w *World) commitSeq(runID string, f fence, events []eventlog.Event) error {
	c, err := w.readCounter(runID)
	if err != nil {
		return err
	}
	if c.Pending != nil {
		if err := w.rollback(runID, c); err != nil {
			return fmt.Errorf("roll back an abandoned batch: %w", err)
		}
		c.Pending = nil
	}
	if err := f.check(runID, c); err != nil {
		return err
	}
	ms, err := markersOf(runID, events)
	if err != nil {
		return err
	}
	if err := w.fs.keysFree(runID, ms); err != nil {
		return err
	}
	staged := c
	staged.Pending = &intent{}
	for _, e := range events {
		staged.Pending.EventIDs = append(staged.Pending.EventIDs, e.ID)
	}
	for _, m := range ms {
		staged.Pending.KeyHash = append(staged.Pending.KeyHash, keyHash(m.key))
	}
	if err := w.writeCounter(runID, staged); err != nil {
		return err
	}
	if _, err := w.fs.claimKeys(runID, ms); err != nil {
		// claimKeys released the markers it made; leave the others alone.
		staged.Pending.KeyHash = nil
		return errors.Join(err, w.rollback(runID, staged))
	}
	if err := w.writeEvents(runID, c.Committed, events); err != nil {
		return errors.Join(err, w.rollback(runID, staged))
	}
	done := c
	done.Committed += int64(len(events))
	if f.on {
		done.Fenced = done.Committed
	}
	if err := w.writeCounter(runID, done); err != nil {
		return errors.Join(fmt.Errorf("commit: %w", err), w.rollback(runID, staged))
	}
	committed := time.Now()
	for i := range events {
		events[i].CommittedAt = committed
	}
	return nil
}

// writeEvents writes the batch's event files at seqs base+1, base+2, …, each
// stamped with one commit time taken under the serializer.
func (w *World) writeEvents(runID string, base int64, events []eventlog.Event) error {
	stamp := time.Now()
	for i := range events {
		events[i].Seq = base + int64(i) + 1
		events[i].CommittedAt = stamp
		data, err := json.Marshal(events[i])
		if err != nil {
			return err
		}
		if err := w.fs.writeAtomic(w.fs.eventFile(runID, events[i].ID), data); err != nil {
			return err
		}
	}
	return nil
}

// rollback removes what the pending batch of c may have left (event files
// first, so no reader can meet an event whose keys are free) and rewrites the
// counter as c without it.
func (w *World) rollback(runID string, c counter) error {
	p := c.Pending
	if p == nil {
		return nil
	}
	var errs []error
	for _, id := range p.EventIDs {
		errs = append(errs, removeIfExists(w.fs.eventFile(runID, id)))
	}
	errs = append(errs, w.fs.releaseKeys(runID, p.KeyHash))
	if err := errors.Join(errs...); err != nil {
		return err
	}
	c.Pending = nil
	return w.writeCounter(runID, c)
}

// readCounter reads a run's counter; an absent counter is an empty log.
func (w *World) readCounter(runID string) (counter, error) {
	var c counter
	err := readJSON(w.fs.counterFile(runID), &c)
	if errors.Is(err, fs.ErrNotExist) {
		return counter{}, nil
	}
	return c, err
}

// writeCounter renames a new counter into place.
func (w *World) writeCounter(runID string, c counter) error {
	data, err := json.Marshal(c)
	if err != nil {
		return err
	}
	return w.fs.writeAtomic(w.fs.counterFile(runID), data)
}
