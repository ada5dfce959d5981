package forensics

import (
	"encoding/json"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/stormctl/stormctl/internal/eventlog"
	"github.com/stormctl/stormctl/internal/history"
)

// SlotFindings are the slot scheme's own findings of one run (or, summed,
// of a cell): holes readers met and left, the seals that filled them, who
// wrote the seals, and how long a hole stayed open.
type SlotFindings struct {
	// HolesSeen counts the times a reader met an empty slot below a
	// committed one (once per reader and slot, however often it re-read
	// while waiting); FinalHoles the empty slots below the last committed
	// one in the final log.
	HolesSeen  int `json:"holes_seen"`
	FinalHoles int `json:"final_holes"`
	// Seals counts noops in the final log; SealedBy splits the seals the
	// history saw written by the kind of actor that wrote them ("inv",
	// "driver", "hook", "step").
	Seals    int            `json:"seals"`
	SealedBy map[string]int `json:"sealed_by,omitempty"`
	// SealedWrites counts writes voided because a seal filled their slot
	// first (the seal won; the writer wrote again or re-derived).
	SealedWrites int `json:"sealed_writes"`
	// SealRaces counts slots that hold a noop and another event at once: a
	// seal and a late commit both visible, which the contract forbids.
	// Every one is corruption.
	SealRaces int `json:"seal_races"`
	// FillMillis are hole-fill latencies, one per slot a reader saw empty:
	// from the slot's reservation to the commit or seal that filled it.
	FillMillis []float64 `json:"fill_ms,omitempty"`
}

// Add accumulates o into f.
func (f *SlotFindings) Add(o SlotFindings) {
	f.HolesSeen += o.HolesSeen
	f.FinalHoles += o.FinalHoles
	f.Seals += o.Seals
	f.SealedWrites += o.SealedWrites
	f.SealRaces += o.SealRaces
	for k, n := range o.SealedBy {
		if f.SealedBy == nil {
			f.SealedBy = map[string]int{}
		}
		f.SealedBy[k] += n
	}
	f.FillMillis = append(f.FillMillis, o.FillMillis...)
}

// Fill returns the p50, p99 and max of the hole-fill latencies, in
// milliseconds (zeros when no hole was seen).
func (f *SlotFindings) Fill() (p50, p99, maxMs float64) {
	if len(f.FillMillis) == 0 {
		return 0, 0, 0
	}
	s := slices.Clone(f.FillMillis)
	slices.Sort(s)
	at := func(q float64) float64 { return s[min(len(s)-1, int(q*float64(len(s))))] }
	return at(0.50), at(0.99), s[len(s)-1]
}

// AnalyzeSlots computes the slot findings of one run from its final log (as
// stored, holes and all, any order) and its history.
func AnalyzeSlots(final []eventlog.Event, ops []history.Op) SlotFindings {
	return analyzeSlots(ScanPositions(PositionsOf(final)), final, ops)
}

// checkSlots adds a slot-scheme run's slot findings.
func checkSlots(r *run, f *RunFindings) {
	if r.Scheme == eventlog.SchemeSlot {
		sf := analyzeSlots(r.positions, r.Final, r.Ops)
		f.Slot = &sf
	}
}

// analyzeSlots is AnalyzeSlots given the final log's position scan.
func analyzeSlots(scan PositionScan, final []eventlog.Event, ops []history.Op) SlotFindings {
	f := scan.SlotFindings()
	seen := map[int64]bool{}
	type wait struct {
		actor string
		slot  int64
	}
	waits := map[wait]bool{}
	for _, op := range ops {
		switch {
		case op.Kind == history.OpList && op.Err == "hole":
			if w := (wait{op.Actor, op.Slot}); !waits[w] {
				waits[w] = true
				f.HolesSeen++
			}
			seen[op.Slot] = true
		case op.Kind == history.OpSeal && op.Sealed:
			if f.SealedBy == nil {
				f.SealedBy = map[string]int{}
			}
			f.SealedBy[actorKind(op.Actor)]++
		case op.Err == "sealed":
			f.SealedWrites++
		}
	}
	if len(seen) == 0 {
		return f
	}
	// The first event stored at each slot a reader saw empty filled it
	// (a slot still empty at the end is counted in FinalHoles).
	filledBy := map[int64]eventlog.Event{}
	for _, e := range final {
		if _, done := filledBy[e.Seq]; seen[e.Seq] && !done {
			filledBy[e.Seq] = e
		}
	}
	for _, pos := range slices.Sorted(maps.Keys(seen)) {
		if e, ok := filledBy[pos]; ok {
			if d, ok := fillTime(e); ok {
				f.FillMillis = append(f.FillMillis, float64(d)/float64(time.Millisecond))
			}
		}
	}
	return f
}

// fillTime is how long slot e's position stayed empty: reservation (the
// event's MintedAt, or for a noop the reservation it records) to commit.
func fillTime(e eventlog.Event) (time.Duration, bool) {
	from := e.MintedAt
	if e.Type == eventlog.Noop {
		var p eventlog.NoopPayload
		if json.Unmarshal(e.Payload, &p) != nil || p.ReservedAt.IsZero() {
			return 0, false
		}
		from = p.ReservedAt
	}
	if from.IsZero() || e.CommittedAt.IsZero() || e.CommittedAt.Before(from) {
		return 0, false
	}
	return e.CommittedAt.Sub(from), true
}

// actorKind is an actor's name without its number ("inv-12": "inv").
func actorKind(actor string) string {
	if i := strings.LastIndexByte(actor, '-'); i > 0 {
		return actor[:i]
	}
	if actor == "" {
		return "unknown"
	}
	return actor
}
