package cli

import (
	"fmt"
	"sync"
	"time"

	"github.com/stormctl/stormctl/reports"
)

// progress renders a live line per cell on a terminal, and plain lines (one
// per finished cell, plus a heartbeat) otherwise.
type progress struct {
	io      *IOStreams
	mu      sync.Mutex
	keys    []reports.CellKey
	cells   map[reports.CellKey]reports.Cell
	runs    int
	drawn   int
	last    time.Time
	started time.Time
}

func newProgress(io *IOStreams) *progress {
	return &progress{io: io, cells: map[reports.CellKey]reports.Cell{}}
}

func (p *progress) Start(keys []reports.CellKey, runs int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.keys, p.runs, p.started = keys, runs, time.Now()
	for _, k := range keys {
		p.cells[k] = reports.Cell{World: k.World, Scenario: k.Scenario, Condition: k.Condition}
	}
	p.draw(true)
}

func (p *progress) Update(c reports.Cell) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cells[c.Key()] = c
	if !p.io.ErrTTY {
		if c.Runs == p.runs {
			fmt.Fprintf(p.io.ErrOut, "done %s: %s\n", c.Key(), c.Compact())
		} else if time.Since(p.last) > 15*time.Second {
			p.last = time.Now()
			fmt.Fprintf(p.io.ErrOut, "[%s] %d of %d runs finished\n", time.Since(p.started).Round(time.Second), p.finished(), p.runs*len(p.keys))
		}
		return
	}
	p.draw(false)
}

func (p *progress) Finish() {
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
