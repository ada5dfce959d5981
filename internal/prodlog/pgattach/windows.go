package pgattach

import (
	"sync/atomic"

	"golang.org/x/sync/errgroup"

	"github.com/stormctl/stormctl/forensics"
	"github.com/stormctl/stormctl/internal/eventlog"
)

// windowSlots gathers the mint-to-commit windows of every run from several
// workers at once into one array per event type, each sized up front from
// the rows (the events of the type with a commit time bound its windows):
// no array grows, none is merged, and each type's is sorted on its own core.
type windowSlots struct {
	index map[eventlog.Type]int
	types []eventlog.Type
	xs    [][]float64
	n     []atomic.Int64 // per type: windows written
}

func newWindowSlots(t *collected) *windowSlots {
	counts := t.timed
	s := &windowSlots{index: make(map[eventlog.Type]int, len(t.types)), types: t.types,
		xs: make([][]float64, len(t.types)), n: make([]atomic.Int64, len(t.types))}
	for k, typ := range t.types {
		s.index[typ] = k
		s.xs[k] = make([]float64, counts[k])
	}
	return s
}

// add adds the windows of one run's events (those that know both times),
// gathering them per type in local first, a worker's scratch that add
// returns for the next call, then taking room for each type's at once.
func (s *windowSlots) add(local [][]float64, evs []forensics.CommitEvent) [][]float64 {
	if len(local) < len(s.types) {
		local = make([][]float64, len(s.types))
	}
	for i := range evs {
		e := &evs[i]
		if e.MintedAt.IsZero() || e.CommitAt.IsZero() {
			continue
		}
		k := s.index[e.Type]
		local[k] = append(local[k], float64(e.CommitAt.Sub(e.MintedAt)))
	}
	for k, xs := range local {
		if len(xs) == 0 {
			continue
		}
		end := int(s.n[k].Add(int64(len(xs))))
		copy(s.xs[k][end-len(xs):end], xs)
		local[k] = xs[:0]
	}
	return local
}

// windows summarizes each type's windows, sorting up to workers types at
// once; a type none of whose events knew both times is left out.
func (s *windowSlots) windows(workers int) map[eventlog.Type]forensics.Window {
	out := make([]forensics.Window, len(s.types))
	var g errgroup.Group
	g.SetLimit(max(workers, 1))
	for k := range s.types {
		g.Go(func() error {
			out[k] = forensics.WindowOf(s.xs[k][:s.n[k].Load()])
			return nil
		})
	}
	_ = g.Wait() // nothing fails
	m := make(map[eventlog.Type]forensics.Window, len(s.types))
	for k, typ := range s.types {
		if out[k].N > 0 {
			m[typ] = out[k]
		}
	}
	return m
}
