package explain

import (
	"slices"
	"sort"
	"time"

	"github.com/stormctl/stormctl/forensics"
	"github.com/stormctl/stormctl/internal/eventlog"
	"github.com/stormctl/stormctl/internal/history"
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

// view is a reader's reconstructed view: the final log's positions it
// held after its loads, built as forensics.Held builds what a reader
// holds (the runtime keeps one log per invocation): a load from the start
// (a cursor-less reload, a run_started's preload) replaces what it held;
// a load from a cursor (a page continuing a read, a later incremental
// read, a delta or skipped-slot report a write's answer carried) adds its
// events to it, and an event it already held is held once.
type view struct {
	actor   string
	pages   []viewPage   // the pages of its loads since the last from the start
	loads   int          // loads since the last one from the start
	visible map[int]bool // positions in the final log
	n       int          // events held: the visible positions
	prefix  bool         // every page rebuilt, and the visible positions are the final log's first n
	last    int          // the highest position any page's cursor reached, -1 when none
	start   time.Time    // first page's start
	lastAt  time.Time    // last page's start
}

// viewPage is one page of a view: its op index, the final-log positions
// it returned, and whether they are those of its recorded count and id
// hash.
type viewPage struct {
	op      int
	pos     []int
	matched bool
}

// viewBefore reconstructs what actor held before op index before: the
// loads it had finished by then. It returns nil when it had read nothing.
func (r *run) viewBefore(actor string, before int) *view {
	return r.settle(actor, forensics.HeldBy(r.in.Ops[:before], actor, r.pagePositions))
}

// viewThrough reconstructs what actor held by the end of the load holding
// op index page.
func (r *run) viewThrough(actor string, page int) *view {
	var h forensics.Held[int]
	for _, ld := range forensics.Loads(r.in.Ops) {
		if ld.Actor != actor {
			continue
		}
		h.Take(r.in.Ops, ld, r.pagePositions)
		if slices.Contains(ld.Pages, page) {
			return r.settle(actor, h)
		}
	}
	return nil
}

// page is the page at op index i, rebuilt once (pageVisible).
func (r *run) page(i int) viewPage {
	if pg, ok := r.pages[i]; ok {
		return pg
	}
	pos, ok := r.pageVisible(r.in.Ops[i])
	pg := viewPage{op: i, pos: pos, matched: ok}
	if r.pages == nil {
		r.pages = map[int]viewPage{}
	}
	r.pages[i] = pg
	return pg
}

// pagePositions are the final-log positions the page at op index i
// returned, as forensics.Held takes them.
func (r *run) pagePositions(i int) []int { return r.page(i).pos }

// settle turns what actor held into its view: its pages, visible
// positions, count, prefix and times. Nil when it held no page.
func (r *run) settle(actor string, h forensics.Held[int]) *view {
	if len(h.Pages) == 0 {
		return nil
	}
	v := &view{actor: actor, loads: h.Loads, visible: map[int]bool{}, last: -1, prefix: true}
	for k, i := range h.Pages {
		pg := r.page(i)
		v.pages = append(v.pages, pg)
		op := r.in.Ops[i]
		if k == 0 {
			v.start = op.Start
		}
		v.lastAt = op.Start
		if op.Read.N > 0 {
			v.last = max(v.last, r.upTo(op.Read.Last)-1)
		}
		v.prefix = v.prefix && pg.matched
	}
	for _, p := range h.Keys {
		v.visible[p] = true
	}
	v.n = len(v.visible)
	for p := range v.visible {
		if p >= v.n {
			v.prefix = false
			break
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
	// A page whose recorded count and id hash are the final log's next
	// events after its cursor returned exactly those: no commit time is
	// needed to know it.
	if lo+op.Read.N <= len(r.ordered) && r.rangeHash(lo, lo+op.Read.N) == op.Read.SetHash {
		pos = make([]int, op.Read.N)
		for k := range pos {
			pos[k] = lo + k
		}
		return pos, true
	}
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
	return !slices.ContainsFunc(v.pages, func(pg viewPage) bool { return !pg.matched })
}

// rangeHash is the id hash of the final log's positions [lo, hi).
func (r *run) rangeHash(lo, hi int) uint64 {
	if r.hashes == nil {
		r.hashes = make([]uint64, len(r.ordered)+1)
		for i, e := range r.ordered {
			r.hashes[i+1] = r.hashes[i] + history.IDHash(e.ID)
		}
	}
	return r.hashes[hi] - r.hashes[lo]
}

// describe turns a reconstructed view into its JSON form.
func (r *run) describe(v *view) *View {
	out := &View{Actor: v.actor, Loads: v.loads, N: v.n, Prefix: v.prefix, Reconstructed: v.reconstructed()}
	for _, pg := range v.pages {
		op := r.in.Ops[pg.op]
		out.Pages = append(out.Pages, Page{After: op.After.Text(), Start: op.Start, End: op.End,
			N: op.Read.N, More: op.Read.More, Matched: pg.matched})
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

// pageOf returns the index into v.pages of the last page whose cursor
// range holds final position p (the reader's latest pass over it), or -1.
func (r *run) pageOf(v *view, p int) int {
	for k := len(v.pages) - 1; k >= 0; k-- {
		op := r.in.Ops[v.pages[k].op]
		if op.Read.N == 0 {
			continue
		}
		if lo, hi := r.upTo(op.After), r.upTo(op.Read.Last); p >= lo && p < hi {
			return k
		}
	}
	return -1
}
