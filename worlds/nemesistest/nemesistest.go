// Package nemesistest is the contract a world keeps under a fault, as a
// test any world's package hooks into in a few lines: while a fault breaks
// the world, writers and a reader keep going, and afterwards every error
// they saw must have been eventlog.ErrUnavailable (or an honest fence or
// conflict), every read a prefix of the final log (positioned schemes; a
// subset under ulid), and every acknowledged write in that log once.
package nemesistest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/oklog/ulid/v2"
	"golang.org/x/sync/errgroup"

	"github.com/stormctl/stormctl/internal/base/clock"
	"github.com/stormctl/stormctl/internal/eventlog"
	"github.com/stormctl/stormctl/worlds"
)

// Writers is how many writers append concurrently during a fault.
const Writers = 2

// after is how long the writers keep going once the fault healed: each
// must get a write through again.
const after = 700 * time.Millisecond

// Exercise creates run on w (its ID drawn), starts the writers (fenced
// appends under positioned schemes and on guarded runs, unfenced
// otherwise) and a reader, calls inject (which must break the world and
// heal it before it returns), lets them run on a little, and checks what
// they saw.
func Exercise(t *testing.T, w worlds.World, run eventlog.Run, inject func(ctx context.Context) error) {
	t.Helper()
	ctx := t.Context()
	run.ID = "wrun_" + ulid.Make().String()
	if err := w.CreateRun(ctx, run); err != nil {
		t.Fatalf("CreateRun before the fault: %v", err)
	}
	pos := run.Scheme.Positioned()
	x := &exercise{t: t, w: w, run: run.ID, fenced: pos || run.Guard != eventlog.GuardNone, positioned: pos}
	wctx, stop := context.WithCancel(ctx)
	var g errgroup.Group
	healed := make(chan struct{})
	for i := range Writers {
		g.Go(func() error { x.write(wctx, i, healed); return nil })
	}
	g.Go(func() error { x.read(wctx); return nil })
	time.Sleep(150 * time.Millisecond)
	if err := inject(ctx); err != nil {
		t.Errorf("inject: %v", err)
	}
	close(healed)
	time.Sleep(after)
	stop()
	_ = g.Wait()
	x.check(ctx)
}

type exercise struct {
	t          *testing.T
	w          worlds.World
	run        string
	fenced     bool
	positioned bool

	mu     sync.Mutex
	acked  []string           // correlation ids acknowledged
	reads  [][]eventlog.Event // successful reads
	errs   map[string]int     // error classes seen, for the log
	bad    []string           // misclassified errors
	unsure map[string]bool    // writes whose outcome the writer never learnt
	after  map[int]int        // writes acknowledged after the fault healed, per writer
}

func (x *exercise) note(class string) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.errs == nil {
		x.errs = map[string]int{}
	}
	x.errs[class]++
}

func (x *exercise) misclassified(op string, err error) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.bad = append(x.bad, fmt.Sprintf("%s: %s: %v", op, eventlog.Classify(err), err))
}

// write appends one event at a time. A write whose outcome is unknown
// (unavailable) is retried as the same draft after a fresh read: found in
// the log it counts as written; a conflict on its key then means it
// landed.
func (x *exercise) write(ctx context.Context, id int, healed <-chan struct{}) {
	i := 0
	unsure := false
	for ctx.Err() == nil {
		corr := fmt.Sprintf("w%d-%d", id, i)
		d := eventlog.Draft{Type: eventlog.StepCreated, CorrelationID: corr}
		log, err := readAll(ctx, x.w, x.run)
		if err != nil {
			x.classify(ctx, "read before a write", err)
			pause(ctx)
			continue
		}
		if unsure && slices.ContainsFunc(log, func(e eventlog.Event) bool { return e.CorrelationID == corr }) {
			x.ack(corr, healed, id)
			i, unsure = i+1, false
			continue
		}
		if x.fenced {
			_, err = x.w.AppendFenced(ctx, x.run, int64(len(log)), []eventlog.Draft{d})
		} else {
			_, err = x.w.Append(ctx, x.run, []eventlog.Draft{d})
		}
		switch {
		case err == nil:
			x.ack(corr, healed, id)
			i, unsure = i+1, false
		case ctx.Err() != nil:
			x.mu.Lock()
			if x.unsure == nil {
				x.unsure = map[string]bool{}
			}
			x.unsure[corr] = true
			x.mu.Unlock()
			return
		case errors.Is(err, eventlog.ErrUnavailable):
			x.note("unavailable")
			unsure = true
			pause(ctx)
		case errors.Is(err, eventlog.ErrFenced) && x.fenced:
			x.note("fenced") // the other writer, or our own unsure write, moved the log
		case errors.Is(err, eventlog.ErrConflict) && unsure:
			x.note("conflict after an unsure write")
			x.ack(corr, healed, id)
			i, unsure = i+1, false
		default:
			x.misclassified("append "+corr, err)
			pause(ctx)
		}
	}
}

func (x *exercise) ack(corr string, healed <-chan struct{}, id int) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.acked = append(x.acked, corr)
	select {
	case <-healed:
		if x.after == nil {
			x.after = map[int]int{}
		}
		x.after[id]++
	default:
	}
}

// read keeps reading the whole log.
func (x *exercise) read(ctx context.Context) {
	for ctx.Err() == nil {
		log, err := readAll(ctx, x.w, x.run)
		if err != nil {
			x.classify(ctx, "read", err)
			pause(ctx)
			continue
		}
		x.mu.Lock()
		x.reads = append(x.reads, log)
		x.mu.Unlock()
		time.Sleep(5 * time.Millisecond)
	}
}

// classify accepts an unavailable store (or the test ending) and nothing
// else from a read.
func (x *exercise) classify(ctx context.Context, op string, err error) {
	switch {
	case ctx.Err() != nil:
	case errors.Is(err, eventlog.ErrUnavailable):
		x.note("unavailable")
	default:
		x.misclassified(op, err)
	}
}

// check reads the final log once the store answers and holds the
// exercise to the contract.
func (x *exercise) check(ctx context.Context) {
	t := x.t
	t.Helper()
	var final []eventlog.Event
	var err error
	for range 100 {
		if final, err = readAll(ctx, x.w, x.run); !errors.Is(err, eventlog.ErrUnavailable) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err != nil {
		t.Fatalf("final read: %v", err)
	}
	t.Logf("%d events, %d acknowledged, %d reads; errors seen: %v", len(final), len(x.acked), len(x.reads), x.errs)
	for _, b := range x.bad {
		t.Errorf("misclassified under the fault: %s", b)
	}
	count := map[string]int{}
	for i, e := range final {
		count[e.CorrelationID]++
		if x.positioned && e.Seq != int64(i+1) {
			t.Errorf("final log: event %d has seq %d (not dense)", i, e.Seq)
		}
	}
	for c, n := range count {
		if n > 1 {
			t.Errorf("final log: %s written %d times", c, n)
		}
	}
	for _, c := range x.acked {
		if count[c] != 1 {
			t.Errorf("acknowledged write %s is in the final log %d times", c, count[c])
		}
	}
	for c := range count {
		if !slices.Contains(x.acked, c) && !x.unsure[c] {
			t.Errorf("final log holds %s, which no writer wrote or was writing", c)
		}
	}
	byID := map[string]eventlog.Event{}
	for _, e := range final {
		byID[e.ID] = e
	}
	for n, r := range x.reads {
		for i, e := range r {
			f, ok := byID[e.ID]
			switch {
			case !ok:
				t.Errorf("read %d saw event %s (%s), which is not in the final log", n, e.ID, e.CorrelationID)
			case f.CorrelationID != e.CorrelationID || f.Seq != e.Seq || f.Type != e.Type:
				t.Errorf("read %d saw event %s as %s seq %d, the final log has %s seq %d", n, e.ID, e.CorrelationID, e.Seq, f.CorrelationID, f.Seq)
			case x.positioned && final[i].ID != e.ID:
				t.Errorf("read %d is not a prefix of the final log at %d: %s, final %s", n, i, e.ID, final[i].ID)
			}
		}
	}
	for id := range Writers {
		if x.after[id] == 0 {
			t.Errorf("writer %d got no write through after the fault healed", id)
		}
	}
}

// readAll reads a run's whole log, page by page.
func readAll(ctx context.Context, w worlds.World, run string) ([]eventlog.Event, error) {
	var out []eventlog.Event
	after := eventlog.Cursor{}
	for {
		p, err := w.List(ctx, run, after, 50)
		if err != nil {
			return nil, err
		}
		out = append(out, p.Events...)
		if !p.More || len(p.Events) == 0 {
			return out, nil
		}
		after = p.Next
	}
}

func pause(ctx context.Context) { _ = clock.Sleep(ctx, 20*time.Millisecond) }
