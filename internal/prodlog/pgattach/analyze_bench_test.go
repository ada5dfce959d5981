package pgattach

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"testing"
	"time"

	"github.com/oklog/ulid/v2"

	"github.com/stormctl/stormctl/internal/eventlog"
)

// BenchmarkAttachAnalysis measures what attach-mode forensics does with the
// rows once they are read, without a server: 1,000,000 events of 10,000
// runs, already in their runs' blocks, examined on every core with their
// windows (examine, as pgattach.Forensics does for `stormctl forensics
// --pg-url`). The events are shaped like the
// forensics benchmark's table (bench/): ids minted in batches of 50 whose
// commits interleave.
func BenchmarkAttachAnalysis(b *testing.B) { benchAnalysis(b, benchTable(false)) }

// BenchmarkAttachAnalysisSlot is BenchmarkAttachAnalysis on a spec-6/7 slot
// table: the same runs, types and commits, each event's id the slot id of
// its position in its run, one position in 1,000 left empty.
func BenchmarkAttachAnalysisSlot(b *testing.B) { benchAnalysis(b, benchTable(true)) }

// BenchmarkAttachCollect measures what reading does with each row as it
// arrives (add: classify its id, append it to its run's blocks) for the
// rows of BenchmarkAttachAnalysis, then decides the layout.
func BenchmarkAttachCollect(b *testing.B) {
	rows := benchTable(false)
	b.ResetTimer()
	for range b.N {
		rows.collect(b)
	}
}

// benchRows are a benchmark's table: its rows and their run ids and types
// as they come off the wire.
type benchRows struct {
	rows   []benchRow
	runIDs [][]byte
	types  [][]byte
}

type benchRow struct {
	run, typ int
	id       []byte
	commit   int64
	tie      uint32
}

// benchTable makes the 1,000,000 rows of 10,000 runs of the benchmarks,
// with ULIDs or slot ids.
func benchTable(slot bool) benchRows {
	const events, runs, batch = 1_000_000, 10_000, 50
	rng := rand.New(rand.NewPCG(1, 1))
	types := eventlog.Types()
	t := benchRows{rows: make([]benchRow, events), runIDs: make([][]byte, runs), types: make([][]byte, len(types))}
	for i := range t.runIDs {
		t.runIDs[i] = fmt.Appendf(nil, "wrun_%026d", i)
	}
	for i, typ := range types {
		t.types[i] = []byte(typ)
	}
	base := time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC)
	entropy := ulid.Monotonic(rand.NewChaCha8([32]byte{1}), 0)
	next := make([]int64, runs) // per run: the last position taken
	for i := range t.rows {
		minted := base.Add(time.Duration(i) * 20 * time.Microsecond)
		tx := i / batch
		commit := base.Add(time.Duration(tx*batch)*20*time.Microsecond + time.Duration(rng.IntN(8000))*time.Microsecond)
		id := "wevt_" + ulid.MustNew(ulid.Timestamp(minted), entropy).String()
		run := rng.IntN(runs)
		if slot {
			next[run]++
			if i%1000 == 999 {
				next[run]++ // a hole
			}
			id = eventlog.SlotID(next[run])
		}
		t.rows[i] = benchRow{run: run, typ: rng.IntN(len(types)), id: []byte(id), commit: commitMicros(commit), tie: uint32(tx)}
	}
	return t
}

// collect adds every row to a fresh collected and decides its layout.
func (t benchRows) collect(b *testing.B) *collected {
	c := newCollected(false)
	for _, r := range t.rows {
		if err := c.add(t.runIDs[r.run], r.id, t.types[r.typ], 0, r.commit, r.tie); err != nil {
			b.Fatal(err)
		}
	}
	c.layout()
	return c
}

// benchAnalysis times examine on the rows of t, collected untimed.
func benchAnalysis(b *testing.B, t benchRows) {
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		c := t.collect(b)
		b.StartTimer()
		rep, err := c.examine(b.Context(), runtime.GOMAXPROCS(0))
		if err != nil {
			b.Fatal(err)
		}
		total := rep.Total
		if total.Events != len(t.rows) || total.InvertedPairs == 0 {
			b.Fatalf("totals %+v", total)
		}
	}
}
