package forensics

import (
	"slices"
	"strings"
	"time"

	"github.com/stormctl/stormctl/internal/eventlog"
	"github.com/stormctl/stormctl/internal/history"
)

// RunInput is what the checkers need to know about one run.
type RunInput struct {
	Scheme eventlog.Scheme
	// Final is the run's log as stored at the end, in any order.
	Final []eventlog.Event
	// Ops is the run's recorded history.
	Ops []history.Op
	// StoreCommitTimes says Final carries the store's own commit times
	// (pg_xact_commit_timestamp), which then win over what writers observed.
	StoreCommitTimes bool
}

// RunFindings are the checkers' findings about one run: every checker
// adds its own field (summed by Add). The JSON names are runs.jsonl's
// "findings" and, inline, summary.json's cells (reports.Cell embeds
// RunFindings). **contract**
type RunFindings struct {
	Reads          int `json:"reads"`
	NonPrefixReads int `json:"non_prefix_reads"`
	CursorSkips    int `json:"cursor_skips"`
	Inversions     int `json:"inversions"`
	Displaced      int `json:"displaced"`
	Gaps           int `json:"gaps"`
	Duplicates     int `json:"duplicates"`
	Unpositioned   int `json:"unpositioned"`
	// DuplicateCreates counts the creations of a step, wait or hook beyond
	// the first for one correlation id (or hook token) in the final log
	// (ScanCreations): the world broke its uniqueness contract. Unlike
	// Duplicates (two events at one seq), it counts under every scheme.
	DuplicateCreates int `json:"duplicate_creates"`
	// DuplicateEnds counts the terminal events (run_completed, run_failed)
	// beyond the first in the final log (checkEnds): the world ended a run
	// twice. Omitted at 0, so the JSON of storms recorded before it was
	// counted (2026-12-06) reads as it did; forensics DIR counts it from
	// any storm's final logs.
	DuplicateEnds int `json:"duplicate_ends,omitempty"`
	// Refused counts the appends of the run's history its world refused
	// (checkRefused): conflict, refused, fenced or duplicate. Omitted at
	// 0, so stored JSON from before it (2026-12-06) reads as it did.
	Refused int `json:"refused,omitempty"`
	// Slot holds the slot scheme's findings (nil under other schemes).
	Slot *SlotFindings `json:"slot,omitempty"`
}

// Add accumulates o into f.
func (f *RunFindings) Add(o RunFindings) {
	f.Reads += o.Reads
	f.NonPrefixReads += o.NonPrefixReads
	f.CursorSkips += o.CursorSkips
	f.Inversions += o.Inversions
	f.Displaced += o.Displaced
	f.Gaps += o.Gaps
	f.Duplicates += o.Duplicates
	f.Unpositioned += o.Unpositioned
	f.DuplicateCreates += o.DuplicateCreates
	f.DuplicateEnds += o.DuplicateEnds
	f.Refused += o.Refused
	if o.Slot != nil {
		if f.Slot == nil {
			f.Slot = &SlotFindings{}
		}
		f.Slot.Add(*o.Slot)
	}
}

// keyed is an event reduced to what ordering checks need: its key, its
// commit time (CommitEvents') and the earliest observation of its commit
// (the store's or the world's time on the event, or its writer's, whichever
// came first): it was visible no later than that, give or take the
// observers' clocks.
type keyed struct {
	id     string
	seq    int64
	commit time.Time
	seen   time.Time
}

// run is one run as the checks see it: their input and what several of
// them derive from it, derived once.
type run struct {
	RunInput
	// commits is the final log with its commit times (CommitEvents), as
	// stored; byKey the same events sorted by the scheme's key (ties by
	// commit time), less that key order.
	commits []CommitEvent
	byKey   []keyed
	less    func(a, b keyed) bool
	// positions is the scan of a positioned scheme's positions (zero
	// under other schemes).
	positions PositionScan
	// order is the commit order checkCommitOrder found, which AnalyzeRun
	// returns beside the findings.
	order CommitOrder
}

// A check is one checker: a pure function that adds what it finds in one
// run to f.
type check func(r *run, f *RunFindings)

// checks lists the checkers AnalyzeRun applies, in order. A new checker is
// a file holding its check, a field of RunFindings (summed in Add) and its
// line here.
func checks() []check {
	return []check{
		checkDensity,     // positions.go
		checkCommitOrder, // commit.go
		checkReads,       // reads.go
		checkSlots,       // slot.go
		checkCreates,     // creates.go
		checkEnds,        // ends.go
		checkRefused,     // refused.go
	}
}

// RunAnalysis is what AnalyzeRun derives from one run.
type RunAnalysis struct {
	// Findings are the checkers' findings.
	Findings RunFindings
	// Order is the commit order the findings' inverted pairs and displaced
	// events are those of.
	Order CommitOrder
	// Commits is the final log joined with its commit times
	// (CommitEvents), in Final's order: the run's one join, which callers
	// pass on (the cell's mint-to-commit windows, the verdicts' log at a
	// rejection) rather than joining again.
	Commits []CommitEvent
}

// AnalyzeRun applies every per-run checker. Its inverted pairs and
// displaced events are those of the commit order it returns
// (AnalyzeCommitOrder by the scheme's key; in a positioned scheme an
// unpositioned event has no key to be out of order with and is counted
// once, as unpositioned).
func AnalyzeRun(in RunInput) RunAnalysis {
	r := &run{RunInput: in, commits: CommitEvents(in.Final, in.Ops, in.StoreCommitTimes), less: keyLess(in.Scheme)}
	r.byKey = make([]keyed, len(r.commits))
	for i, e := range r.commits {
		seen := e.CommitAt
		if c := in.Final[i].CommittedAt; !c.IsZero() && (seen.IsZero() || c.Before(seen)) {
			seen = c
		}
		r.byKey[i] = keyed{id: e.ID, seq: e.Seq, commit: e.CommitAt, seen: seen}
	}
	slices.SortStableFunc(r.byKey, func(a, b keyed) int {
		if r.less(a, b) {
			return -1
		}
		if r.less(b, a) {
			return 1
		}
		return a.commit.Compare(b.commit)
	})
	if in.Scheme.Positioned() {
		r.positions = ScanPositions(PositionsOf(in.Final))
	}
	var f RunFindings
	for _, c := range checks() {
		c(r, &f)
	}
	return RunAnalysis{Findings: f, Order: r.order, Commits: r.commits}
}

func keyLess(s eventlog.Scheme) func(a, b keyed) bool {
	if s.Positioned() {
		return func(a, b keyed) bool { return a.seq < b.seq }
	}
	return func(a, b keyed) bool { return a.id < b.id }
}

// CommitTimes maps each event id to the commit time its writer observed:
// the earliest of the appends that answered with it (an idempotent write,
// such as a run_started on a running run, answers again with the event an
// earlier one committed, long after its commit).
func CommitTimes(ops []history.Op) map[string]time.Time {
	m := map[string]time.Time{}
	for _, op := range ops {
		for _, w := range op.Wrote {
			if w.ID == "" || w.CommittedAt.IsZero() {
				continue
			}
			if t, ok := m[w.ID]; !ok || w.CommittedAt.Before(t) {
				m[w.ID] = w.CommittedAt
			}
		}
	}
	return m
}

// KeyCompare orders a run's events in the scheme's order, as readers page
// through them: by seq under a positioned scheme, by id otherwise; ties
// (duplicates, unpositioned events) by id.
func KeyCompare(s eventlog.Scheme) func(a, b eventlog.Event) int {
	return func(a, b eventlog.Event) int {
		if s.Positioned() && a.Seq != b.Seq {
			if a.Seq < b.Seq {
				return -1
			}
			return 1
		}
		return strings.Compare(a.ID, b.ID)
	}
}
