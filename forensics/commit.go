package forensics

import (
	"slices"
	"sort"
	"time"

	"github.com/stormctl/stormctl/eventlog"
	"gonum.org/v1/gonum/stat"
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

// SortedPairs returns the type pairs by descending count.
func (o CommitOrder) SortedPairs() []struct {
	TypePair
	PairStat
} {
	out := make([]struct {
		TypePair
		PairStat
	}, 0, len(o.Pairs))
	for k, v := range o.Pairs {
		out = append(out, struct {
			TypePair
			PairStat
		}{k, v})
	}
	slices.SortFunc(out, func(a, b struct {
		TypePair
		PairStat
	}) int {
		if a.Count != b.Count {
			return b.Count - a.Count
		}
		if a.Overtaking != b.Overtaking {
			return compareStr(string(a.Overtaking), string(b.Overtaking))
		}
		return compareStr(string(a.Overtaken), string(b.Overtaken))
	})
	return out
}

func compareStr(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// AnalyzeCommitOrder compares key order (seq when byseq, else id) with
// commit order in O(n log n): one sort and one merge-sort pass that counts
// inverted pairs per type pair with their commit deltas, with no n^2 loop.
func AnalyzeCommitOrder(evs []CommitEvent, bySeq bool) CommitOrder {
	out := CommitOrder{Events: len(evs), Pairs: map[TypePair]PairStat{}}
	timed := make([]CommitEvent, 0, len(evs))
	for _, e := range evs {
		if e.CommitAt.IsZero() {
			out.WithoutCommitTS++
			continue
		}
		timed = append(timed, e)
	}
	slices.SortStableFunc(timed, func(a, b CommitEvent) int {
		if bySeq && a.Seq != b.Seq {
			return int(sign(a.Seq - b.Seq))
		}
		return compareStr(a.ID, b.ID)
	})
	commitLess := func(a, b CommitEvent) bool {
		if !a.CommitAt.Equal(b.CommitAt) {
			return a.CommitAt.Before(b.CommitAt)
		}
		if a.Tie != b.Tie {
			return a.Tie < b.Tie
		}
		return a.ID < b.ID
	}
	byCommit := slices.Clone(timed)
	slices.SortStableFunc(byCommit, func(a, b CommitEvent) int {
		switch {
		case commitLess(a, b):
			return -1
		case commitLess(b, a):
			return 1
		}
		return 0
	})
	for i := range timed {
		if timed[i].ID != byCommit[i].ID {
			out.Displaced++
		}
	}
	m := merger{less: commitLess, pairs: out.Pairs}
	m.sort(timed, make([]CommitEvent, len(timed)))
	out.InvertedPairs = m.inversions
	for k, v := range out.Pairs {
		v.MeanDelta = v.sum / time.Duration(v.Count)
		out.Pairs[k] = v
	}
	return out
}

func sign(x int64) int64 {
	switch {
	case x < 0:
		return -1
	case x > 0:
		return 1
	}
	return 0
}

// merger counts inversions of a key-ordered slice against commit order.
type merger struct {
	less       func(a, b CommitEvent) bool
	pairs      map[TypePair]PairStat
	inversions int
}

// sort merge-sorts a (key order) into commit order. When an element of the
// right half (later key) commits before elements still left in the left half
// (earlier key, later commit), it overtook each of them.
func (m *merger) sort(a, tmp []CommitEvent) {
	if len(a) < 2 {
		return
	}
	mid := len(a) / 2
	m.sort(a[:mid], tmp[:mid])
	m.sort(a[mid:], tmp[mid:])
	// Per type, how many left-half elements remain and the sum and maximum
	// of their commit times: the remaining ones are the latest of the half.
	type agg struct {
		n   int
		sum time.Duration
		max time.Time
	}
	left := map[eventlog.Type]*agg{}
	var epoch time.Time
	for _, e := range a[:mid] {
		g := left[e.Type]
		if g == nil {
			g = &agg{}
			left[e.Type] = g
		}
		g.n++
		if epoch.IsZero() {
			epoch = e.CommitAt
		}
		g.sum += e.CommitAt.Sub(epoch)
		if e.CommitAt.After(g.max) {
			g.max = e.CommitAt
		}
	}
	i, j, k := 0, mid, 0
	remaining := mid
	for i < mid && j < len(a) {
		if m.less(a[j], a[i]) {
			r := a[j]
			m.inversions += remaining
			for typ, g := range left {
				if g.n == 0 {
					continue
				}
				p := TypePair{Overtaking: r.Type, Overtaken: typ}
				s := m.pairs[p]
				s.Count += g.n
				s.sum += g.sum - time.Duration(g.n)*r.CommitAt.Sub(epoch)
				s.MaxDelta = max(s.MaxDelta, g.max.Sub(r.CommitAt))
				m.pairs[p] = s
			}
			tmp[k] = r
			j++
		} else {
			e := a[i]
			g := left[e.Type]
			g.n--
			g.sum -= e.CommitAt.Sub(epoch)
			remaining--
			tmp[k] = e
			i++
		}
		k++
	}
	k += copy(tmp[k:], a[i:mid])
	copy(tmp[k:], a[j:])
	copy(a, tmp[:len(a)])
}

// Window summarizes the mint-to-commit windows of one event type.
type Window struct {
	N   int           `json:"n"`
	P50 time.Duration `json:"p50_ns"`
	P90 time.Duration `json:"p90_ns"`
	P99 time.Duration `json:"p99_ns"`
	Max time.Duration `json:"max_ns"`
}

// Windows computes per-type mint-to-commit quantiles (gonum/stat empirical
// quantiles) over events that know both times.
func Windows(evs []CommitEvent) map[eventlog.Type]Window {
	byType := map[eventlog.Type][]float64{}
	for _, e := range evs {
		if e.MintedAt.IsZero() || e.CommitAt.IsZero() {
			continue
		}
		byType[e.Type] = append(byType[e.Type], float64(e.CommitAt.Sub(e.MintedAt)))
	}
	out := map[eventlog.Type]Window{}
	for typ, xs := range byType {
		sort.Float64s(xs)
		q := func(p float64) time.Duration { return time.Duration(stat.Quantile(p, stat.Empirical, xs, nil)) }
		out[typ] = Window{N: len(xs), P50: q(0.5), P90: q(0.9), P99: q(0.99), Max: time.Duration(xs[len(xs)-1])}
	}
	return out
}

// DensityOf counts holes, repeats and unpositioned events of a positioned
// run's events, in any order.
func DensityOf(evs []CommitEvent) (gaps, dups, unpositioned int) {
	ks := make([]keyed, len(evs))
	for i, e := range evs {
		ks[i] = keyed{id: e.ID, seq: e.Seq}
	}
	slices.SortFunc(ks, func(a, b keyed) int { return int(sign(a.seq - b.seq)) })
	return Density(ks)
}
