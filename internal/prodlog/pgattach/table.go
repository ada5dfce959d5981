package pgattach

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sync/errgroup"

	"github.com/stormctl/stormctl/forensics"
	"github.com/stormctl/stormctl/internal/eventlog"
)

// collected holds every row read, each run's rows side by side in blocks of
// its own, in arrival order. The rows arrive in the table's physical order,
// where a run's events are scattered; appending each to its run's block
// keeps the writes on as many cache lines as there are runs, and lets every
// run be examined later from a few contiguous blocks rather than from a
// million scattered places (on this kind of machine, memory latency and
// fresh pages, not arithmetic, are what the forensics spend their time on).
// The blocks hold no pointer, so the garbage collector never scans them.
type collected struct {
	slab    slab
	runs    []runBlocks // per run, in order of first sight
	runIDs  []string
	runIdx  map[string]int32
	types   []eventlog.Type
	typeIdx map[string]uint16
	// timed counts, per type, the rows with a commit time; rows all rows.
	timed, rows []int
	// seqColumn is set when the rows come with a seq column; without one, a
	// record's seq holds the position of its slot id (0: not a slot id).
	seqColumn bool
	// slotIDs counts the rows whose ids are slot ids.
	slotIDs int
	// scheme is the layout decided once every row is in (layout); it
	// decides what gather hands out as an event's seq.
	scheme eventlog.Scheme
	// minted counts the events of the last each or examine whose id had a
	// mint time: the ULIDs.
	minted int
}

// runBlocks are the blocks of one run's records: first and last are block
// numbers in the slab (-1: none yet); slotIDs counts its rows whose id is a
// slot id.
type runBlocks struct {
	first, last int32
	events      int32
	slotIDs     int32
}

// A record is one row: its commit time (microseconds since 2000-01-01 UTC,
// or noCommit), seq (0: none; without a seq column, the slot id's position),
// xmin, type index and id length, then the id's bytes.
const (
	recHeader = 8 + 8 + 4 + 2 + 4
	// maxID bounds an id's length (a Workflow DevKit id is about 31 bytes).
	maxID = 1 << 20
)

// noCommit marks a row without a commit time. It is PostgreSQL's -infinity,
// which a commit time never is.
const noCommit = math.MinInt64

// y2k is PostgreSQL's epoch in Unix seconds.
const y2k = 946_684_800

// commitMicros is t in microseconds since PostgreSQL's epoch.
func commitMicros(t time.Time) int64 {
	return (t.Unix()-y2k)*1_000_000 + int64(t.Nanosecond()/1000)
}

// commitTime is the time of microseconds since PostgreSQL's epoch, or the
// zero time for noCommit.
func commitTime(us int64) time.Time {
	if us == noCommit {
		return time.Time{}
	}
	return time.Unix(y2k+us/1_000_000, (us%1_000_000)*1000)
}

// newCollected holds the rows of a table with a seq column or without.
func newCollected(seqColumn bool) *collected {
	return &collected{runIdx: map[string]int32{}, typeIdx: map[string]uint16{}, seqColumn: seqColumn, scheme: eventlog.SchemeULID}
}

// layout decides the table's scheme from the rows added (decideLayout) and
// keeps it for gather. The ULIDs are counted as the rows are gathered.
func (t *collected) layout() (eventlog.Scheme, Layout) {
	l := Layout{SlotIDs: t.slotIDs}
	for _, n := range t.rows {
		l.Rows += n
	}
	if k, ok := t.typeIdx[string(eventlog.Noop)]; ok {
		l.Noops = t.rows[k]
	}
	var runs []runKinds
	if !t.seqColumn && t.slotIDs > 0 && t.slotIDs < l.Rows {
		runs = make([]runKinds, len(t.runs))
		for i, r := range t.runs {
			runs[i] = runKinds{id: t.runIDs[i], rows: int(r.events), slotIDs: int(r.slotIDs)}
		}
	}
	t.scheme, l = decideLayout(t.seqColumn, l, runs)
	return t.scheme, l
}

// add appends one row to its run; run, id and typ are copied. Any type is
// taken, known to stormctl or not.
func (t *collected) add(run, id, typ []byte, seq, commit int64, tie uint32) error {
	if len(id) >= maxID {
		return fmt.Errorf("run %q: an id of %d bytes: ids of %d bytes or more are not supported", run, len(id), maxID)
	}
	k, err := t.typeOf(typ)
	if err != nil {
		return err
	}
	if commit != noCommit {
		t.timed[k]++
	}
	t.rows[k]++
	pos, slot := slotPosition(id)
	i := t.runOf(run) // may grow t.runs: index it after
	r := &t.runs[i]
	if slot {
		t.slotIDs++
		r.slotIDs++
		if !t.seqColumn {
			seq = pos
		}
	}
	rec := t.slab.reserve(r, recHeader+len(id))
	ne.PutUint64(rec[0:], uint64(commit))
	ne.PutUint64(rec[8:], uint64(seq))
	ne.PutUint32(rec[16:], tie)
	ne.PutUint16(rec[20:], k)
	ne.PutUint32(rec[22:], uint32(len(id)))
	copy(rec[recHeader:], id)
	r.events++
	return nil
}

// ne encodes records in the machine's own byte order.
var ne = binary.NativeEndian

// runOf returns the index of the run whose id is b, adding it if new.
func (t *collected) runOf(b []byte) int32 {
	if i, ok := t.runIdx[string(b)]; ok {
		return i
	}
	i := int32(len(t.runs))
	id := string(b)
	t.runs = append(t.runs, runBlocks{first: -1, last: -1})
	t.runIDs = append(t.runIDs, id)
	t.runIdx[id] = i
	return i
}

// typeOf interns an event type.
func (t *collected) typeOf(b []byte) (uint16, error) {
	if k, ok := t.typeIdx[string(b)]; ok {
		return k, nil
	}
	if len(t.types) > math.MaxUint16 {
		return 0, fmt.Errorf("more than %d distinct event types: not a Workflow DevKit events table", math.MaxUint16+1)
	}
	k := uint16(len(t.types))
	typ := eventlog.Type(b)
	t.types = append(t.types, typ)
	t.typeIdx[string(typ)] = k
	t.timed = append(t.timed, 0)
	t.rows = append(t.rows, 0)
	return k, nil
}

// grouped lists the runs in run id order.
type grouped struct {
	rows  *collected
	order []int32
	// minted counts the events gathered whose id had a mint time: the ULIDs.
	minted atomic.Int64
}

// group orders the runs by id.
func (t *collected) group() *grouped {
	order := make([]int32, len(t.runs))
	for i := range order {
		order[i] = int32(i)
	}
	slices.SortFunc(order, func(a, b int32) int { return strings.Compare(t.runIDs[a], t.runIDs[b]) })
	return &grouped{rows: t, order: order}
}

// gather makes the events of the i-th run in run id order in buf (reused)
// and returns its id and events, counting those with a mint time in
// g.minted. The events' ids point into the slab.
func (g *grouped) gather(i int, buf []forensics.CommitEvent) (string, []forensics.CommitEvent) {
	t := g.rows
	r := g.order[i]
	// Without a seq column a record's seq is its slot id's position: an
	// event's seq under slot, none under ulid (a mixed table).
	slots := t.scheme == eventlog.SchemeSlot
	positioned := t.seqColumn || slots
	buf = slices.Grow(buf[:0], int(t.runs[r].events))
	minted := 0
	for b := t.runs[r].first; b >= 0; b = t.slab.meta[b].next {
		data := t.slab.data(b)
		for len(data) > 0 {
			n := int(ne.Uint32(data[22:]))
			id := unsafe.String(unsafe.SliceData(data[recHeader:]), n) // never written again
			if n == 0 {
				id = ""
			}
			seq := int64(ne.Uint64(data[8:]))
			if !positioned {
				seq = 0
			}
			var at time.Time
			if !slots { // a slot id has no mint time
				if at = mintTime(id); !at.IsZero() {
					minted++
				}
			}
			buf = append(buf, forensics.CommitEvent{ID: id, Seq: seq,
				Type: t.types[ne.Uint16(data[20:])], MintedAt: at,
				CommitAt: commitTime(int64(ne.Uint64(data[0:]))), Tie: uint64(ne.Uint32(data[16:]))})
			data = data[recHeader+n:]
		}
	}
	g.minted.Add(int64(minted))
	return t.runIDs[r], buf
}

// each hands fn every run in run id order, each in a slice of its own whose
// capacity ends with the run (appending to it copies).
func (t *collected) each(fn func(Run) error) error {
	g := t.group()
	defer func() { t.minted = int(g.minted.Load()) }()
	for i := range g.order {
		id, evs := g.gather(i, nil)
		if err := fn(Run{ID: id, Scheme: t.scheme, Events: evs[:len(evs):len(evs)]}); err != nil {
			return err
		}
	}
	return nil
}

// chunkRuns is how many runs a worker of eachParallel takes at a time: few
// enough for the work to spread evenly, enough to keep the hand-offs rare.
const chunkRuns = 64

// eachParallel analyzes the runs from workers goroutines, a chunk of
// consecutive runs at a time, and collects them in run id order from the
// calling goroutine as their chunks finish.
func eachParallel[R any](ctx context.Context, gr *grouped, workers int, analyze func(int, Run) R, collect func(string, R) error) error {
	n := len(gr.order)
	results := make([]R, n)
	chunks := (n + chunkRuns - 1) / chunkRuns
	ready := make([]chan struct{}, chunks)
	for c := range ready {
		ready[c] = make(chan struct{})
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var next atomic.Int64
	var g errgroup.Group
	for w := range min(workers, chunks) {
		g.Go(func() error {
			var buf []forensics.CommitEvent
			for {
				c := int(next.Add(1) - 1)
				if c >= chunks || ctx.Err() != nil {
					return nil
				}
				for i := c * chunkRuns; i < min(n, (c+1)*chunkRuns); i++ {
					r := Run{Scheme: gr.rows.scheme}
					r.ID, buf = gr.gather(i, buf)
					r.Events = buf
					results[i] = analyze(w, r)
				}
				close(ready[c])
			}
		})
	}
	err := func() error {
		for c := range chunks {
			select {
			case <-ready[c]:
			case <-ctx.Done():
				return ctx.Err()
			}
			for i := c * chunkRuns; i < min(n, (c+1)*chunkRuns); i++ {
				if err := collect(gr.rows.runIDs[gr.order[i]], results[i]); err != nil {
					return err
				}
				var zero R
				results[i] = zero // collected: let it go
			}
		}
		return nil
	}()
	cancel() // a failed collect stops the workers at their next chunk
	return errors.Join(err, g.Wait())
}

// slab hands out blocks carved from large chunks. A run's first block is
// small and each next one twice the last, up to maxBlock, so that a table of
// many one-event runs stays small while a long run spans few blocks. Bytes,
// once written, never change: strings may point into them.
type slab struct {
	chunks [][]byte
	free   []byte // what is left of the last chunk
	meta   []blockMeta
}

// blockMeta locates a block: chunk, offset and capacity in it, bytes used,
// and the run's next block (-1: none).
type blockMeta struct {
	chunk, off, size, used, next int32
}

const (
	chunkBytes = 8 << 20
	minBlock   = 128
	maxBlock   = 8 << 10
)

// reserve returns n bytes at the end of run r's records, starting a new
// block when the last one has no room for them.
func (s *slab) reserve(r *runBlocks, n int) []byte {
	if r.last >= 0 {
		m := &s.meta[r.last]
		if int(m.size-m.used) >= n {
			b := s.chunks[m.chunk][int(m.off+m.used) : int(m.off+m.used)+n]
			m.used += int32(n)
			return b
		}
	}
	size := minBlock
	if r.last >= 0 {
		size = min(2*int(s.meta[r.last].size), maxBlock)
	}
	size = max(size, n)
	if len(s.free) < size {
		s.free = make([]byte, max(chunkBytes, size))
		adviseHuge(s.free)
		s.chunks = append(s.chunks, s.free)
	}
	c := len(s.chunks) - 1
	off := len(s.chunks[c]) - len(s.free)
	s.free = s.free[size:]
	b := int32(len(s.meta))
	s.meta = append(s.meta, blockMeta{chunk: int32(c), off: int32(off), size: int32(size), used: int32(n), next: -1})
	if r.last >= 0 {
		s.meta[r.last].next = b
	} else {
		r.first = b
	}
	r.last = b
	return s.chunks[c][off : off+n]
}

// data is the used part of block b.
func (s *slab) data(b int32) []byte {
	m := &s.meta[b]
	return s.chunks[m.chunk][m.off : m.off+m.used]
}
