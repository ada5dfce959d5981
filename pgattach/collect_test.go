package pgattach

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/stormctl/stormctl/forensics"
)

// TestEachGroupsRunsStably checks the in-place grouping: every run once, in
// run id order, with its events in arrival order, each run's slice ending
// its capacity (an append must not write into the next run).
func TestEachGroupsRunsStably(t *testing.T) {
	c, want := randomCollected(1)
	var order []string
	err := c.each(func(r Run) error {
		order = append(order, r.ID)
		var got []string
		for _, e := range r.Events {
			got = append(got, e.ID)
		}
		if !slices.Equal(got, want[r.ID]) {
			t.Fatalf("run %s: events %v, want %v", r.ID, got, want[r.ID])
		}
		if cap(r.Events) != len(r.Events) {
			t.Fatalf("run %s: capacity %d past its %d events", r.ID, cap(r.Events), len(r.Events))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(order) != len(want) || !slices.IsSorted(order) {
		t.Fatalf("runs %v: want each of the %d runs once, in id order", order, len(want))
	}
}

// randomCollected is rows of 300 runs in random arrival order, with what
// each run should hold.
func randomCollected(seed uint64) (*collected, map[string][]string) {
	rng := rand.New(rand.NewPCG(seed, 2))
	c := &collected{runIdx: map[string]int32{}}
	want := map[string][]string{}
	for i := range 5000 {
		run := fmt.Sprintf("wrun_%03d", rng.IntN(300))
		id := fmt.Sprintf("wevt_%05d", i)
		c.events = append(c.events, forensics.CommitEvent{ID: c.ids.copy([]byte(id))})
		c.runOf = append(c.runOf, c.run([]byte(run)))
		want[run] = append(want[run], id)
	}
	return c, want
}

// TestEachParallel: analyzed from several goroutines, every run is still
// collected once, in run id order, with its own analysis; a failing collect
// stops the rest and its error comes back.
func TestEachParallel(t *testing.T) {
	ids := func(r Run) []string {
		var out []string
		for _, e := range r.Events {
			out = append(out, e.ID)
		}
		return out
	}
	for _, workers := range []int{1, 2, 7} {
		t.Run(fmt.Sprintf("%d workers", workers), func(t *testing.T) {
			c, want := randomCollected(uint64(workers))
			var order []string
			analyze := func(w int, r Run) []string {
				if w < 0 || w >= workers {
					t.Errorf("worker %d of %d", w, workers)
				}
				return ids(r)
			}
			err := eachParallel(t.Context(), c.group(), workers, analyze, func(id string, got []string) error {
				order = append(order, id)
				if !slices.Equal(got, want[id]) {
					t.Fatalf("run %s: analyzed %v, want %v", id, got, want[id])
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if len(order) != len(want) || !slices.IsSorted(order) {
				t.Fatalf("collected %d runs (sorted: %v), want each of the %d once, in id order", len(order), slices.IsSorted(order), len(want))
			}
		})
	}
	t.Run("collect fails", func(t *testing.T) {
		c, _ := randomCollected(9)
		boom := errors.New("boom")
		n := 0
		err := eachParallel(t.Context(), c.group(), 2, func(_ int, r Run) int { return len(r.Events) }, func(string, int) error {
			if n++; n == 100 {
				return boom
			}
			return nil
		})
		if !errors.Is(err, boom) || n != 100 {
			t.Fatalf("err = %v after %d collects, want boom after 100", err, n)
		}
	})
}

// TestStringBlocks checks that strings copied into shared blocks keep their
// bytes as more are written, across block boundaries, and that the caller's
// buffer can be reused.
func TestStringBlocks(t *testing.T) {
	var s stringBlocks
	buf := make([]byte, 0, 4096)
	var got, want []string
	for i := range 20000 {
		w := strings.Repeat(string(rune('a'+i%26)), 1+i%40)
		if i%5000 == 0 {
			w = strings.Repeat("x", blockSize+3) // larger than a block
		}
		buf = append(buf[:0], w...)
		got, want = append(got, s.copy(buf)), append(want, w)
		buf[0] = '!' // the caller reuses its buffer
	}
	if !slices.Equal(got, want) {
		t.Fatal("a copied string changed")
	}
}
