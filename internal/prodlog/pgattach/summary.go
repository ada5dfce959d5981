package pgattach

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"math"

	"github.com/stormctl/stormctl/forensics"
	"github.com/stormctl/stormctl/internal/eventlog"
)

// Counts are what the attach report counts, per run and in total.
// **contract** (forensics --pg-url --format json)
type Counts struct {
	Events          int `json:"events"`
	Displaced       int `json:"displaced"`
	InvertedPairs   int `json:"inverted_pairs"`
	WithoutCommitTS int `json:"without_commit_ts"`
	Gaps            int `json:"gaps"`
	Duplicates      int `json:"duplicates"`
	Unpositioned    int `json:"unpositioned"`
	// Slot holds a slot table's own counts; null for the other layouts.
	Slot *SlotCounts `json:"slot,omitempty"`
}

// SlotCounts are the slot counts of a run (or of all runs) of a spec-6/7
// slot table: its holes (the gaps: positions missing below the highest
// one present), its noop seals, and its seal races (positions holding a
// noop and another event, each also counted in duplicates).
type SlotCounts struct {
	Holes     int `json:"holes"`
	Noops     int `json:"noops"`
	SealRaces int `json:"seal_races"`
}

// add adds o to s, saturating: positions in a foreign table can be huge.
func (s *SlotCounts) add(o SlotCounts) {
	s.Holes, s.Noops, s.SealRaces = addSat(s.Holes, o.Holes), addSat(s.Noops, o.Noops), addSat(s.SealRaces, o.SealRaces)
}

// addSat is a+b for non-negative counts, held at math.MaxInt.
func addSat(a, b int) int {
	if a > math.MaxInt-b {
		return math.MaxInt
	}
	return a + b
}

// RunLine is one run's line of the attach report.
type RunLine struct {
	RunID string `json:"run_id"`
	Counts
}

// Totals are the attach report's counts over every run.
type Totals struct {
	Runs int `json:"runs"`
	Counts
}

// Summary is the attach report (stormctl forensics --pg-url): the source,
// a line per run, the totals, the type pairs by count and the
// mint-to-commit windows. **contract** (its JSON)
type Summary struct {
	Info    Info                               `json:"source"`
	Runs    []RunLine                          `json:"runs"`
	Totals  Totals                             `json:"totals"`
	Pairs   []forensics.PairCount              `json:"pairs"`
	Windows map[eventlog.Type]forensics.Window `json:"windows"`
}

// Summarize counts what Forensics found into the attach report.
func Summarize(found Report) *Summary {
	rep := &Summary{Info: found.Info, Windows: found.Windows, Runs: make([]RunLine, 0, len(found.Runs))}
	slot := found.Info.Scheme == eventlog.SchemeSlot
	if slot {
		rep.Totals.Slot = &SlotCounts{}
	}
	for _, r := range found.Runs {
		co := r.Order
		line := RunLine{RunID: r.RunID, Counts: Counts{Events: co.Events, Displaced: co.Displaced, InvertedPairs: co.InvertedPairs,
			WithoutCommitTS: co.WithoutCommitTS, Gaps: r.Gaps, Duplicates: r.Duplicates, Unpositioned: r.Unpositioned}}
		if slot && r.Slots != nil {
			line.Slot = &SlotCounts{Holes: r.Slots.FinalHoles, Noops: r.Slots.Seals, SealRaces: r.Slots.SealRaces}
			rep.Totals.Slot.add(*line.Slot)
		}
		rep.Runs = append(rep.Runs, line)
		rep.Totals.Runs++
		rep.Totals.Gaps = addSat(rep.Totals.Gaps, line.Gaps)
		rep.Totals.Duplicates += line.Duplicates
		rep.Totals.Unpositioned += line.Unpositioned
	}
	total := found.Total
	rep.Totals.Events, rep.Totals.Displaced = total.Events, total.Displaced
	rep.Totals.InvertedPairs, rep.Totals.WithoutCommitTS = total.InvertedPairs, total.WithoutCommitTS
	rep.Pairs = append([]forensics.PairCount{}, total.SortedPairs()...) // [] rather than null in JSON, for jq
	if rep.Windows == nil {
		rep.Windows = map[eventlog.Type]forensics.Window{}
	}
	return rep
}

// JSON writes the report as one JSON object: the source, totals, pairs and
// windows first, indented, then the runs, one per line, so that a report of
// many thousands of runs stays quick to write and to grep.
func (rep *Summary) JSON(w io.Writer) error {
	bw := bufio.NewWriter(w) // keeps its first write error; Flush returns it
	head := []struct {
		key string
		v   any
	}{{"source", rep.Info}, {"totals", rep.Totals}, {"pairs", rep.Pairs}, {"windows", rep.Windows}}
	bw.WriteString("{\n")
	for _, h := range head {
		b, err := json.MarshalIndent(h.v, "  ", "  ")
		if err != nil {
			return err
		}
		fmt.Fprintf(bw, "  %q: %s,\n", h.key, b)
	}
	bw.WriteString(`  "runs": [`)
	for i, r := range rep.Runs {
		b, err := json.Marshal(r)
		if err != nil {
			return err
		}
		if i > 0 {
			bw.WriteByte(',')
		}
		bw.WriteString("\n    ")
		bw.Write(b)
	}
	if len(rep.Runs) > 0 {
		bw.WriteString("\n  ")
	}
	bw.WriteString("]\n}\n")
	return bw.Flush()
}
