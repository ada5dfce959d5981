package forensics

import (
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/stormctl/stormctl/eventlog"
	"github.com/stormctl/stormctl/worlds"
)

// RunInput is what the checkers need to know about one run.
type RunInput struct {
	Scheme eventlog.Scheme
	// Final is the run's log as stored at the end, in any order.
	Final []eventlog.Event
	// Ops is the run's recorded history.
	Ops []worlds.Op
	// StoreCommitTimes says Final carries the store's own commit times
	// (pg_xact_commit_timestamp), which then win over what writers observed.
	StoreCommitTimes bool
}

// RunFindings are the ordering and density findings of one run.
type RunFindings struct {
	Reads          int `json:"reads"`
	NonPrefixReads int `json:"non_prefix_reads"`
	CursorSkips    int `json:"cursor_skips"`
	InvertedPairs  int `json:"inversions"`
	Displaced      int `json:"displaced"`
	Gaps           int `json:"gaps"`
	Duplicates     int `json:"duplicates"`
	Unpositioned   int `json:"unpositioned"`
	// Slot holds the slot scheme's findings (nil under other schemes).
	Slot *SlotFindings `json:"slot,omitempty"`
}

// Add accumulates o into f.
func (f *RunFindings) Add(o RunFindings) {
	f.Reads += o.Reads
	f.NonPrefixReads += o.NonPrefixReads
	f.CursorSkips += o.CursorSkips
	f.InvertedPairs += o.InvertedPairs
	f.Displaced += o.Displaced
	f.Gaps += o.Gaps
	f.Duplicates += o.Duplicates
	f.Unpositioned += o.Unpositioned
	if o.Slot != nil {
		if f.Slot == nil {
			f.Slot = &SlotFindings{}
		}
		f.Slot.Add(*o.Slot)
	}
}

// keyed is an event reduced to what ordering checks need.
type keyed struct {
	id     string
	seq    int64
	commit time.Time
}

// AnalyzeRun applies every per-run checker. Its inverted pairs and
// displaced events are those of the commit order it returns
// (AnalyzeCommitOrder by the scheme's key; in a positioned scheme an
// unpositioned event has no key to be out of order with and is counted
// once, as unpositioned).
func AnalyzeRun(in RunInput) (RunFindings, CommitOrder) {
	ces := CommitEvents(in.Final, in.Ops, in.StoreCommitTimes)
	evs := make([]keyed, len(ces))
	for i, e := range ces {
		evs[i] = keyed{id: e.ID, seq: e.Seq, commit: e.CommitAt}
	}
	less := keyLess(in.Scheme)
	slices.SortStableFunc(evs, func(a, b keyed) int {
		if less(a, b) {
			return -1
		}
		if less(b, a) {
			return 1
		}
		return a.commit.Compare(b.commit)
	})
	var f RunFindings
	ordered := ces
	n, untimed := len(ces), 0 // the unpositioned still count as events
	if in.Scheme.Positioned() {
		f.Gaps, f.Duplicates, f.Unpositioned = Density(evs)
		ordered = slices.DeleteFunc(ces, func(e CommitEvent) bool {
			if e.Seq == 0 && e.CommitAt.IsZero() {
				untimed++
			}
			return e.Seq == 0
		})
	}
	order := AnalyzeCommitOrder(ordered, in.Scheme.Positioned())
	order.Events, order.WithoutCommitTS = n, order.WithoutCommitTS+untimed
	f.InvertedPairs, f.Displaced = order.InvertedPairs, order.Displaced
	f.Reads, f.NonPrefixReads, f.CursorSkips = reads(in.Ops, evs, less)
	if in.Scheme == eventlog.SchemeSlot {
		sf := AnalyzeSlots(in.Final, in.Ops)
		f.Slot = &sf
	}
	return f, order
}

func keyLess(s eventlog.Scheme) func(a, b keyed) bool {
	if s.Positioned() {
		return func(a, b keyed) bool { return a.seq < b.seq }
	}
	return func(a, b keyed) bool { return a.id < b.id }
}

// CommitTimes maps each event id to the commit time its writer observed.
func CommitTimes(ops []worlds.Op) map[string]time.Time {
	m := map[string]time.Time{}
	for _, op := range ops {
		for _, w := range op.Wrote {
			if w.ID != "" && !w.CommittedAt.IsZero() {
				m[w.ID] = w.CommittedAt
			}
		}
	}
	return m
}

// Density counts holes, repeats and unpositioned events of a log sorted by
// seq (unpositioned events, seq 0, sort first).
func Density(evs []keyed) (gaps, dups, unpositioned int) {
	var last int64
	for _, e := range evs {
		switch {
		case e.seq == 0:
			unpositioned++
		case e.seq == last:
			dups++
		case e.seq > last+1:
			gaps += int(e.seq - last - 1)
			last = e.seq
		default:
			last = e.seq
		}
	}
	return gaps, dups, unpositioned
}

// Load is one reader's read of its log until a page said no more (or came
// back empty): the successful list operations of one actor, in the order
// they ran. Pages holds their indexes into the ops given to Loads.
type Load struct {
	Actor string
	Pages []int
}

// Loads groups the pages every actor read into loads, in the order each
// load began. A load still open when the history ends (its last page said
// more) is left out: it never finished reading.
func Loads(ops []worlds.Op) []Load {
	var all []Load
	open := map[string]int{} // actor -> index into all of its open load
	for i, op := range ops {
		if op.Kind != worlds.OpList || op.Read == nil {
			continue
		}
		j, ok := open[op.Actor]
		if !ok {
			all = append(all, Load{Actor: op.Actor})
			j = len(all) - 1
			open[op.Actor] = j
		}
		all[j].Pages = append(all[j].Pages, i)
		if !op.Read.More || op.Read.N == 0 {
			delete(open, op.Actor)
		}
	}
	if len(open) == 0 {
		return all
	}
	unfinished := map[int]bool{}
	for _, j := range open {
		unfinished[j] = true
	}
	out := all[:0]
	for j, l := range all {
		if !unfinished[j] {
			out = append(out, l)
		}
	}
	return out
}

// load is one invocation's load reduced to what the read checks need.
type load struct {
	from, last eventlog.Cursor // first page's cursor, last page's cursor
	lastStart  time.Time
	n, lastN   int
	hash       uint64
}

// loads reduces the invocations' loads, per actor in record order.
func loads(ops []worlds.Op) map[string][]load {
	out := map[string][]load{}
	for _, ld := range Loads(ops) {
		if !strings.HasPrefix(ld.Actor, "inv-") {
			continue
		}
		first := ops[ld.Pages[0]]
		l := load{from: first.After}
		for _, i := range ld.Pages {
			op := ops[i]
			l.last, l.lastStart, l.lastN = op.After, op.Start, op.Read.N
			l.n += op.Read.N
			l.hash += op.Read.SetHash
		}
		out[ld.Actor] = append(out[ld.Actor], l)
	}
	return out
}

// reads checks every load against the final log sorted by key.
func reads(ops []worlds.Op, final []keyed, less func(a, b keyed) bool) (n, nonPrefix, skips int) {
	prefix := make([]uint64, len(final)+1)
	for i, e := range final {
		prefix[i+1] = prefix[i] + worlds.IDHash(e.id)
	}
	pos := func(c eventlog.Cursor) int { // events with key <= c
		if c.IsZero() {
			return 0
		}
		k := keyed{id: c.ID, seq: c.Seq}
		return sort.Search(len(final), func(i int) bool { return less(k, final[i]) })
	}
	for _, ls := range loads(ops) {
		viewN, viewHash := 0, uint64(0)
		for _, l := range ls {
			n++
			viewN += l.n
			viewHash += l.hash
			if viewN > len(final) || prefix[viewN] != viewHash {
				nonPrefix++
			}
			// A load whose cursor went back (a malformed or merged
			// history) passed nothing.
			lo, hi := pos(l.from), pos(l.last)
			behind := 0
			for _, e := range final[lo:max(lo, hi)] {
				if !e.commit.IsZero() && e.commit.Before(l.lastStart) {
					behind++
				}
			}
			skips += max(0, behind-(l.n-l.lastN))
		}
	}
	return n, nonPrefix, skips
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
