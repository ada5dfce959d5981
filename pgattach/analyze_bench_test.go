package pgattach

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"testing"
	"time"

	"github.com/oklog/ulid/v2"

	"github.com/stormctl/stormctl/eventlog"
)

// BenchmarkAttachAnalysis measures what attach-mode forensics does with the
// rows once they are read, without a server: 1,000,000 events of 10,000
// runs, already in their runs' blocks, examined on every core with their
// windows (examine, as pgattach.Forensics does for `stormctl forensics
// --pg-url`). The events are shaped like the
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
		run, typ    int
		id          string
		commit, tie int64
	}
	rows := make([]row, events)
	entropy := ulid.Monotonic(rand.NewChaCha8([32]byte{1}), 0)
	for i := range rows {
		minted := base.Add(time.Duration(i) * 20 * time.Microsecond)
		tx := i / batch
		commit := base.Add(time.Duration(tx*batch)*20*time.Microsecond + time.Duration(rng.IntN(8000))*time.Microsecond)
		id := "wevt_" + ulid.MustNew(ulid.Timestamp(minted), entropy).String()
		rows[i] = row{run: rng.IntN(runs), typ: rng.IntN(len(types)), id: id, commit: commitMicros(commit), tie: int64(tx)}
	}
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		c := newCollected()
		for _, r := range rows {
			if err := c.add([]byte(runIDs[r.run]), []byte(r.id), []byte(types[r.typ]), 0, r.commit, uint32(r.tie)); err != nil {
				b.Fatal(err)
			}
		}
		b.StartTimer()
		rep, err := c.examine(b.Context(), runtime.GOMAXPROCS(0))
		if err != nil {
			b.Fatal(err)
		}
		total := rep.Total
		if total.Events != events || total.InvertedPairs == 0 {
			b.Fatalf("totals %+v", total)
		}
	}
}
