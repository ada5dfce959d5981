package pgattach

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stormctl/stormctl/forensics"
	"github.com/stormctl/stormctl/internal/eventlog"
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
	c := newCollected(false)
	want := map[string][]string{}
	for i := range 5000 {
		run := fmt.Sprintf("wrun_%03d", rng.IntN(300))
		id := fmt.Sprintf("wevt_%05d", i)
		if err := c.add([]byte(run), []byte(id), []byte("step_created"), 0, noCommit, 0); err != nil {
			panic(err)
		}
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

// TestCollectedKeepsRows: every row added comes back whole from its run,
// in arrival order, across blocks of every size (ids from empty to longer
// than the largest block), while the caller reuses its buffers; the commit
// times survive the round trip to the microsecond, and a row without one
// comes back without one.
func TestCollectedKeepsRows(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	c := newCollected(true) // rows with a seq column: their seqs come back
	base := time.Date(2026, 12, 2, 20, 0, 0, 123456000, time.UTC)
	want := map[string][]forensics.CommitEvent{}
	buf := make([]byte, 0, 2*maxBlock)
	for i := range 20000 {
		run := fmt.Sprintf("wrun_%02d", rng.IntN(40))
		n := rng.IntN(40)
		if i%997 == 0 {
			n = maxBlock + rng.IntN(maxBlock) // a record larger than any block
		}
		id := fmt.Sprintf("%d:%s", i, strings.Repeat("x", n))
		if i%500 == 0 {
			id = ""
		}
		e := forensics.CommitEvent{ID: id, Seq: int64(i), Type: eventlog.Types()[i%len(eventlog.Types())], Tie: uint64(i)}
		commit := int64(noCommit)
		if i%7 != 0 {
			e.CommitAt = base.Add(time.Duration(i-10000) * time.Millisecond)
			if i%1001 == 1 { // before PostgreSQL's epoch and before Unix's
				e.CommitAt = time.Date(1969, 12, 31, 23, 59, 59, 999999000, time.UTC).Add(-time.Duration(i) * time.Microsecond)
			}
			commit = commitMicros(e.CommitAt)
		}
		buf = append(buf[:0], id...)
		if err := c.add([]byte(run), buf, []byte(e.Type), e.Seq, commit, uint32(e.Tie)); err != nil {
			t.Fatal(err)
		}
		clear(buf) // the caller reuses its buffer
		want[run] = append(want[run], e)
	}
	err := c.each(func(r Run) error {
		if len(r.Events) != len(want[r.ID]) {
			t.Fatalf("run %s: %d events, want %d", r.ID, len(r.Events), len(want[r.ID]))
		}
		for i, got := range r.Events {
			w := want[r.ID][i]
			if got.ID != w.ID || got.Seq != w.Seq || got.Type != w.Type || got.Tie != w.Tie || !got.CommitAt.Equal(w.CommitAt) || got.CommitAt.IsZero() != w.CommitAt.IsZero() {
				t.Fatalf("run %s event %d: got %+v, want %+v", r.ID, i, got, w)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.add([]byte("r"), make([]byte, maxID), []byte("t"), 0, 0, 0); err == nil {
		t.Fatal("an id of maxID bytes was taken")
	}
}
