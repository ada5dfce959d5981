package forensics

import (
	"slices"
	"time"

	"gonum.org/v1/gonum/stat"

	"github.com/stormctl/stormctl/internal/eventlog"
)

// This file measures mint-to-commit windows: how long each event took from
// its id's minting to its commit, per event type, the window in which a
// reader can miss an event that will sort before what it has read.

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
	var s WindowSet
	s.Add(evs)
	return s.Windows()
}

// WindowSet gathers mint-to-commit windows run after run, keeping one number
// per event instead of the events: Windows over the union of everything
// added equals Windows of all those events at once.
type WindowSet struct {
	types []eventlog.Type
	xs    [][]float64           // per type, as in types
	index map[eventlog.Type]int // past smallTypes types
}

// Add adds the windows of the events that know both times.
func (s *WindowSet) Add(evs []CommitEvent) {
	for i := range evs {
		e := &evs[i]
		if e.MintedAt.IsZero() || e.CommitAt.IsZero() {
			continue
		}
		k := s.slot(e.Type)
		s.xs[k] = append(s.xs[k], float64(e.CommitAt.Sub(e.MintedAt)))
	}
}

// slot returns the index of typ in s.types, adding it if new.
func (s *WindowSet) slot(typ eventlog.Type) int {
	if s.index != nil {
		if k, ok := s.index[typ]; ok {
			return k
		}
	} else {
		for k, t := range s.types {
			if t == typ {
				return k
			}
		}
	}
	k := len(s.types)
	s.types, s.xs = append(s.types, typ), append(s.xs, nil)
	switch {
	case s.index != nil:
		s.index[typ] = k
	case len(s.types) > smallTypes:
		s.index = make(map[eventlog.Type]int, len(s.types))
		for j, t := range s.types {
			s.index[t] = j
		}
	}
	return k
}

// Samples returns a copy of every window added so far, in nanoseconds, per
// type.
func (s *WindowSet) Samples() map[eventlog.Type][]float64 {
	out := make(map[eventlog.Type][]float64, len(s.types))
	for k, typ := range s.types {
		out[typ] = slices.Clone(s.xs[k])
	}
	return out
}

// Merge adds everything o holds to s (o is left as it was).
func (s *WindowSet) Merge(o *WindowSet) {
	for k, typ := range o.types {
		j := s.slot(typ)
		s.xs[j] = append(s.xs[j], o.xs[k]...)
	}
}

// Windows returns the quantiles of everything added so far.
func (s *WindowSet) Windows() map[eventlog.Type]Window {
	out := map[eventlog.Type]Window{}
	for k, typ := range s.types {
		out[typ] = WindowOf(s.xs[k])
	}
	return out
}

// WindowOf summarizes windows (nanoseconds) with gonum/stat's empirical
// quantiles, sorting xs in place; no windows summarize to the zero Window.
func WindowOf(xs []float64) Window {
	if len(xs) == 0 {
		return Window{}
	}
	slices.Sort(xs)
	q := func(p float64) time.Duration { return time.Duration(stat.Quantile(p, stat.Empirical, xs, nil)) }
	return Window{N: len(xs), P50: q(0.5), P90: q(0.9), P99: q(0.99), Max: time.Duration(xs[len(xs)-1])}
}
