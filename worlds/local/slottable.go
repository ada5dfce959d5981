package local

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strings"
	"time"

	"github.com/stormctl/stormctl/internal/eventlog"
)

// The state of one slot in a slot table. A slot is reserved when a write
// takes it and moves once, under the run's serializer, to committed (the
// write's event) or to noop (a seal); a filled slot never changes again.
const (
	slotReserved  = 'r'
	slotCommitted = 'c'
	slotNoop      = 'n'
)

// slotTable is the content of runs/<runId>.slot: the whole position state of
// a slot run. Every transition (a reservation, a commit, a seal) is one
// rename of a new table into place under the run's serializer, after the
// files it depends on are in place: that rename is its commit point, so a
// writer that dies before it leaves the transition undone, and one that dies
// after it leaves it done. Readers read the table without the serializer and
// see exactly the slots it says are filled.
type slotTable struct {
	// States has one byte per slot handed out, slot i+1 at States[i]
	// (slotReserved, slotCommitted or slotNoop); its length is the run's
	// reservation counter, which fenced writes are fenced on.
	States string `json:"states"`
	// InBand is the run's in-band count under eventlog.FenceInBand: the
	// slots reserved by fenced (in-band) writes, sealed or not. Fenced
	// writes of such a run are fenced on it instead of the counter.
	InBand int64 `json:"inBand,omitempty"`
	// InBandDone is the part of InBand no longer in flight: in-band slots
	// committed or sealed. It is the count a list's snapshot gives, so a
	// writer never adopts a count that holds a write its page cannot show
	// (upstream's worlds move the count when the event lands).
	InBandDone int64 `json:"inBandDone,omitempty"`
	// Holds are the reservations with a slot still reserved, in slot order.
	Holds []slotHold `json:"holds,omitempty"`
	// Release lists key markers (hashes) that the last seal freed at its
	// commit point. The sealer removes them right after the rename; whoever
	// takes the serializer next removes them again before it looks at any key
	// (a sealer that died in between left them), and its next table drops the
	// list. No key can be claimed in between: a claim follows a table write.
	Release []string `json:"release,omitempty"`
}

// slotHold is one reservation: slots First … First+Count-1.
type slotHold struct {
	First      int64     `json:"first"`
	Count      int64     `json:"count"`
	ReservedAt time.Time `json:"reservedAt"`
	// Digest identifies the reserved drafts (draftsDigest): a commit must
	// bring the very drafts that were reserved.
	Digest string `json:"digest"`
	// InBand marks a reservation of an in-band (fenced) write of an
	// eventlog.FenceInBand run: its slots move InBandDone when they fill.
	InBand bool `json:"inBand,omitempty"`
	// Keys are the hashes of the idempotency keys the reservation claimed.
	// A key listed here is taken whether or not its marker file exists yet
	// (the markers are created right after the table that lists them). A
	// seal of any of the reservation's slots voids the whole reservation and
	// releases them: the list is emptied.
	Keys []string `json:"keys,omitempty"`
}

// counter is the number of slots handed out: slots 1..counter exist.
func (t slotTable) counter() int64 { return int64(len(t.States)) }

// state returns a slot's state, or 0 for a slot never handed out.
func (t slotTable) state(slot int64) byte {
	if slot < 1 || slot > t.counter() {
		return 0
	}
	return t.States[slot-1]
}

// filled reports whether a slot holds an event readers may see.
func (t slotTable) filled(slot int64) bool {
	s := t.state(slot)
	return s == slotCommitted || s == slotNoop
}

// holdOf returns the index of the hold covering slot, or -1.
func (t slotTable) holdOf(slot int64) int {
	return slices.IndexFunc(t.Holds, func(h slotHold) bool { return h.First <= slot && slot < h.First+h.Count })
}

// keyHeld reports whether a reservation holds the key with this hash.
func (t slotTable) keyHeld(hash string) bool {
	for _, h := range t.Holds {
		if slices.Contains(h.Keys, hash) {
			return true
		}
	}
	return false
}

// clone returns a copy whose holds can be changed without touching t.
func (t slotTable) clone() slotTable {
	c := t
	c.Holds = make([]slotHold, len(t.Holds))
	for i, h := range t.Holds {
		h.Keys = slices.Clone(h.Keys)
		c.Holds[i] = h
	}
	c.Release = slices.Clone(t.Release)
	return c
}

// dropSettled removes the holds none of whose slots is still reserved.
func (t *slotTable) dropSettled() {
	t.Holds = slices.DeleteFunc(t.Holds, func(h slotHold) bool {
		return !strings.ContainsRune(t.States[h.First-1:h.First-1+h.Count], slotReserved)
	})
}

// check asserts the table's invariants: known states only, and every
// reserved slot covered by exactly one hold lying inside the counter.
func (t slotTable) check() error {
	covered := make([]int, len(t.States))
	for _, h := range t.Holds {
		if h.First < 1 || h.Count < 1 || h.First+h.Count-1 > t.counter() {
			return fmt.Errorf("slot table: hold of slots %d+%d lies outside the %d slots handed out", h.First, h.Count, t.counter())
		}
		for s := h.First; s < h.First+h.Count; s++ {
			covered[s-1]++
		}
	}
	for i := range len(t.States) {
		switch st := t.States[i]; {
		case st != slotReserved && st != slotCommitted && st != slotNoop:
			return fmt.Errorf("slot table: slot %d has unknown state %q", i+1, st)
		case covered[i] > 1:
			return fmt.Errorf("slot table: slot %d is held by %d reservations", i+1, covered[i])
		case st == slotReserved && covered[i] == 0:
			return fmt.Errorf("slot table: slot %d is reserved but no reservation holds it", i+1)
		}
	}
	return nil
}

// readTable reads a slot run's table; an absent table is a run with no slot
// handed out. A damaged table is an error, never an empty log.
func (w *World) readTable(runID string) (slotTable, error) {
	var t slotTable
	err := readJSON(w.fs.slotFile(runID), &t)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return slotTable{}, nil
	case err != nil:
		return slotTable{}, err
	}
	return t, t.check()
}

// writeTable renames a new table into place: the commit point of every slot
// transition.
func (w *World) writeTable(runID string, t slotTable) error {
	data, err := json.Marshal(t)
	if err != nil {
		return err
	}
	return w.fs.writeAtomic(w.fs.slotFile(runID), data)
}

// lockTable takes runID's serializer, reads its table and finishes the last
// seal's key release, returning the table (Release emptied: the caller's next
// write drops it) and the function that releases the serializer. Errors are
// unwrapped.
func (w *World) lockTable(ctx context.Context, runID string) (slotTable, func() error, error) {
	unlock, err := w.locks.lock(ctx, runID)
	if err != nil {
		return slotTable{}, nil, fmt.Errorf("lock: %w", err)
	}
	t, err := w.readTable(runID)
	if err == nil && len(t.Release) > 0 {
		err = w.fs.releaseKeys(runID, t.Release)
		t.Release = nil
	}
	if err != nil {
		return slotTable{}, nil, errors.Join(err, unlock())
	}
	return t, unlock, nil
}

// withTable runs fn on runID's table under its serializer and releases it,
// joining an unlock failure to fn's outcome. Errors are unwrapped.
func withTable[T any](ctx context.Context, w *World, runID string, fn func(t slotTable) (T, error)) (T, error) {
	var zero T
	t, unlock, err := w.lockTable(ctx, runID)
	if err != nil {
		return zero, err
	}
	v, err := fn(t)
	if uerr := unlock(); uerr != nil {
		err = errors.Join(err, fmt.Errorf("unlock: %w", uerr))
	}
	return v, err
}

// draftsDigest identifies a reservation's drafts: the sha256 of their JSON.
func draftsDigest(d []eventlog.Draft) (string, error) {
	data, err := json.Marshal(d)
	if err != nil {
		return "", err
	}
	return keyHash(string(data)), nil
}
