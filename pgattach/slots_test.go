package pgattach

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/stormctl/stormctl/eventlog"
	"github.com/stormctl/stormctl/forensics"
)

// TestSlotFindingsMatchAnalyzeSlots: slotFindings counts what
// forensics.AnalyzeSlots counts from a final log without history, and the
// duplicates forensics.DensityOf counts, on logs written as positions (a
// trailing n marks a noop), then on random ones.
func TestSlotFindingsMatchAnalyzeSlots(t *testing.T) {
	tests := []struct {
		name, log string
		want      forensics.SlotFindings
		dups      int
	}{
		{"empty", "", forensics.SlotFindings{}, 0},
		{"dense", "1 2 3", forensics.SlotFindings{}, 0},
		{"any order", "3 1 2", forensics.SlotFindings{}, 0},
		{"a hole", "1 3", forensics.SlotFindings{FinalHoles: 1}, 0},
		{"holes from 1", "4", forensics.SlotFindings{FinalHoles: 3}, 0},
		{"sealed", "1 2n 3", forensics.SlotFindings{Seals: 1}, 0},
		{"seal race", "1 2n 2 3", forensics.SlotFindings{Seals: 1, SealRaces: 1}, 1},
		{"two noops at one position", "1n 1n", forensics.SlotFindings{Seals: 2, SealRaces: 1}, 1},
		{"a duplicate, no seal", "1 2 2 2", forensics.SlotFindings{}, 2},
		{"everything", "7 1 2n 2 5n 5 5 9", forensics.SlotFindings{FinalHoles: 4, Seals: 2, SealRaces: 2}, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			evs := slotLog(t, tt.log)
			f, dups := slotFindings(evs)
			if !reflect.DeepEqual(f, tt.want) || dups != tt.dups {
				t.Errorf("slotFindings(%s) = %+v, %d dups; want %+v, %d", tt.log, f, dups, tt.want, tt.dups)
			}
			matchAnalyzeSlots(t, evs)
		})
	}
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

// matchAnalyzeSlots checks slotFindings against forensics.AnalyzeSlots and
// forensics.DensityOf.
func matchAnalyzeSlots(t *testing.T, evs []forensics.CommitEvent) {
	t.Helper()
	final := make([]eventlog.Event, len(evs))
	for i, e := range evs {
		final[i] = eventlog.Event{ID: e.ID, Seq: e.Seq, Type: e.Type}
	}
	want := forensics.AnalyzeSlots(final, nil)
	gaps, wantDups, _ := forensics.DensityOf(evs)
	got, dups := slotFindings(evs)
	if !reflect.DeepEqual(got, want) || dups != wantDups || got.FinalHoles != gaps {
		t.Errorf("positions %v: slotFindings = %+v, %d dups; AnalyzeSlots = %+v, DensityOf %d gaps, %d dups",
			evs, got, dups, want, gaps, wantDups)
	}
}
