package eventlog

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// SlotPrefix prefixes slot-numbered event ids (spec 6): "evnt_" and the
// event's 1-based position in its run, zero-padded to SlotDigits so that
// lexicographic order is position order.
const (
	SlotPrefix = "evnt_"
	SlotDigits = 26
)

// SlotID returns the event id of position pos.
func SlotID(pos int64) string { return fmt.Sprintf("%s%0*d", SlotPrefix, SlotDigits, pos) }

// SlotPosition reads the position out of a slot-numbered id; ok is false for
// any other id (a prefixed ULID, a wrong width, a position below 1).
func SlotPosition(id string) (pos int64, ok bool) {
	rest, found := strings.CutPrefix(id, SlotPrefix)
	if !found || len(rest) != SlotDigits {
		return 0, false
	}
	for _, c := range rest {
		if c < '0' || c > '9' {
			return 0, false
		}
	}
	n, err := strconv.ParseInt(rest, 10, 64)
	if err != nil || n < 1 {
		return 0, false
	}
	return n, true
}

// NoopPayload is what a seal records: when the slot it fills was reserved
// (zero if the sealer could not tell) and who sealed it.
type NoopPayload struct {
	ReservedAt time.Time `json:"reservedAt,omitzero"`
	SealedBy   string    `json:"sealedBy,omitempty"`
}

// CheckSlots is CheckDensity for the slot scheme: events read after position
// after must be after+1, after+2, …; a missing position is a *HoleError (the
// reader refuses to cross an empty slot), a repeated one a *DuplicateError.
func CheckSlots(runID string, after int64, events []Event) error {
	return checkPositions(runID, after, events, func(want, got int64) error {
		if got > want {
			return &HoleError{RunID: runID, Slot: want, Above: got}
		}
		return &GapError{RunID: runID, Want: want, Got: got}
	})
}
