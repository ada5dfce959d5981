package pgattach

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/stormctl/stormctl/forensics"
	"github.com/stormctl/stormctl/internal/eventlog"
)

// TestExamineSlotsMatchAnalyzeSlots: on a slot table, Examine counts what
// forensics.AnalyzeSlots counts from a final log without history, and the
// gaps and duplicates forensics.DensityOf counts, on random logs written as
// positions (a trailing n marks a noop). forensics.TestScanPositions holds
// the counts themselves.
func TestExamineSlotsMatchAnalyzeSlots(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for i := range 500 {
		var b strings.Builder
		for range rng.IntN(40) {
			fmt.Fprintf(&b, "%d", 1+rng.IntN(30))
			if rng.IntN(5) == 0 {
				b.WriteByte('n')
			}
			b.WriteByte(' ')
		}
		t.Run(fmt.Sprint("random ", i), func(t *testing.T) { matchAnalyzeSlots(t, slotLog(t, b.String())) })
	}
}

// slotLog is a run's events from positions separated by spaces, a trailing
// n making the event a noop.
func slotLog(t *testing.T, log string) []forensics.CommitEvent {
	var evs []forensics.CommitEvent
	for _, f := range strings.Fields(log) {
		e := forensics.CommitEvent{Type: eventlog.StepCreated}
		if p, ok := strings.CutSuffix(f, "n"); ok {
			f, e.Type = p, eventlog.Noop
		}
		if _, err := fmt.Sscan(f, &e.Seq); err != nil {
			t.Fatalf("%q: %v", log, err)
		}
		e.ID = eventlog.SlotID(e.Seq)
		evs = append(evs, e)
	}
	return evs
}

// matchAnalyzeSlots checks Examine's findings on a slot table against
// forensics.AnalyzeSlots and forensics.DensityOf.
func matchAnalyzeSlots(t *testing.T, evs []forensics.CommitEvent) {
	t.Helper()
	final := make([]eventlog.Event, len(evs))
	for i, e := range evs {
		final[i] = eventlog.Event{ID: e.ID, Seq: e.Seq, Type: e.Type}
	}
	want := forensics.AnalyzeSlots(final, nil)
	gaps, dups, _ := forensics.DensityOf(evs)
	got := Examine(Run{ID: "r", Scheme: eventlog.SchemeSlot, Events: evs})
	if got.Slots == nil || !reflect.DeepEqual(*got.Slots, want) || got.Duplicates != dups || got.Gaps != gaps {
		t.Errorf("positions %v: Examine = %+v (slots %+v); AnalyzeSlots = %+v, DensityOf %d gaps, %d dups",
			evs, got, got.Slots, want, gaps, dups)
	}
}
