package worldtest

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stormctl/stormctl/internal/eventlog"
	"github.com/stormctl/stormctl/worlds"
)

// Holder is a latency profile that holds chosen writes in their
// mint-to-commit window until the test lets them go (a worlds.WindowHolder),
// so that a test observes what is true while a write is in its window
// (other writers in theirs, its slot reserved, a seal landing in it) by
// the order of events, with no timing involved. Every write draws a nominal
// window of a nanosecond; a write the test did not ask to hold passes its
// window at once. A world that sleeps its windows instead of spending them
// through worlds.SpendWindow never shows a held write: Next fails as hung.
type Holder struct {
	mu      sync.Mutex
	armed   int
	entered chan *Held
}

var _ worlds.WindowHolder = (*Holder)(nil)

// NewHolder returns a Holder that holds nothing until Hold asks it to.
func NewHolder() *Holder { return &Holder{entered: make(chan *Held)} }

// Hold asks for the next n writes that reach their window to be held there
// until released (or until their context ends).
func (p *Holder) Hold(n int) {
	p.mu.Lock()
	p.armed += n
	p.mu.Unlock()
}

// Next waits for the next held write to enter its window and returns it;
// none entering within Watchdog fails t as hung, saying what it waited for.
func (p *Holder) Next(t testing.TB, what string) *Held {
	t.Helper()
	timer := time.NewTimer(Watchdog)
	defer timer.Stop()
	select {
	case h := <-p.entered:
		return h
	case <-timer.C:
		t.Fatalf("hung: no write entered its window within %s (%s)", Watchdog, what)
	case <-t.Context().Done():
		t.Fatalf("the test ended while waiting for %s", what)
	}
	return nil
}

// HoldWindow implements worlds.WindowHolder: a write the test asked to
// hold enters (Next returns it) and waits for its Release or its context's
// end; any other passes at once.
func (p *Holder) HoldWindow(ctx context.Context, _ time.Duration) error {
	p.mu.Lock()
	hold := p.armed > 0
	if hold {
		p.armed--
	}
	p.mu.Unlock()
	if !hold {
		return ctx.Err()
	}
	h := &Held{release: make(chan struct{}), ended: make(chan error, 1)}
	err := h.hold(ctx, p.entered)
	h.ended <- err
	return err
}

// Delay implements worlds.Profile: a nominal window, so that every world
// spends one (the held ones last until released).
func (p *Holder) Delay(eventlog.Type) time.Duration { return time.Nanosecond }

// MaxFactDelay implements worlds.Profile: a held window lasts at most the
// Watchdog.
func (p *Holder) MaxFactDelay() time.Duration { return Watchdog }

// String implements worlds.Profile.
func (p *Holder) String() string { return "worldtest-holder" }

// Windows implements worlds.Profile.
func (p *Holder) Windows() []worlds.Window {
	return []worlds.Window{{Type: "all", Max: Watchdog, Source: "assumption: worldtest holds chosen writes in their window until the test releases them"}}
}

// Held is one write held in its mint-to-commit window.
type Held struct {
	once    sync.Once
	release chan struct{}
	ended   chan error
}

func (h *Held) hold(ctx context.Context, entered chan<- *Held) error {
	select {
	case entered <- h:
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case <-h.release:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Release ends the window: the write goes on to commit.
func (h *Held) Release() { h.once.Do(func() { close(h.release) }) }

// Ended waits for the window to end and returns how: nil when released,
// the write's context error when that ended first (for a write over HTTP,
// the server's request context, which ends when the client goes away). A
// window still open after Watchdog fails t as hung.
func (h *Held) Ended(t testing.TB) error {
	t.Helper()
	timer := time.NewTimer(Watchdog)
	defer timer.Stop()
	select {
	case err := <-h.ended:
		h.ended <- err
		return err
	case <-timer.C:
		t.Fatalf("hung: a held window did not end within %s", Watchdog)
	}
	return nil
}
