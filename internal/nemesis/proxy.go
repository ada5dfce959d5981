package nemesis

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/stormctl/stormctl/internal/base/clock"
)

// Proxy is a TCP proxy on 127.0.0.1 in front of one loopback endpoint. A
// world opened with the nemesis on connects through it, so that a latency
// fault can slow every byte it sends and receives. Close stops it and
// every connection through it.
type Proxy struct {
	upstream string
	l        net.Listener
	delay    atomic.Int64 // nanoseconds added per forwarded chunk
	// sleep spends the delay added to one chunk: time.Sleep, or in this
	// package's tests a recorder of the delays asked for.
	sleep func(time.Duration)
	g     errgroup.Group

	mu     sync.Mutex
	conns  map[net.Conn]struct{}
	closed bool
}

// NewProxy starts a proxy in front of upstream (host:port), which must be
// on loopback (CheckLoopback).
func NewProxy(upstream string) (*Proxy, error) { return newProxy(upstream, time.Sleep) }

func newProxy(upstream string, sleep func(time.Duration)) (*Proxy, error) {
	if err := CheckLoopback("endpoint", upstream); err != nil {
		return nil, err
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("nemesis: proxy for %s: %w", upstream, err)
	}
	p := &Proxy{upstream: upstream, l: l, sleep: sleep, conns: map[net.Conn]struct{}{}}
	p.g.Go(p.accept)
	return p, nil
}

// Addr returns the proxy's address, 127.0.0.1:port.
func (p *Proxy) Addr() string { return p.l.Addr().String() }

// Upstream returns the endpoint the proxy forwards to.
func (p *Proxy) Upstream() string { return p.upstream }

// SetDelay sets what is added to every forwarded chunk from now on (0:
// nothing).
func (p *Proxy) SetDelay(d time.Duration) { p.delay.Store(int64(max(d, 0))) }

// Target is a latency target on this proxy, named after what it fronts.
func (p *Proxy) Target(name string) Target {
	return Target{Kind: Latency, Name: fmt.Sprintf("proxy %s -> %s (%s)", p.Addr(), p.upstream, name),
		Inject: func(ctx context.Context, f Fault) (string, error) {
			p.SetDelay(f.Delay)
			defer p.SetDelay(0)
			_ = clock.Sleep(ctx, f.For)
			return fmt.Sprintf("+%s per forwarded chunk", f.Delay), nil
		}}
}

// Close stops listening, closes every connection through the proxy and
// waits for its goroutines.
func (p *Proxy) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	err := p.l.Close()
	for c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
	_ = p.g.Wait()
	return err
}

func (p *Proxy) accept() error {
	for {
		c, err := p.l.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return nil
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			return nil
		}
		if !p.track(c) {
			c.Close()
			return nil
		}
		p.g.Go(func() error { p.serve(c); return nil })
	}
}

// track remembers a connection for Close; false once the proxy is closed.
func (p *Proxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return false
	}
	p.conns[c] = struct{}{}
	return true
}

func (p *Proxy) untrack(c net.Conn) {
	p.mu.Lock()
	delete(p.conns, c)
	p.mu.Unlock()
	c.Close()
}

// serve forwards one connection both ways; when either side ends, both
// are closed, so the client sees what it would see without the proxy: a
// refused upstream or a dropped connection.
func (p *Proxy) serve(client net.Conn) {
	defer p.untrack(client)
	d := net.Dialer{Timeout: 5 * time.Second}
	up, err := d.Dial("tcp", p.upstream)
	if err != nil {
		return
	}
	if !p.track(up) {
		up.Close()
		return
	}
	defer p.untrack(up)
	var g errgroup.Group
	g.Go(func() error { p.pipe(up, client); return nil })
	g.Go(func() error { p.pipe(client, up); return nil })
	_ = g.Wait()
}

// pipe copies src to dst, delaying each chunk by the current delay, and
// closes both when src ends or a write fails (the protocols proxied here
// never half-close).
func (p *Proxy) pipe(dst, src net.Conn) {
	defer dst.Close()
	defer src.Close()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			if d := time.Duration(p.delay.Load()); d > 0 {
				p.sleep(d)
			}
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}
