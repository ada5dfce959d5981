package nemesis

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"sync"
	"sync/atomic"

	"github.com/stormctl/stormctl/internal/base/clock"
)

// Gate is an http.Handler in front of a loopback HTTP server's handler
// (the ingest server, the embedded DynamoDB-API server) that a fault can
// close for a window. Open, it passes every request through.
type Gate struct {
	next http.Handler

	mu      sync.Mutex
	mode    gateMode
	release chan struct{} // closed when the window ends
	rng     *rand.Rand
	counts  [3]atomic.Int64 // failures per gateFailure in the current window
	held    atomic.Int64    // requests held in the current holding window
}

type gateMode int

const (
	gateOpen gateMode = iota
	gateHold
	gateFail
)

// gateFailure is how a failing gate fails one request.
type gateFailure int

const (
	// failRefuse answers 503 before the request reaches the server.
	failRefuse gateFailure = iota
	// failHang holds the request until the window ends, then drops the
	// connection without an answer: nothing reached the server.
	failHang
	// failLoseAnswer lets the server handle the request, then drops the
	// connection instead of sending its answer: the write may well have
	// committed, and the client cannot tell.
	failLoseAnswer
)

// NewGate returns an open gate in front of next; seed draws which failure
// each request of a failing window gets.
func NewGate(next http.Handler, seed uint64) *Gate {
	return &Gate{next: next, release: closed(), rng: rand.New(rand.NewPCG(seed, 0x6a7e))}
}

func closed() chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}

// ServeHTTP passes, holds or fails the request, as the gate stands.
func (g *Gate) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	g.mu.Lock()
	mode, release := g.mode, g.release
	how := gateFailure(g.rng.IntN(3))
	g.mu.Unlock()
	switch mode {
	case gateHold:
		g.held.Add(1)
		select {
		case <-release:
		case <-r.Context().Done():
			return
		}
	case gateFail:
		g.counts[how].Add(1)
		switch how {
		case failRefuse:
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusServiceUnavailable)
			fmt.Fprint(w, `{"code":"unavailable","error":"nemesis: the server answers 503 for a window"}`)
			return
		case failHang:
			select {
			case <-release:
			case <-r.Context().Done():
			}
			panic(http.ErrAbortHandler) // drop the connection, no answer
		case failLoseAnswer:
			g.next.ServeHTTP(&discard{h: http.Header{}}, r)
			panic(http.ErrAbortHandler)
		}
	}
	g.next.ServeHTTP(w, r)
}

// window sets mode until ctx ends or d passes, then opens the gate and
// releases what it held.
func (g *Gate) window(ctx context.Context, mode gateMode, f Fault) {
	g.mu.Lock()
	g.mode, g.release = mode, make(chan struct{})
	for i := range g.counts {
		g.counts[i].Store(0)
	}
	g.held.Store(0)
	g.mu.Unlock()
	_ = clock.Sleep(ctx, f.For)
	g.mu.Lock()
	g.mode = gateOpen
	close(g.release)
	g.mu.Unlock()
}

// HoldTarget is a target whose fault (kind k) holds every request until the
// window ends: dynamo-pause. Its detail counts the requests it held.
func (g *Gate) HoldTarget(k Kind, name string) Target {
	return Target{Kind: k, Name: name, Inject: func(ctx context.Context, f Fault) (string, error) {
		g.window(ctx, gateHold, f)
		return fmt.Sprintf("%d held until the window ended", g.held.Load()), nil
	}}
}

// FailTarget is a target whose fault (kind k) fails every request of the
// window, each one of three ways drawn at random: a 503, a hang until the
// window ends and a dropped connection, or the request handled and its
// answer dropped: ingest-503.
func (g *Gate) FailTarget(k Kind, name string) Target {
	return Target{Kind: k, Name: name, Inject: func(ctx context.Context, f Fault) (string, error) {
		g.window(ctx, gateFail, f)
		return fmt.Sprintf("%d answered 503, %d hung then dropped, %d handled with the answer dropped",
			g.counts[failRefuse].Load(), g.counts[failHang].Load(), g.counts[failLoseAnswer].Load()), nil
	}}
}

// discard is a ResponseWriter that keeps nothing: the answer a
// failLoseAnswer request never gets.
type discard struct {
	h http.Header
}

func (d *discard) Header() http.Header         { return d.h }
func (d *discard) Write(p []byte) (int, error) { return len(p), nil }
func (d *discard) WriteHeader(int)             {}
