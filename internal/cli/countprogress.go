package cli

import (
	"fmt"
	"sync"
	"time"
)

// countProgress reports a long count of work on stderr: on a terminal one
// line redrawn at most every redrawEvery and cleared when done; off a
// terminal (CI logs) a line every HeartbeatEvery, and a last one when done
// if any was printed, so that a short job prints nothing.
type countProgress struct {
	io          *IOStreams
	label, unit string
	now         func() time.Time

	mu      sync.Mutex
	started time.Time
	last    time.Time
	printed bool
	done    int
	total   int
	// note, when set, follows the count instead of a total.
	note string
}

// redrawEvery is how often the terminal line is redrawn at most.
const redrawEvery = 100 * time.Millisecond

func newCountProgress(io *IOStreams, label, unit string) *countProgress {
	p := &countProgress{io: io, label: label, unit: unit, now: time.Now}
	p.started, p.last = p.now(), p.now()
	return p
}

// Count records that done of total are finished.
func (p *countProgress) Count(done, total int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.done, p.total = done, total
	p.tick()
}

// Note records that done are finished, of no known total, and what is
// being done.
func (p *countProgress) Note(done int, note string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.done, p.note = done, note
	p.tick()
}

// tick draws the line if it is due. Callers hold p.mu.
func (p *countProgress) tick() {
	now := p.now()
	every := HeartbeatEvery
	if p.io.ErrTTY {
		every = redrawEvery
	}
	if now.Sub(p.last) < every {
		return
	}
	p.last = now
	p.draw(now)
}

// draw writes the current line. Callers hold p.mu.
func (p *countProgress) draw(now time.Time) {
	line := fmt.Sprintf("%s: %d of %d %s (%s)", p.label, p.done, p.total, p.unit, now.Sub(p.started).Round(100*time.Millisecond))
	if p.note != "" {
		line = fmt.Sprintf("%s: %d %s, %s (%s)", p.label, p.done, p.unit, p.note, now.Sub(p.started).Round(100*time.Millisecond))
	}
	if p.io.ErrTTY {
		fmt.Fprintf(p.io.ErrOut, "\r\033[K%s", line)
	} else {
		fmt.Fprintln(p.io.ErrOut, line)
	}
	p.printed = true
}

// Done ends the progress: the terminal line is cleared, a log gets a last
// line if it got any.
func (p *countProgress) Done() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.printed {
		return
	}
	if p.io.ErrTTY {
		fmt.Fprint(p.io.ErrOut, "\r\033[K")
		return
	}
	p.draw(p.now())
}
