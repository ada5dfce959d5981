package cli

import (
	"fmt"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/stormctl/stormctl/internal/history"
	"github.com/stormctl/stormctl/reports"
)

// HeartbeatEvery is how often progress off a terminal prints its line.
const HeartbeatEvery = 10 * time.Second

// progress renders a live line per cell on a terminal. Off a terminal
// (CI logs) it prints a line per finished cell and, every HeartbeatEvery
// until the storm ends, one line with the runs finished of all, an ETA and
// every cell's tally, so that a log is never silent for long.
type progress struct {
	io *IOStreams
	// now and ticker are the clock (time.Now, and a time.Ticker's channel
	// and stop), replaced in tests.
	now    func() time.Time
	ticker func(d time.Duration) (<-chan time.Time, func())

	mu      sync.Mutex
	keys    []history.CellKey
	cells   map[history.CellKey]reports.Cell
	runs    int
	drawn   int
	last    time.Time
	started time.Time
	// mark is the first heartbeat's time and runs finished: the ETA is
	// from the rate since then (runs a resumed storm found recorded are no
	// part of it).
	mark struct {
		set  bool
		at   time.Time
		runs int
	}

	g    errgroup.Group
	stop chan struct{}
}

func newProgress(io *IOStreams) *progress {
	return &progress{io: io, cells: map[history.CellKey]reports.Cell{}, now: time.Now,
		ticker: func(d time.Duration) (<-chan time.Time, func()) {
			t := time.NewTicker(d)
			return t.C, t.Stop
		}}
}

func (p *progress) Start(keys []history.CellKey, runs int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.keys, p.runs, p.started = keys, runs, p.now()
	for _, k := range keys {
		p.cells[k] = reports.Cell{CellKey: k}
	}
	p.draw(true)
	if p.io.ErrTTY {
		return
	}
	ticks, stopTicker := p.ticker(HeartbeatEvery)
	p.stop = make(chan struct{})
	stop := p.stop
	p.g.Go(func() error {
		defer stopTicker()
		for {
			select {
			case <-stop:
				return nil
			case <-ticks:
				p.heartbeat()
			}
		}
	})
}

func (p *progress) Update(c reports.Cell) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cells[c.Key()] = c
	if !p.io.ErrTTY {
		if c.Runs == p.runs {
			fmt.Fprintf(p.io.ErrOut, "done %s: %s\n", c.Key(), c.Compact())
		}
		return
	}
	p.draw(false)
}

// Finish stops the heartbeat (off a terminal, after a last line) or draws
// the cells a last time.
func (p *progress) Finish() {
	p.mu.Lock()
	stop := p.stop
	p.stop = nil
	p.mu.Unlock()
	if stop != nil {
		close(stop)
		_ = p.g.Wait() // the heartbeat takes p.mu: not held here
		p.heartbeat()
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.io.ErrTTY {
		p.draw(true)
	}
}

func (p *progress) finished() int {
	n := 0
	for _, c := range p.cells {
		n += c.Runs
	}
	return n
}

// heartbeat prints the line of runs finished, ETA and cell tallies.
func (p *progress) heartbeat() {
	p.mu.Lock()
	defer p.mu.Unlock()
	fmt.Fprintln(p.io.ErrOut, p.line(p.now()))
}

// line is the heartbeat's line at now: "[1m20s] 14 of 48 runs finished,
// ETA 3m10s | local/step-storm/main 3/12: 2 corrupted / 1 completed | ...".
func (p *progress) line(now time.Time) string {
	done, total := p.finished(), p.runs*len(p.keys)
	var b strings.Builder
	fmt.Fprintf(&b, "[%s] %d of %d runs finished, %s", now.Sub(p.started).Round(time.Second), done, total, p.eta(now, done, total))
	for _, k := range p.keys {
		c := p.cells[k]
		fmt.Fprintf(&b, " | %s %d/%d", k, c.Runs, p.runs)
		if c.Runs > 0 {
			b.WriteString(": " + c.Compact())
		}
	}
	return b.String()
}

// eta says when the storm should end at the rate runs finished since the
// first heartbeat: "ETA 3m10s", "ETA unknown" before a rate is known,
// "all done" at the end.
func (p *progress) eta(now time.Time, done, total int) string {
	if done >= total {
		return "all done"
	}
	if !p.mark.set {
		p.mark.set, p.mark.at, p.mark.runs = true, now, done
		return "ETA unknown"
	}
	ran, took := done-p.mark.runs, now.Sub(p.mark.at)
	if ran <= 0 || took <= 0 {
		return "ETA unknown"
	}
	left := time.Duration(float64(took) / float64(ran) * float64(total-done))
	return "ETA " + left.Round(time.Second).String()
}

// draw rewrites the per-cell lines in place (throttled unless force).
func (p *progress) draw(force bool) {
	if !p.io.ErrTTY || (!force && time.Since(p.last) < 200*time.Millisecond) {
		return
	}
	p.last = time.Now()
	if p.drawn > 0 {
		fmt.Fprintf(p.io.ErrOut, "\x1b[%dA", p.drawn)
	}
	for _, k := range p.keys {
		c := p.cells[k]
		fmt.Fprintf(p.io.ErrOut, "\x1b[2K%-48s %3d/%-3d %s\n", k.String(), c.Runs, p.runs, c.Compact())
	}
	p.drawn = len(p.keys)
}
