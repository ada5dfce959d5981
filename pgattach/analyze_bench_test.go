package pgattach

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"testing"
	"time"

	"github.com/oklog/ulid/v2"

	"github.com/stormctl/stormctl/eventlog"
	"github.com/stormctl/stormctl/forensics"
)

// BenchmarkAttachAnalysis measures what attach-mode forensics does with the
// rows once they are read, without a server: group 1,000,000 events by run
// (10,000 runs), then examine the runs on every core and gather the windows,
// as pgattach.Forensics does for `stormctl forensics --pg-url`. The events are shaped like the
// forensics benchmark's table (bench/): ids minted in batches of 50 whose
// commits interleave.
func BenchmarkAttachAnalysis(b *testing.B) {
	const events, runs, batch = 1_000_000, 10_000, 50
	rng := rand.New(rand.NewPCG(1, 1))
	types := eventlog.Types()
	runIDs := make([]string, runs)
	for i := range runIDs {
		runIDs[i] = fmt.Sprintf("wrun_%026d", i)
	}
	base := time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC)
	type row struct {
		run int
		e   forensics.CommitEvent
	}
	rows := make([]row, events)
	entropy := ulid.Monotonic(rand.NewChaCha8([32]byte{1}), 0)
	for i := range rows {
		minted := base.Add(time.Duration(i) * 20 * time.Microsecond)
		tx := i / batch
		commit := base.Add(time.Duration(tx*batch)*20*time.Microsecond + time.Duration(rng.IntN(8000))*time.Microsecond)
		id := "wevt_" + ulid.MustNew(ulid.Timestamp(minted), entropy).String()
		rows[i] = row{rng.IntN(runs), forensics.CommitEvent{ID: id, Type: types[rng.IntN(len(types))],
			MintedAt: minted.Truncate(time.Millisecond), CommitAt: commit, Tie: uint64(tx)}}
	}
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		var c collected
		c.runIdx = map[string]int32{}
		c.events = make([]forensics.CommitEvent, 0, events)
		c.runOf = make([]int32, 0, events)
		for _, r := range rows {
			c.events = append(c.events, r.e)
			c.runOf = append(c.runOf, c.run([]byte(runIDs[r.run])))
		}
		b.StartTimer()
		// What Forensics does once the rows are read: every core examines
		// runs, one goroutine collects them in run id order.
		var total forensics.CommitOrder
		workers := runtime.GOMAXPROCS(0)
		ws := make([]forensics.WindowSet, workers)
		err := eachParallel(b.Context(), c.group(), workers, func(w int, r Run) Findings {
			ws[w].Add(r.Events)
			return Examine(r)
		}, func(_ string, f Findings) error {
			f.Order.AddTo(&total)
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
		for i := 1; i < workers; i++ {
			ws[0].Merge(&ws[i])
		}
		ws[0].Windows()
		if total.Events != events || total.InvertedPairs == 0 {
			b.Fatalf("totals %+v", total)
		}
	}
}
