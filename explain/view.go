package explain

import (
	"slices"
	"sort"
	"time"

	"github.com/stormctl/stormctl/eventlog"
	"github.com/stormctl/stormctl/forensics"
	"github.com/stormctl/stormctl/history"
)

// margins widen the window in which a page may or may not have seen an
// event that committed around it: commit times are observed a little after
// the commit becomes visible (the local world's rename), or stamped a
// little before it (a database's commit timestamp). The first margin whose
// reconstruction matches the recorded hash wins.
var margins = []time.Duration{2 * time.Millisecond, 10 * time.Millisecond, 50 * time.Millisecond}

// maxAmbiguous bounds the events whose visibility a page reconstruction
// enumerates (2^n subsets at worst).
const maxAmbiguous = 16

// view is a reader's reconstructed view: the final log's positions it saw.
type view struct {
	actor   string
	pages   []int // op indexes, in order
	loads   int
	visible map[int]bool // positions in the final log
	matched []bool       // per page: the reconstruction has the recorded count and hash
	n       int          // events read, as recorded
	hash    uint64       // recorded id hash of all pages
	last    int          // the highest position any page's cursor reached, -1 when none
	start   time.Time    // first page's start
	lastAt  time.Time    // last page's start
}

// viewBefore reconstructs what actor had read before op index before.
// It returns nil when the actor read nothing by then.
func (r *run) viewBefore(actor string, before int) *view {
	var pages []int
	loads := 0
	for _, ld := range forensics.Loads(r.in.Ops[:before]) {
		if ld.Actor == actor {
			loads++
			pages = append(pages, ld.Pages...)
		}
	}
	return r.viewOf(actor, pages, loads)
}

// viewThrough reconstructs what actor had read by the end of the load
// holding op index page.
func (r *run) viewThrough(actor string, page int) *view {
	var pages []int
	loads := 0
	for _, ld := range forensics.Loads(r.in.Ops) {
		if ld.Actor != actor {
			continue
		}
		loads++
		pages = append(pages, ld.Pages...)
		if slices.Contains(ld.Pages, page) {
			return r.viewOf(actor, pages, loads)
		}
	}
	return nil
}

// viewOf reconstructs the view of the given pages (op indexes, in order).
func (r *run) viewOf(actor string, pages []int, loads int) *view {
	if len(pages) == 0 {
		return nil
	}
	v := &view{actor: actor, pages: pages, loads: loads, visible: map[int]bool{}, last: -1}
	for _, i := range v.pages {
		v.n += r.in.Ops[i].Read.N
		v.hash += r.in.Ops[i].Read.SetHash
	}
	// A view whose recorded count and hash are the final log's first n
	// events is exactly those: no commit time is needed to know it.
	prefix := r.prefix(v)
	for k, i := range v.pages {
		op := r.in.Ops[i]
		if k == 0 {
			v.start = op.Start
		}
		v.lastAt = op.Start
		if prefix {
			v.matched = append(v.matched, true)
			if op.Read.N > 0 {
				v.last = max(v.last, r.upTo(op.Read.Last)-1)
			}
			continue
		}
		seen, ok := r.pageVisible(op)
		v.matched = append(v.matched, ok)
		for _, p := range seen {
			v.visible[p] = true
		}
		if op.Read.N > 0 {
			v.last = max(v.last, r.upTo(op.Read.Last)-1)
		}
	}
	if prefix {
		for p := range v.n {
			v.visible[p] = true
		}
	}
	return v
}

// upTo is the number of final-log events whose key is at most cursor c.
func (r *run) upTo(c eventlog.Cursor) int {
	if c.IsZero() {
		return 0
	}
	k := eventlog.Event{ID: c.ID, Seq: c.Seq}
	return sort.Search(len(r.ordered), func(i int) bool { return r.cmp(k, r.ordered[i]) < 0 })
}

// pageVisible rebuilds the final-log positions a page returned: those in
// its cursor range that had committed when it read, choosing among the
// events that committed while it read (or whose commit time is unknown)
// the subset with the recorded count and id hash. ok says one was found;
// otherwise the events committed before its end are returned.
func (r *run) pageVisible(op history.Op) (pos []int, ok bool) {
	if op.Read == nil || op.Read.N == 0 {
		return nil, op.Read != nil
	}
	lo, hi := r.upTo(op.After), r.upTo(op.Read.Last)
	if hi <= lo {
		return nil, false
	}
	for _, m := range margins {
		var sure, amb []int
		for p := lo; p < hi; p++ {
			id := r.ordered[p].ID
			c, known := r.commit[id]
			switch {
			case known && c.Before(op.Start.Add(-m)):
				sure = append(sure, p)
			case known && r.commitLo[id].After(op.End.Add(m)):
			default:
				amb = append(amb, p)
			}
		}
		if got, found := r.subset(sure, amb, op.Read.N, op.Read.SetHash); found {
			return got, true
		}
	}
	var fallback []int
	for p := lo; p < hi; p++ {
		if c, known := r.commit[r.ordered[p].ID]; known && !c.After(op.End) {
			fallback = append(fallback, p)
		}
	}
	return fallback, false
}

// subset completes sure with a subset of amb so that n events with id hash
// sum are chosen, if one exists within maxAmbiguous.
func (r *run) subset(sure, amb []int, n int, sum uint64) ([]int, bool) {
	need := n - len(sure)
	if need < 0 || need > len(amb) {
		return nil, false
	}
	var base uint64
	for _, p := range sure {
		base += history.IDHash(r.ordered[p].ID)
	}
	if need == 0 {
		return sure, base == sum
	}
	if need == len(amb) {
		all := append(slices.Clone(sure), amb...)
		var h uint64
		for _, p := range amb {
			h += history.IDHash(r.ordered[p].ID)
		}
		return all, base+h == sum
	}
	if len(amb) > maxAmbiguous {
		return nil, false
	}
	hashes := make([]uint64, len(amb))
	for i, p := range amb {
		hashes[i] = history.IDHash(r.ordered[p].ID)
	}
	var pick []int
	var walk func(from int, left int, h uint64) bool
	walk = func(from, left int, h uint64) bool {
		if left == 0 {
			return h == sum
		}
		for i := from; i <= len(amb)-left; i++ {
			pick = append(pick, amb[i])
			if walk(i+1, left-1, h+hashes[i]) {
				return true
			}
			pick = pick[:len(pick)-1]
		}
		return false
	}
	if !walk(0, need, base) {
		return nil, false
	}
	out := append(slices.Clone(sure), pick...)
	slices.Sort(out)
	return out, true
}

// reconstructed says every page matched its recorded count and hash.
func (v *view) reconstructed() bool {
	return !slices.Contains(v.matched, false)
}

// prefix says the recorded view is exactly the first v.n events of the
// final log, by count and id hash, as forensics checks.
func (r *run) prefix(v *view) bool {
	if v.n > len(r.ordered) {
		return false
	}
	var h uint64
	for _, e := range r.ordered[:v.n] {
		h += history.IDHash(e.ID)
	}
	return h == v.hash
}

// describe turns a reconstructed view into its JSON form.
func (r *run) describe(v *view) *View {
	out := &View{Actor: v.actor, Loads: v.loads, N: v.n, Prefix: r.prefix(v), Reconstructed: v.reconstructed()}
	for k, i := range v.pages {
		op := r.in.Ops[i]
		out.Pages = append(out.Pages, Page{After: op.After.Text(), Start: op.Start, End: op.End,
			N: op.Read.N, More: op.Read.More, Matched: v.matched[k]})
	}
	return out
}

// positions returns the view's visible positions in order.
func (v *view) positions() []int {
	out := make([]int, 0, len(v.visible))
	for p := range v.visible {
		out = append(out, p)
	}
	slices.Sort(out)
	return out
}

// pageOf returns the index into v.pages of the page whose cursor range
// holds final position p, or -1.
func (r *run) pageOf(v *view, p int) int {
	for k, i := range v.pages {
		op := r.in.Ops[i]
		if op.Read.N == 0 {
			continue
		}
		if lo, hi := r.upTo(op.After), r.upTo(op.Read.Last); p >= lo && p < hi {
			return k
		}
	}
	return -1
}
