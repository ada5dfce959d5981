// Package ddmin is delta debugging over a set of elements: the smallest
// subset a test still fails on, one candidate replay at a time. Both
// shrinks use it: the model's schedule and a devkit run's recorded reads.
package ddmin

import (
	"context"
	"slices"
	"strconv"
	"strings"
)

// Min is delta debugging (Zeller and Hildebrandt's ddmin) over the
// elements 0..n-1, test saying whether a candidate keeping some of them
// still fails (the whole set does: the caller checked). It tries removing
// chunks at halving granularity, from halves down to single elements; a
// removal that still fails is kept and the sweep goes on from the same
// place at the same granularity, instead of ddmin's restart from two
// halves, which turns quadratic when most elements are needed (a replay
// of a long log needs most of its facts). The result fails and is
// 1-minimal: removing any one element loses the failure. When ctx ends
// first it is the smallest failing subset found. test is asked of each
// candidate once.
func Min(ctx context.Context, n int, test func(keep []int) bool) []int {
	elems := make([]int, n)
	for i := range elems {
		elems[i] = i
	}
	seen := map[string]bool{}
	fails := func(keep []int) bool {
		k := key(keep)
		if v, ok := seen[k]; ok {
			return v
		}
		if ctx.Err() != nil {
			return false
		}
		v := test(keep)
		seen[k] = v
		return v
	}
	if n > 0 && fails(nil) {
		return nil
	}
	for size := max(len(elems)/2, 1); ctx.Err() == nil; size = max(size/2, 1) {
		removed := false
		for i := 0; i < len(elems) && ctx.Err() == nil; {
			cand := append(slices.Clone(elems[:i]), elems[min(i+size, len(elems)):]...)
			if len(cand) < len(elems) && fails(cand) {
				elems, removed = cand, true
				continue
			}
			i += size
		}
		if size == 1 && !removed {
			break
		}
	}
	return elems
}

// key identifies a candidate.
func key(keep []int) string {
	var b strings.Builder
	for _, x := range keep {
		b.WriteString(strconv.Itoa(x))
		b.WriteByte(',')
	}
	return b.String()
}
