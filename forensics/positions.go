package forensics

import (
	"cmp"
	"slices"

	"github.com/stormctl/stormctl/internal/eventlog"
)

// Position is one event of a positioned log reduced to its place: its seq
// (its slot under the slot scheme; below 1 it has none) and whether it is a
// noop seal.
type Position struct {
	Seq  int64
	Noop bool
}

// PositionsOf reduces a log's events to their positions, in the same order.
func PositionsOf(evs []eventlog.Event) []Position {
	ps := make([]Position, len(evs))
	for i, e := range evs {
		ps[i] = Position{Seq: e.Seq, Noop: e.Type == eventlog.Noop}
	}
	return ps
}

// CommitPositions is PositionsOf for commit events.
func CommitPositions(evs []CommitEvent) []Position {
	ps := make([]Position, len(evs))
	for i, e := range evs {
		ps[i] = Position{Seq: e.Seq, Noop: e.Type == eventlog.Noop}
	}
	return ps
}

// PositionScan is what the positions of a positioned log show on their
// own, without the history: its density, and under the slot scheme its
// holes, seals and seal races.
type PositionScan struct {
	// Gaps counts the positions missing below the highest one present
	// (under the slot scheme: the final holes); Duplicates the events at a
	// position an event before them already holds; Unpositioned the events
	// with no position.
	Gaps, Duplicates, Unpositioned int
	// FirstGap is the lowest missing position below a present one and
	// FirstGapAbove the lowest present position above it (both 0 when the
	// positions are dense).
	FirstGap, FirstGapAbove int64
	// Seals counts the noops; SealRaces the positions holding a noop and
	// another event at once (a second noop included), FirstSealRace the
	// lowest of them (0: none).
	Seals, SealRaces int
	FirstSealRace    int64
}

// ScanPositions scans a log's positions, given in any order (ps is sorted
// in place): one sort and one walk, so a table of a million events pays for
// a sort, not for a map entry per position. It is the one place that finds
// gaps, holes and seal races: the storm's outcomes, the explainer, the run
// checkers and attach mode all read them here.
func ScanPositions(ps []Position) PositionScan {
	slices.SortFunc(ps, func(a, b Position) int { return cmp.Compare(a.Seq, b.Seq) })
	var s PositionScan
	var last int64 // the highest position seen so far
	for i := 0; i < len(ps); {
		j, noops := i, 0
		for ; j < len(ps) && ps[j].Seq == ps[i].Seq; j++ {
			if ps[j].Noop {
				noops++
			}
		}
		s.Seals += noops
		pos, n := ps[i].Seq, j-i
		i = j
		if pos < 1 {
			s.Unpositioned += n
			continue
		}
		if pos > last+1 {
			s.Gaps += int(pos - last - 1)
			if s.FirstGap == 0 {
				s.FirstGap, s.FirstGapAbove = last+1, pos
			}
		}
		s.Duplicates += n - 1
		if n > 1 && noops > 0 {
			s.SealRaces++
			if s.FirstSealRace == 0 {
				s.FirstSealRace = pos
			}
		}
		last = pos
	}
	return s
}

// SlotFindings are the slot findings the positions show without the
// history (what attach mode can know): final holes, seals and seal races.
func (s PositionScan) SlotFindings() SlotFindings {
	return SlotFindings{FinalHoles: s.Gaps, Seals: s.Seals, SealRaces: s.SealRaces}
}

// DensityOf counts holes, repeats and unpositioned events of a positioned
// run's events, in any order.
func DensityOf(evs []CommitEvent) (gaps, dups, unpositioned int) {
	s := ScanPositions(CommitPositions(evs))
	return s.Gaps, s.Duplicates, s.Unpositioned
}

// checkDensity counts a positioned run's gaps, duplicates and unpositioned
// events.
func checkDensity(r *run, f *RunFindings) {
	if r.Scheme.Positioned() {
		f.Gaps, f.Duplicates, f.Unpositioned = r.positions.Gaps, r.positions.Duplicates, r.positions.Unpositioned
	}
}
