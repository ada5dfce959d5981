package nemesis

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// watchdog bounds how long a test waits for something that must happen, as
// worldtest.Watchdog does for the worlds' tests (which this package's tests
// cannot import: the worlds import nemesis). Running out of it fails the
// test as hung: a liveness check, never a speed one.
const watchdog = 90 * time.Second

// trace is an ordered record of what a test observed, from any goroutine.
type trace struct {
	mu     sync.Mutex
	events []string
}

func (tr *trace) note(e string) {
	tr.mu.Lock()
	tr.events = append(tr.events, e)
	tr.mu.Unlock()
}

// take returns the events noted since the last take.
func (tr *trace) take() []string {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	out := tr.events
	tr.events = nil
	return out
}

// echo starts an echo server on loopback that notes "echo" in tr for every
// chunk it receives, before sending it back.
func echo(t *testing.T, tr *trace) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				buf := make([]byte, 1024)
				for {
					n, err := c.Read(buf)
					if n > 0 {
						tr.note("echo")
						if _, werr := c.Write(buf[:n]); werr != nil {
							return
						}
					}
					if err != nil {
						return
					}
				}
			}()
		}
	}()
	t.Cleanup(func() { l.Close(); <-done })
	return l.Addr().String()
}

func roundTrip(t *testing.T, c net.Conn, r *bufio.Reader) {
	t.Helper()
	if _, err := c.Write([]byte("ping\n")); err != nil {
		t.Fatal(err)
	}
	if _, err := r.ReadString('\n'); err != nil {
		t.Fatal(err)
	}
}

// TestProxyLatency: the delay is added per chunk, both ways, before the
// chunk is forwarded, only while set; Close ends the connections through
// the proxy. The proxy's sleep notes the delay it was asked for in the same
// trace as the echo server's receipt, so the order of the two shows where
// each delay went.
func TestProxyLatency(t *testing.T) {
	tr := &trace{}
	p, err := newProxy(echo(t, tr), func(d time.Duration) { tr.note("delay " + d.String()) })
	if err != nil {
		t.Fatal(err)
	}
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	r := bufio.NewReader(c)
	tests := []struct {
		name  string
		delay time.Duration
		want  []string
	}{
		{"no delay", 0, []string{"echo"}},
		{"60ms a chunk", 60 * time.Millisecond, []string{"delay 60ms", "echo", "delay 60ms"}},
		{"delay unset", 0, []string{"echo"}},
	}
	for _, tt := range tests {
		p.SetDelay(tt.delay)
		roundTrip(t, c, r)
		if got := tr.take(); !slices.Equal(got, tt.want) {
			t.Errorf("%s: a round trip through the proxy did %v, want %v", tt.name, got, tt.want)
		}
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	_ = c.SetReadDeadline(time.Now().Add(2 * time.Second))
	if _, err := r.ReadByte(); !errors.Is(err, io.EOF) {
		t.Errorf("read after Close = %v, want EOF", err)
	}
}

// TestProxyRefusesRemote: the proxy fronts loopback endpoints only.
func TestProxyRefusesRemote(t *testing.T) {
	_, err := NewProxy("192.0.2.1:5432")
	var nl *NotLoopbackError
	if !errors.As(err, &nl) {
		t.Fatalf("NewProxy(192.0.2.1:5432) = %v, want a NotLoopbackError", err)
	}
}

// TestGate: open, a gate passes requests; a failing window answers 503,
// drops the connection, or handles the request and drops the answer, never
// a plain 200; a holding window answers only once it ends. Each window
// lasts until the test heals it, once the gate has taken every request the
// test sent into it.
func TestGate(t *testing.T) {
	var holding atomic.Bool // the test is inside a holding window
	g := NewGate(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		if holding.Load() {
			t.Error("a request reached the server during a holding window")
		}
		w.WriteHeader(http.StatusOK)
	}), 1)
	srv := httptest.NewServer(g)
	defer srv.Close()
	// POST: the transport retries an idempotent GET whose connection
	// dropped, and that retry may land after the window.
	get := func() (int, error) {
		resp, err := srv.Client().Post(srv.URL, "text/plain", nil)
		if err != nil {
			return 0, err
		}
		resp.Body.Close()
		return resp.StatusCode, nil
	}
	if code, err := get(); err != nil || code != http.StatusOK {
		t.Fatalf("open gate: %d %v", code, err)
	}

	heal := inject(t, g, g.FailTarget(Ingest503, "x"), gateFail)
	const requests = 12
	seen := map[string]int{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for range requests {
		wg.Go(func() {
			code, err := get()
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err != nil:
				seen["dropped"]++
			case code == http.StatusServiceUnavailable:
				seen["503"]++
			default:
				t.Errorf("a failing gate answered %d", code)
			}
		})
	}
	// A hung request holds until the window ends: heal once all are in.
	until(t, "every request in the failing window", func() bool {
		return g.counts[failRefuse].Load()+g.counts[failHang].Load()+g.counts[failLoseAnswer].Load() == requests
	})
	heal()
	wg.Wait()
	if seen["dropped"] == 0 || seen["503"] == 0 {
		t.Errorf("failing window: %v, want both 503s and dropped connections", seen)
	}

	holding.Store(true)
	heal = inject(t, g, g.HoldTarget(DynamoPause, "y"), gateHold)
	answered := make(chan error, 1)
	go func() {
		code, err := get()
		if err == nil && code != http.StatusOK {
			err = fmt.Errorf("HTTP %d", code)
		}
		answered <- err
	}()
	until(t, "the request held in the window", func() bool { return g.held.Load() == 1 })
	select {
	case err := <-answered:
		t.Fatalf("a held request was answered (%v) before the window ended", err)
	default:
	}
	holding.Store(false)
	if detail := heal(); detail != "1 held until the window ended" {
		t.Errorf("holding window detail %q, want the one request it held", detail)
	}
	if err := <-answered; err != nil {
		t.Fatalf("held request: %v", err)
	}
}

// inject starts target's fault with a window only heal ends, and returns
// once the gate is in mode. heal ends the window and returns the fault's
// detail.
func inject(t *testing.T, g *Gate, target Target, mode gateMode) (heal func() string) {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	detail := make(chan string, 1)
	go func() {
		d, _ := target.Inject(ctx, Fault{For: time.Hour})
		detail <- d
	}()
	until(t, fmt.Sprintf("the gate in mode %d", mode), func() bool {
		g.mu.Lock()
		defer g.mu.Unlock()
		return g.mode == mode
	})
	return func() string { cancel(); return <-detail }
}

// until polls cond until it holds; the watchdog running out first fails t
// as hung, saying what it waited for.
func until(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(watchdog)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("hung: waited %s for %s", watchdog, what)
		}
		time.Sleep(time.Millisecond)
	}
}
