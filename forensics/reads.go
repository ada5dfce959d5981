package forensics

import (
	"sort"
	"strings"
	"time"

	"github.com/stormctl/stormctl/internal/eventlog"
	"github.com/stormctl/stormctl/internal/history"
)

// Load is one reader's read of its log until a page said no more (or came
// back empty): the successful list operations of one actor, in the order
// they ran. Pages holds their indexes into the ops given to Loads.
type Load struct {
	Actor string
	Pages []int
}

// Loads groups the pages every actor read into loads, in the order each
// load began. A load still open when the history ends (its last page said
// more) is left out: it never finished reading. A snapshot (the events a
// write's answer carried) is a load by itself: it neither continues nor
// ends the actor's open load, whatever its More says.
func Loads(ops []history.Op) []Load {
	var all []Load
	open := map[string]int{} // actor -> index into all of its open load
	for i, op := range ops {
		switch pageOf(op) {
		case notPage:
			continue
		case snapshotPage:
			all = append(all, Load{Actor: op.Actor, Pages: []int{i}})
			continue
		}
		j, ok := open[op.Actor]
		if !ok {
			all = append(all, Load{Actor: op.Actor})
			j = len(all) - 1
			open[op.Actor] = j
		}
		all[j].Pages = append(all[j].Pages, i)
		if pageOf(op) == lastPage {
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

// pageKind is what an op is to Loads' grouping.
type pageKind int

const (
	notPage      pageKind = iota // no successful list: no page of any load
	snapshotPage                 // the events a write's answer carried: a load by itself
	morePage                     // a page that said more: its load reads on
	lastPage                     // a page that said no more, or came back empty: its load ends
)

// pageOf is Loads' rule for one op, shared with Holding.
func pageOf(op history.Op) pageKind {
	switch {
	case op.Kind != history.OpList || op.Read == nil:
		return notPage
	case op.Snapshot:
		return snapshotPage
	case op.Read.More && op.Read.N > 0:
		return morePage
	}
	return lastPage
}

// load is one invocation's load reduced to what the read checks need.
type load struct {
	from, last eventlog.Cursor // first page's cursor, last page's cursor
	end        eventlog.Cursor // where the load left its cursor
	lastStart  time.Time
	n, lastN   int
	hash       uint64
}

// loads reduces the invocations' loads, per actor in record order.
func loads(ops []history.Op) map[string][]load {
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
			l.end = op.After
			if op.Read.N > 0 {
				l.end = op.Read.Last
			}
		}
		out[ld.Actor] = append(out[ld.Actor], l)
	}
	return out
}

// checkReads checks every invocation's loads against the final log: reads,
// non-prefix reads and cursor skips.
func checkReads(r *run, f *RunFindings) {
	f.Reads, f.NonPrefixReads, f.CursorSkips = reads(r.Ops, r.byKey, r.less)
}

// walk is one invocation's reading of its log from one cursor on: its
// loads, each reading on from where the one before left its cursor (the
// engine's loads do; a load that starts behind that begins another walk).
type walk struct {
	lo        int       // final-log events at or before the walk's first cursor
	end       int       // final-log events at or before where its cursor stands
	hi        int       // final-log events at or before its last page's cursor
	lastStart time.Time // its last page's start
	n, lastN  int       // events read in all, and by its last page
}

// reads checks every load against the final log sorted by key. A load is
// judged on what its reader held after it: the final log's prefix up to
// the cursor it read from (what a reader standing there had read before),
// then the load's events. It is non-prefix when those are not the final
// log's prefix: the load returned a later event without an earlier one
// above its cursor. A load from the start is the whole of the reader's
// view; a load from a cursor (an incremental read, a delta a write's
// answer carried since the writer's cursor, the slots a write skipped)
// adds only its own events, so a reader that loads again from the start,
// or takes two answers from one cursor, is not counted for the overlap. A
// hole a reader met is counted at the load that met it; the cursor skip
// it leaves is counted below.
//
// A cursor skip is an event a walk's cursor had passed, unread, that
// committed (by its earliest observation) before the walk's last page
// started: a page after its key came and went while it was committed,
// and the invocation never reads it.
func reads(ops []history.Op, final []keyed, less func(a, b keyed) bool) (n, nonPrefix, skips int) {
	prefix := make([]uint64, len(final)+1)
	for i, e := range final {
		prefix[i+1] = prefix[i] + history.IDHash(e.id)
	}
	pos := func(c eventlog.Cursor) int { // events with key <= c
		if c.IsZero() {
			return 0
		}
		k := keyed{id: c.ID, seq: c.Seq}
		return sort.Search(len(final), func(i int) bool { return less(k, final[i]) })
	}
	skipped := func(w walk) int {
		// A walk whose cursor went back (a malformed or merged history)
		// passed nothing.
		behind := 0
		for _, e := range final[w.lo:max(w.lo, w.hi)] {
			if !e.seen.IsZero() && e.seen.Before(w.lastStart) {
				behind++
			}
		}
		return max(0, behind-(w.n-w.lastN))
	}
	for _, ls := range loads(ops) {
		var w *walk
		for _, l := range ls {
			n++
			from := pos(l.from)
			if to := from + l.n; to > len(final) || prefix[to]-prefix[from] != l.hash {
				nonPrefix++
			}
			if w != nil && from < w.end {
				skips += skipped(*w)
				w = nil
			}
			if w == nil {
				w = &walk{lo: from}
			}
			w.end, w.hi, w.lastStart, w.lastN = pos(l.end), pos(l.last), l.lastStart, l.lastN
			w.n += l.n
		}
		if w != nil {
			skips += skipped(*w)
		}
	}
	return n, nonPrefix, skips
}
