package ddmin

import (
	"context"
	"slices"
	"testing"
)

// TestDDMin: delta debugging finds a 1-minimal failing subset (the one
// needed set, when there is one), whether few or most elements are
// needed, asks each candidate once, and stops at the smallest failing one
// found when its context ends.
func TestDDMin(t *testing.T) {
	t.Parallel()
	// needs fails when every one of want is kept.
	needs := func(want ...int) func([]int) bool {
		return func(keep []int) bool {
			for _, w := range want {
				if !slices.Contains(keep, w) {
					return false
				}
			}
			return true
		}
	}
	// most is 0..39 but 5, 17 and 30.
	var most []int
	for i := range 40 {
		if i != 5 && i != 17 && i != 30 {
			most = append(most, i)
		}
	}
	for _, tc := range []struct {
		name string
		n    int
		test func([]int) bool
		want []int
	}{
		{"one of many", 100, needs(37), []int{37}},
		{"two far apart", 64, needs(3, 60), []int{3, 60}},
		{"three adjacent", 30, needs(10, 11, 12), []int{10, 11, 12}},
		{"nothing needed", 8, needs(), nil},
		{"all needed", 5, needs(0, 1, 2, 3, 4), []int{0, 1, 2, 3, 4}},
		{"either of two", 16, func(keep []int) bool { return slices.Contains(keep, 2) || slices.Contains(keep, 9) }, []int{9}},
		{"most needed", 40, needs(most...), most},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			asked := map[string]int{}
			got := Min(context.Background(), tc.n, func(keep []int) bool {
				asked[key(keep)]++
				return tc.test(keep)
			})
			if !slices.Equal(got, tc.want) {
				t.Errorf("ddmin = %v, want %v", got, tc.want)
			}
			for k, n := range asked {
				if n > 1 {
					t.Errorf("candidate %s asked %d times", k, n)
				}
			}
		})
	}
	ctx, cancel := context.WithCancel(context.Background())
	tests := 0
	got := Min(ctx, 100, func(keep []int) bool {
		if tests++; tests == 3 {
			cancel()
		}
		return slices.Contains(keep, 37)
	})
	if !slices.Contains(got, 37) || len(got) == 1 || len(got) == 100 {
		t.Errorf("ddmin stopped after 3 tests = %d elements %v, want a failing subset smaller than all, not yet minimal", len(got), got)
	}
}
