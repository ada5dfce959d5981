package local

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/stormctl/stormctl/internal/eventlog"
	"github.com/stormctl/stormctl/worlds"
)

var _ worlds.Slotter = (*World)(nil)

// appendSlot is an append under the slot scheme: reserve under the run's
// serializer, spend the batch's mint-to-commit window (its longest draw)
// without it, then commit under it again. A writer whose context ends in the
// window, or while it waits for the serializer to commit, leaves its slots
// reserved and empty: a hole that only a seal fills.
func (w *World) appendSlot(ctx context.Context, run eventlog.Run, d []eventlog.Draft, f fence) ([]eventlog.Event, error) {
	f.basis = run.FenceBasis
	r, err := w.reserve(ctx, run.ID, d, f)
	if err != nil {
		return nil, err
	}
	var delay time.Duration
	for _, x := range d {
		delay = max(delay, w.latency.Delay(x.Type))
	}
	if err := worlds.SpendWindow(ctx, w.latency, delay); err != nil {
		return nil, storeErr(fmt.Sprintf("append to run %s: slots %d-%d reserved, not committed", run.ID, r.First, r.First+int64(len(d))-1), err)
	}
	return w.commit(ctx, r)
}

// Reserve implements worlds.Slotter: it takes the run's next len(d) slots for
// d and claims d's keys in one table rename under the run's serializer.
// Nothing is visible to readers until Commit.
func (w *World) Reserve(ctx context.Context, runID string, d []eventlog.Draft) (worlds.Reservation, error) {
	run, err := w.prepareSlot(ctx, runID, d)
	if err != nil {
		return worlds.Reservation{}, err
	}
	return w.reserve(ctx, runID, d, fence{basis: run.FenceBasis})
}

// Commit implements worlds.Slotter: under the run's serializer it writes the
// reservation's event files and renames the table that marks its slots
// committed (the commit point, so the batch is visible all or nothing). If a
// slot of the reservation was sealed meanwhile it seals the others itself and
// fails with an *eventlog.SealedError naming the first sealed slot.
func (w *World) Commit(ctx context.Context, r worlds.Reservation) ([]eventlog.Event, error) {
	if _, err := w.prepareSlot(ctx, r.RunID, r.Drafts); err != nil {
		return nil, err
	}
	return w.commit(ctx, r)
}

// Seal implements worlds.Slotter: under the run's serializer it fills a
// reserved, empty slot with a noop, voiding its reservation and releasing
// the keys that reservation claimed. The noop records when the slot was
// reserved and who sealed it (worlds.ActorFrom(ctx)).
func (w *World) Seal(ctx context.Context, runID string, slot int64) (eventlog.Event, bool, error) {
	if _, err := w.prepareSlot(ctx, runID, nil); err != nil {
		return eventlog.Event{}, false, err
	}
	op := fmt.Sprintf("seal slot %d of run %s", slot, runID)
	if slot < 1 {
		return eventlog.Event{}, false, fmt.Errorf("local: %s: slots start at 1", op)
	}
	by := worlds.ActorFrom(ctx)
	noops, err := withTable(ctx, w, runID, func(t slotTable) ([]eventlog.Event, error) {
		switch t.state(slot) {
		case 0:
			return nil, fmt.Errorf("slot never reserved (the run has handed out %d)", t.counter())
		case slotCommitted, slotNoop:
			return nil, nil
		}
		return w.sealLocked(runID, t, []int64{slot}, by)
	})
	if err != nil {
		return eventlog.Event{}, false, storeErr(op, err)
	}
	if len(noops) == 0 {
		return eventlog.Event{}, false, nil
	}
	return noops[0], true, nil
}

// prepareSlot is prepare for the Slotter methods: the run must be a slot run.
func (w *World) prepareSlot(ctx context.Context, runID string, d []eventlog.Draft) (eventlog.Run, error) {
	run, err := w.prepare(ctx, runID, d)
	if err == nil && run.Scheme != eventlog.SchemeSlot {
		err = fmt.Errorf("local: run %s: scheme %s has no slots (only slot runs do)", runID, run.Scheme)
	}
	return run, err
}

// reserve takes the slots under the serializer; with f on, only if the run's
// counter (slots handed out, filled or not) is f.expected, or under
// eventlog.FenceInBand its in-band count.
func (w *World) reserve(ctx context.Context, runID string, d []eventlog.Draft, f fence) (worlds.Reservation, error) {
	op := "reserve slots of run " + runID
	if f.on {
		op = "fenced reserve of slots of run " + runID
	}
	if len(d) == 0 {
		return worlds.Reservation{}, fmt.Errorf("local: %s: no drafts", op)
	}
	digest, err := draftsDigest(d)
	if err != nil {
		return worlds.Reservation{}, fmt.Errorf("local: %s: %w", op, err)
	}
	r, err := withTable(ctx, w, runID, func(t slotTable) (worlds.Reservation, error) {
		return w.reserveLocked(runID, t, d, digest, f)
	})
	if err != nil {
		return worlds.Reservation{}, storeErr(op, err)
	}
	return r, nil
}

// reserveLocked runs under the serializer: check the fence and every key
// (claimed by a committed event's marker or by an open reservation), rename
// the table with the new slots reserved and their keys held (the commit
// point of the reservation), then create the keys' marker files. A failure
// to create them takes the reservation back. Errors are unwrapped.
func (w *World) reserveLocked(runID string, t slotTable, d []eventlog.Draft, digest string, f fence) (worlds.Reservation, error) {
	n := t.counter()
	inBand := f.basis == eventlog.FenceInBand
	switch {
	case f.on && inBand && f.expected != t.InBand:
		return worlds.Reservation{}, &eventlog.FencedError{RunID: runID, Expected: f.expected, Actual: t.InBand, InBand: true}
	case f.on && !inBand && f.expected != n:
		return worlds.Reservation{}, &eventlog.FencedError{RunID: runID, Expected: f.expected, Actual: n}
	}
	first := n + 1
	var probe []eventlog.Event
	for i, x := range d {
		if eventlog.PlainAppend(f.basis, x.Type) {
			continue // spec 9: no key of a step or wait event is checked
		}
		probe = append(probe, eventlog.Event{ID: eventlog.SlotID(first + int64(i)), Type: x.Type, CorrelationID: x.CorrelationID, Token: x.Token, Dedup: x.Dedup})
	}
	ms, err := markersOf(runID, probe)
	if err != nil {
		return worlds.Reservation{}, err
	}
	hashes := make([]string, len(ms))
	for i, m := range ms {
		hashes[i] = keyHash(m.key)
		if t.keyHeld(hashes[i]) {
			return worlds.Reservation{}, &eventlog.ConflictError{RunID: runID, Key: m.key}
		}
	}
	if err := w.fs.keysFree(runID, ms); err != nil {
		return worlds.Reservation{}, err
	}
	at := time.Now()
	next := t.clone()
	next.States += strings.Repeat(string(rune(slotReserved)), len(d))
	if f.on && inBand {
		next.InBand += int64(len(d))
	}
	next.Holds = append(next.Holds, slotHold{First: first, Count: int64(len(d)), ReservedAt: at, Digest: digest, Keys: hashes, InBand: f.on && inBand})
	if err := w.writeTable(runID, next); err != nil {
		return worlds.Reservation{}, err
	}
	if _, err := w.fs.claimKeys(runID, ms); err != nil {
		// claimKeys removed the markers it made. Until the old table is back
		// the keys stay held by the reservation nobody will commit.
		return worlds.Reservation{}, errors.Join(err, w.writeTable(runID, t))
	}
	return worlds.Reservation{RunID: runID, First: first, Drafts: d, ReservedAt: at}, nil
}

// commit commits a reservation under the serializer.
func (w *World) commit(ctx context.Context, r worlds.Reservation) ([]eventlog.Event, error) {
	last := r.First + int64(len(r.Drafts)) - 1
	op := fmt.Sprintf("commit slots %d-%d of run %s", r.First, last, r.RunID)
	if r.First < 1 || len(r.Drafts) == 0 {
		return nil, fmt.Errorf("local: %s: not a reservation (want a first slot >= 1 and drafts)", op)
	}
	digest, err := draftsDigest(r.Drafts)
	if err != nil {
		return nil, fmt.Errorf("local: %s: %w", op, err)
	}
	by := worlds.ActorFrom(ctx)
	events, err := withTable(ctx, w, r.RunID, func(t slotTable) ([]eventlog.Event, error) {
		return w.commitLocked(r, digest, t, by)
	})
	if err != nil {
		return nil, storeErr(op, err)
	}
	return events, nil
}

// commitLocked runs under the serializer. If every slot of the reservation
// is still reserved it writes the event files (overwriting whatever an
// earlier holder that died before its commit point left at those names) and
// renames the table with the slots committed: the commit point. If one was
// sealed it seals the rest and fails with a SealedError. Errors are
// unwrapped.
func (w *World) commitLocked(r worlds.Reservation, digest string, t slotTable, by string) ([]eventlog.Event, error) {
	n := int64(len(r.Drafts))
	var sealed int64
	for s := r.First; s < r.First+n; s++ {
		switch t.state(s) {
		case 0:
			return nil, fmt.Errorf("slot %d never reserved (the run has handed out %d)", s, t.counter())
		case slotCommitted:
			return nil, fmt.Errorf("slot %d is already committed: a reservation commits once", s)
		case slotNoop:
			sealed = cmp.Or(sealed, s)
		}
	}
	hi := t.holdOf(r.First)
	if hi < 0 || t.Holds[hi].First != r.First || t.Holds[hi].Count != n || t.Holds[hi].Digest != digest {
		if hi < 0 && sealed != 0 {
			// Every slot was sealed, and the hold went with the last of them.
			return nil, &eventlog.SealedError{RunID: r.RunID, Slot: sealed}
		}
		return nil, fmt.Errorf("slots %d-%d were not reserved for these %d drafts", r.First, r.First+n-1, n)
	}
	if sealed != 0 {
		var rest []int64
		for s := r.First; s < r.First+n; s++ {
			if t.state(s) == slotReserved {
				rest = append(rest, s)
			}
		}
		_, err := w.sealLocked(r.RunID, t, rest, by)
		return nil, errors.Join(&eventlog.SealedError{RunID: r.RunID, Slot: sealed}, err)
	}
	h := t.Holds[hi]
	events := make([]eventlog.Event, n)
	stamp := time.Now()
	for i, d := range r.Drafts {
		s := r.First + int64(i)
		events[i] = d.Event(r.RunID, eventlog.SlotID(s), h.ReservedAt)
		events[i].Seq, events[i].CommittedAt = s, stamp
		if err := w.writeEventFile(events[i]); err != nil {
			return nil, err
		}
	}
	next := t.clone()
	next.States = setStates(next.States, r.First, n, slotCommitted)
	if h.InBand {
		next.InBandDone += n
	}
	next.dropSettled()
	if err := w.writeTable(r.RunID, next); err != nil {
		return nil, fmt.Errorf("commit: %w", err)
	}
	committed := time.Now()
	for i := range events {
		events[i].CommittedAt = committed
	}
	return events, nil
}

// sealLocked runs under the serializer and seals reserved slots: write a
// noop file at each, then rename the table with them noop, their
// reservations void and those reservations' keys in Release (the commit
// point), then remove the keys' markers. A marker left by a failure there is
// removed by the serializer's next holder, so it is not the seal's error.
// Errors are unwrapped.
func (w *World) sealLocked(runID string, t slotTable, slots []int64, by string) ([]eventlog.Event, error) {
	next := t.clone()
	states := []byte(next.States)
	noops := make([]eventlog.Event, len(slots))
	stamp := time.Now()
	for i, s := range slots {
		hi := next.holdOf(s)
		if hi < 0 || next.state(s) != slotReserved {
			return nil, fmt.Errorf("slot %d is not a held reservation", s)
		}
		h := &next.Holds[hi]
		payload, err := json.Marshal(eventlog.NoopPayload{ReservedAt: h.ReservedAt, SealedBy: by})
		if err != nil {
			return nil, err
		}
		noops[i] = eventlog.Event{
			RunID: runID, ID: eventlog.SlotID(s), Seq: s, Type: eventlog.Noop, Payload: payload,
			MintedAt: h.ReservedAt, CommittedAt: stamp,
		}
		if err := w.writeEventFile(noops[i]); err != nil {
			return nil, err
		}
		states[s-1] = slotNoop
		if h.InBand {
			next.InBandDone++ // a sealed in-band slot still counts
		}
		next.Release = append(next.Release, h.Keys...)
		h.Keys = nil
	}
	next.States = string(states)
	next.dropSettled()
	if err := w.writeTable(runID, next); err != nil {
		return nil, fmt.Errorf("seal: %w", err)
	}
	_ = w.fs.releaseKeys(runID, next.Release)
	sealed := time.Now()
	for i := range noops {
		noops[i].CommittedAt = sealed
	}
	return noops, nil
}

// writeEventFile renames an event's file into place.
func (w *World) writeEventFile(e eventlog.Event) error {
	data, err := json.Marshal(e)
	if err != nil {
		return err
	}
	return w.fs.writeAtomic(w.fs.eventFile(e.RunID, e.ID), data)
}

// setStates returns states with slots first … first+n-1 set to st.
func setStates(states string, first, n int64, st byte) string {
	b := []byte(states)
	for i := first - 1; i < first-1+n; i++ {
		b[i] = st
	}
	return string(b)
}
