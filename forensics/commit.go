package forensics

import (
	"cmp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/stormctl/stormctl/internal/eventlog"
)

// CommitEvent is one event with what commit-order forensics need.
type CommitEvent struct {
	ID   string
	Seq  int64
	Type eventlog.Type
	// MintedAt is when the id was minted (zero if unknown); CommitAt when the
	// store (or the world) saw the commit (zero if unknown: such events are
	// counted, never placed by guesswork).
	MintedAt time.Time
	CommitAt time.Time
	// Tie breaks equal commit times (e.g. the transaction id); lower first.
	Tie uint64
}

// TypePair is an (overtaking, overtaken) pair of event types: an event of
// Overtaking committed before an event of Overtaken that sorts before it.
type TypePair struct {
	Overtaking eventlog.Type `json:"overtaking"`
	Overtaken  eventlog.Type `json:"overtaken"`
}

// PairStat counts the inverted pairs of one type pair and how far apart
// their commits were.
type PairStat struct {
	Count     int           `json:"count"`
	MeanDelta time.Duration `json:"mean_delta_ns"`
	MaxDelta  time.Duration `json:"max_delta_ns"`
	sum       time.Duration
}

// CommitOrder is the commit-order report of one run.
type CommitOrder struct {
	Events          int `json:"events"`
	WithoutCommitTS int `json:"without_commit_ts"`
	// Displaced events hold a different rank by key than by commit.
	Displaced int `json:"displaced"`
	// InvertedPairs are (i, j) with key_i < key_j but commit_i after commit_j.
	InvertedPairs int                   `json:"inverted_pairs"`
	Pairs         map[TypePair]PairStat `json:"-"`
}

// AddTo accumulates o into total (pairs included).
func (o CommitOrder) AddTo(total *CommitOrder) {
	total.Events += o.Events
	total.WithoutCommitTS += o.WithoutCommitTS
	total.Displaced += o.Displaced
	total.InvertedPairs += o.InvertedPairs
	if total.Pairs == nil {
		total.Pairs = map[TypePair]PairStat{}
	}
	for k, v := range o.Pairs {
		t := total.Pairs[k]
		t.Count += v.Count
		t.sum += v.sum
		t.MaxDelta = max(t.MaxDelta, v.MaxDelta)
		if t.Count > 0 {
			t.MeanDelta = t.sum / time.Duration(t.Count)
		}
		total.Pairs[k] = t
	}
}

// PairCount is one type pair's inversions.
type PairCount struct {
	TypePair
	PairStat
}

// SortedPairs returns the type pairs by descending count (then by name).
func (o CommitOrder) SortedPairs() []PairCount {
	out := make([]PairCount, 0, len(o.Pairs))
	for k, v := range o.Pairs {
		out = append(out, PairCount{k, v})
	}
	slices.SortFunc(out, func(a, b PairCount) int {
		if a.Count != b.Count {
			return b.Count - a.Count
		}
		if a.Overtaking != b.Overtaking {
			return strings.Compare(string(a.Overtaking), string(b.Overtaking))
		}
		return strings.Compare(string(a.Overtaken), string(b.Overtaken))
	})
	return out
}

// AnalyzeCommitOrder compares key order with commit order in O(n log n):
// one sort and one merge-sort pass that counts inverted pairs per type pair
// with their commit deltas, with no n^2 loop. It sorts positions rather than
// events, keeps per-type tallies in small arrays and reuses its working
// memory across calls.
//
// Both orders are total, and agree wherever they can:
//   - key order is seq when bySeq, else id; events with equal keys (a
//     duplicate) follow commit order, so a duplicate makes no pair;
//   - commit order is the commit time, ties broken by Tie (the transaction
//     id), then by key order, then by id, so events committed together make
//     no pair.
//
// An inverted pair is two events in one order and the other way round in
// the other; an event is displaced when its rank differs between them.
// Events without a commit time are counted and left out of both.
func AnalyzeCommitOrder(evs []CommitEvent, bySeq bool) CommitOrder {
	out := CommitOrder{Events: len(evs), Pairs: map[TypePair]PairStat{}}
	w := scratchPool.Get().(*scratch)
	defer scratchPool.Put(w)
	// timed holds the positions in evs of the events with a commit time,
	// first in input order, then in key order; kind their types' indexes.
	timed := w.timed[:0]
	kind := resize(&w.kind, len(evs))
	types := w.types[:0]
	var typeIdx map[eventlog.Type]int32 // past smallTypes types
	for i := range evs {
		e := &evs[i]
		if e.CommitAt.IsZero() {
			out.WithoutCommitTS++
			continue
		}
		k := int32(-1)
		if typeIdx != nil {
			if j, ok := typeIdx[e.Type]; ok {
				k = j
			}
		} else {
			for j, t := range types {
				if t == e.Type {
					k = int32(j)
					break
				}
			}
		}
		if k < 0 {
			k = int32(len(types))
			types = append(types, e.Type)
			if typeIdx != nil {
				typeIdx[e.Type] = k
			} else if len(types) > smallTypes {
				typeIdx = make(map[eventlog.Type]int32, len(types))
				for j, t := range types {
					typeIdx[t] = int32(j)
				}
			}
		}
		kind[i] = k
		timed = append(timed, int32(i))
	}
	w.timed, w.types = timed, types
	defer clear(w.types) // the pool keeps no strings alive
	byKey := func(x, y int32) int {
		a, b := &evs[x], &evs[y]
		if c := keyCompare(a, b, bySeq); c != 0 {
			return c
		}
		return commitCompare(a, b, bySeq)
	}
	if !slices.IsSortedFunc(timed, byKey) { // a log read in key order is common
		slices.SortStableFunc(timed, byKey)
	}
	keyOrder := resize(&w.keyOrder, len(timed))
	copy(keyOrder, timed)
	m := merger{evs: evs, kind: kind, types: len(types), bySeq: bySeq}
	m.init(timed, w)
	m.sort(timed, resize(&w.tmp, len(timed)))
	// timed is now in commit order. An event is displaced when another holds
	// its key rank there.
	for i := range timed {
		if keyOrder[i] != timed[i] {
			out.Displaced++
		}
	}
	out.InvertedPairs = m.inversions
	add := func(i int, p PairStat) {
		if p.Count == 0 {
			return
		}
		p.MeanDelta = p.sum / time.Duration(p.Count)
		out.Pairs[TypePair{Overtaking: types[i/len(types)], Overtaken: types[i%len(types)]}] = p
	}
	for i, p := range m.pairs {
		add(i, p)
	}
	for i, p := range m.sparse {
		add(i, *p)
	}
	return out
}

// smallTypes is how many distinct types AnalyzeCommitOrder looks up by a
// linear scan before it builds a map.
const smallTypes = 16

// scratch is AnalyzeCommitOrder's working memory, reused across calls.
type scratch struct {
	timed, kind, keyOrder, tmp, max []int32
	keys                            []int64
	n                               []int
	sum                             []time.Duration
	pairs                           []PairStat
	types                           []eventlog.Type
}

var scratchPool = sync.Pool{New: func() any { return new(scratch) }}

// resize makes *s n long and zeroed, reusing its array when large enough.
func resize[T any](s *[]T, n int) []T {
	if cap(*s) < n {
		*s = make([]T, n)
	} else {
		*s = (*s)[:n]
		clear(*s)
	}
	return *s
}

// keyCompare orders events by key: seq when bySeq, else id.
func keyCompare(a, b *CommitEvent, bySeq bool) int {
	if bySeq {
		return cmp.Compare(a.Seq, b.Seq)
	}
	return strings.Compare(a.ID, b.ID)
}

// commitCompare orders events by commit time, ties broken by Tie, then by
// key, then by id.
func commitCompare(a, b *CommitEvent, bySeq bool) int {
	if c := a.CommitAt.Compare(b.CommitAt); c != 0 {
		return c
	}
	return tieCompare(a, b, bySeq)
}

// tieCompare orders events of equal commit times.
func tieCompare(a, b *CommitEvent, bySeq bool) int {
	if a.Tie != b.Tie {
		return cmp.Compare(a.Tie, b.Tie)
	}
	if c := keyCompare(a, b, bySeq); c != 0 {
		return c
	}
	return strings.Compare(a.ID, b.ID)
}

// merger counts inversions of a key-ordered slice of positions in evs
// against commit order.
type merger struct {
	evs        []CommitEvent
	kind       []int32 // type index per position in evs
	types      int
	bySeq      bool
	inversions int
	// keys, when keyed, hold each timed event's CommitAt as a duration since
	// one of them: comparing and subtracting keys is then exactly comparing
	// and subtracting the times (see keyTimes), only faster.
	keys  []int64
	keyed bool
	// pairs is a types x types matrix indexed overtaking*types+overtaken;
	// past denseTypes types, a map with the same indexes.
	pairs  []PairStat
	sparse map[int]*PairStat
	// Per type, during one merge: how many left-half events remain, the sum
	// of their commit times after the half's first, and the position of the
	// latest commit in the half (-1: none yet); the remaining events are the
	// latest of the half.
	n   []int
	sum []time.Duration
	max []int32
}

// denseTypes bounds the type count whose pair matrix is kept dense.
const denseTypes = 64

func (m *merger) init(timed []int32, w *scratch) {
	if m.types <= denseTypes {
		m.pairs = resize(&w.pairs, m.types*m.types)
	} else {
		m.sparse = map[int]*PairStat{}
	}
	m.n = resize(&w.n, m.types)
	m.sum = resize(&w.sum, m.types)
	m.max = resize(&w.max, m.types)
	m.keyTimes(timed, w)
}

// keyLimit bounds the keys: any two differ by less than the largest
// Duration, so no subtraction of keys or times saturates.
const keyLimit = 1 << 62

// keyTimes computes the keys when that is exact: when either all timed
// events carry a monotonic clock reading or none does (time.Time compares
// and subtracts two times by their monotonic readings only when both have
// one), and the times span less than keyLimit.
func (m *merger) keyTimes(timed []int32, w *scratch) {
	if len(timed) == 0 {
		return
	}
	ref := m.evs[timed[0]].CommitAt
	mono := ref != ref.Round(0)
	keys := resize(&w.keys, len(m.evs))
	for _, x := range timed {
		t := m.evs[x].CommitAt
		d := t.Sub(ref)
		if (t != t.Round(0)) != mono || d >= keyLimit || d <= -keyLimit {
			return
		}
		keys[x] = int64(d)
	}
	m.keys, m.keyed = keys, true
}

// less reports whether the event at position x comes before the one at y
// in commit order (commitCompare).
func (m *merger) less(x, y int32) bool {
	a, b := &m.evs[x], &m.evs[y]
	if !m.keyed {
		return commitCompare(a, b, m.bySeq) < 0
	}
	if ka, kb := m.keys[x], m.keys[y]; ka != kb {
		return ka < kb
	}
	return tieCompare(a, b, m.bySeq) < 0
}

// sub is the commit time at position x minus the one at y (y < 0: the zero
// time).
func (m *merger) sub(x, y int32) time.Duration {
	switch {
	case y < 0:
		return m.evs[x].CommitAt.Sub(time.Time{})
	case m.keyed:
		return time.Duration(m.keys[x] - m.keys[y])
	}
	return m.evs[x].CommitAt.Sub(m.evs[y].CommitAt)
}

// later reports whether the commit at x is after the one at y (y < 0: the
// zero time).
func (m *merger) later(x, y int32) bool {
	switch {
	case y < 0:
		return m.evs[x].CommitAt.After(time.Time{})
	case m.keyed:
		return m.keys[x] > m.keys[y]
	}
	return m.evs[x].CommitAt.After(m.evs[y].CommitAt)
}

// maxSub is the latest commit of type typ in the left half minus the commit
// at r.
func (m *merger) maxSub(typ int, r int32) time.Duration {
	if y := m.max[typ]; y >= 0 {
		return m.sub(y, r)
	}
	return time.Time{}.Sub(m.evs[r].CommitAt)
}

// pair returns the tally of type over overtaking type under.
func (m *merger) pair(over, under int) *PairStat {
	i := over*m.types + under
	if m.sparse == nil {
		return &m.pairs[i]
	}
	p := m.sparse[i]
	if p == nil {
		p = &PairStat{}
		m.sparse[i] = p
	}
	return p
}

// sort merge-sorts a (key order) into commit order. When an element of the
// right half (later key) commits before elements still left in the left half
// (earlier key, later commit), it overtook each of them.
func (m *merger) sort(a, tmp []int32) {
	if len(a) < 2 {
		return
	}
	mid := len(a) / 2
	m.sort(a[:mid], tmp[:mid])
	m.sort(a[mid:], tmp[mid:])
	clear(m.n)
	clear(m.sum)
	for k := range m.max {
		m.max[k] = -1
	}
	epoch := a[0]
	for _, x := range a[:mid] {
		k := m.kind[x]
		m.n[k]++
		m.sum[k] += m.sub(x, epoch)
		if m.later(x, m.max[k]) {
			m.max[k] = x
		}
	}
	i, j, k := 0, mid, 0
	remaining := mid
	for i < mid && j < len(a) {
		if r := a[j]; m.less(r, a[i]) {
			m.inversions += remaining
			over := int(m.kind[r])
			since := m.sub(r, epoch)
			for typ, n := range m.n {
				if n == 0 {
					continue
				}
				s := m.pair(over, typ)
				s.Count += n
				s.sum += m.sum[typ] - time.Duration(n)*since
				s.MaxDelta = max(s.MaxDelta, m.maxSub(typ, r))
			}
			tmp[k] = r
			j++
		} else {
			x := a[i]
			t := m.kind[x]
			m.n[t]--
			m.sum[t] -= m.sub(x, epoch)
			remaining--
			tmp[k] = x
			i++
		}
		k++
	}
	k += copy(tmp[k:], a[i:mid])
	copy(tmp[k:], a[j:])
	copy(a, tmp[:len(a)])
}

// checkCommitOrder compares the run's key order with its commit order
// (AnalyzeCommitOrder): inverted pairs and displaced events. In a
// positioned scheme an unpositioned event has no key to be out of order
// with: it is left out of the comparison and counted as an event only.
func checkCommitOrder(r *run, f *RunFindings) {
	ordered := r.commits
	untimed := 0
	if r.Scheme.Positioned() {
		ordered = make([]CommitEvent, 0, len(r.commits))
		for _, e := range r.commits {
			switch {
			case e.Seq >= 1:
				ordered = append(ordered, e)
			case e.CommitAt.IsZero():
				untimed++
			}
		}
	}
	r.order = AnalyzeCommitOrder(ordered, r.Scheme.Positioned())
	r.order.Events, r.order.WithoutCommitTS = len(r.commits), r.order.WithoutCommitTS+untimed
	f.Inversions, f.Displaced = r.order.InvertedPairs, r.order.Displaced
}
