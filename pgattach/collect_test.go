package pgattach

import (
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
	rng := rand.New(rand.NewPCG(1, 2))
	var c collected
	c.runIdx = map[string]int32{}
	want := map[string][]string{}
	for i := range 5000 {
		run := fmt.Sprintf("wrun_%03d", rng.IntN(300))
		id := fmt.Sprintf("wevt_%05d", i)
		c.events = append(c.events, forensics.CommitEvent{ID: c.ids.copy([]byte(id))})
		c.runOf = append(c.runOf, c.run([]byte(run)))
		want[run] = append(want[run], id)
	}
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
