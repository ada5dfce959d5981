package forensics

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stormctl/stormctl/internal/eventlog"
)

// positions reads a log written as positions separated by spaces, a
// trailing n making the event a noop ("1 2n 2 3").
func positions(t *testing.T, log string) []Position {
	t.Helper()
	var ps []Position
	for _, f := range strings.Fields(log) {
		p := Position{}
		f, p.Noop = strings.CutSuffix(f, "n")
		if _, err := fmt.Sscan(f, &p.Seq); err != nil {
			t.Fatalf("%q: %v", log, err)
		}
		ps = append(ps, p)
	}
	return ps
}

func TestScanPositions(t *testing.T) {
	t.Parallel()
	tests := []struct {
		log  string
		want PositionScan
	}{
		{"", PositionScan{}},
		{"1 2 3 4 5", PositionScan{}},
		{"3 1 2", PositionScan{}},
		{"1 2 4", PositionScan{Gaps: 1, FirstGap: 3, FirstGapAbove: 4}},
		{"1 5", PositionScan{Gaps: 3, FirstGap: 2, FirstGapAbove: 5}},
		{"4", PositionScan{Gaps: 3, FirstGap: 1, FirstGapAbove: 4}},
		{"2 3", PositionScan{Gaps: 1, FirstGap: 1, FirstGapAbove: 2}},
		{"1 2 2 3", PositionScan{Duplicates: 1}},
		{"1 1 1", PositionScan{Duplicates: 2}},
		{"1 3 3", PositionScan{Gaps: 1, Duplicates: 1, FirstGap: 2, FirstGapAbove: 3}},
		{"0 0 1 2", PositionScan{Unpositioned: 2}},
		{"1 2n 3", PositionScan{Seals: 1}},
		{"1 2n 2 3", PositionScan{Duplicates: 1, Seals: 1, SealRaces: 1, FirstSealRace: 2}},
		{"1n 1n", PositionScan{Duplicates: 1, Seals: 2, SealRaces: 1, FirstSealRace: 1}},
		{"0n 0 1", PositionScan{Unpositioned: 2, Seals: 1}},
		{"7 1 2n 2 5n 5 5 9", PositionScan{Gaps: 4, Duplicates: 3, FirstGap: 3, FirstGapAbove: 5, Seals: 2, SealRaces: 2, FirstSealRace: 2}},
	}
	for _, tt := range tests {
		t.Run(tt.log, func(t *testing.T) {
			t.Parallel()
			if got := ScanPositions(positions(t, tt.log)); got != tt.want {
				t.Errorf("ScanPositions(%s) = %+v, want %+v", tt.log, got, tt.want)
			}
		})
	}
}

// TestPositionsOf: an event's position is its seq, a noop a seal, and
// DensityOf reads the same counts off commit events.
func TestPositionsOf(t *testing.T) {
	t.Parallel()
	evs := []eventlog.Event{{Seq: 3}, {Seq: 1, Type: eventlog.Noop}, {Seq: 1, Type: eventlog.StepCreated}, {}}
	want := PositionScan{Gaps: 1, Duplicates: 1, Unpositioned: 1, FirstGap: 2, FirstGapAbove: 3, Seals: 1, SealRaces: 1, FirstSealRace: 1}
	if got := ScanPositions(PositionsOf(evs)); got != want {
		t.Errorf("ScanPositions(PositionsOf) = %+v, want %+v", got, want)
	}
	ces := make([]CommitEvent, len(evs))
	for i, e := range evs {
		ces[i] = CommitEvent{ID: fmt.Sprint(i), Seq: e.Seq, Type: e.Type}
	}
	if g, d, u := DensityOf(ces); g != 1 || d != 1 || u != 1 {
		t.Errorf("DensityOf = %d gaps, %d dups, %d unpositioned; want 1, 1, 1", g, d, u)
	}
}
