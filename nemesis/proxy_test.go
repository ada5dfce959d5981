package nemesis

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"
)

// echo starts a line echo server on loopback.
func echo(t *testing.T) string {
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
			go func() { defer c.Close(); _, _ = io.Copy(c, c) }()
		}
	}()
	t.Cleanup(func() { l.Close(); <-done })
	return l.Addr().String()
}

func roundTrip(t *testing.T, c net.Conn, r *bufio.Reader) time.Duration {
	t.Helper()
	began := time.Now()
	if _, err := c.Write([]byte("ping\n")); err != nil {
		t.Fatal(err)
	}
	if _, err := r.ReadString('\n'); err != nil {
		t.Fatal(err)
	}
	return time.Since(began)
}

// TestProxyLatency: the delay is added per chunk, both ways, only while
// set; Close ends the connections through the proxy.
func TestProxyLatency(t *testing.T) {
	p, err := NewProxy(echo(t))
	if err != nil {
		t.Fatal(err)
	}
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	r := bufio.NewReader(c)
	if d := roundTrip(t, c, r); d > 50*time.Millisecond {
		t.Errorf("round trip without a delay took %s", d)
	}
	p.SetDelay(60 * time.Millisecond)
	if d := roundTrip(t, c, r); d < 120*time.Millisecond {
		t.Errorf("round trip with 60ms per chunk took %s, want at least 120ms (both ways)", d)
	}
	p.SetDelay(0)
	if d := roundTrip(t, c, r); d > 50*time.Millisecond {
		t.Errorf("round trip after the delay took %s", d)
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
// a plain 200; a holding window answers only once it ends.
func TestGate(t *testing.T) {
	g := NewGate(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
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
	done := make(chan struct{})
	go func() {
		defer close(done)
		g.FailTarget(Ingest503, "x").Inject(t.Context(), Fault{For: 300 * time.Millisecond})
	}()
	time.Sleep(20 * time.Millisecond)
	// All at once, inside the window: a hung request holds until its end.
	seen := map[string]int{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for range 12 {
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
	wg.Wait()
	<-done
	if seen["dropped"] == 0 || seen["503"] == 0 {
		t.Errorf("failing window: %v, want both 503s and dropped connections", seen)
	}
	go func() { g.HoldTarget(DynamoPause, "y").Inject(t.Context(), Fault{For: 300 * time.Millisecond}) }()
	time.Sleep(20 * time.Millisecond)
	began := time.Now()
	if code, err := get(); err != nil || code != http.StatusOK {
		t.Fatalf("held request: %d %v", code, err)
	}
	if d := time.Since(began); d < 200*time.Millisecond {
		t.Errorf("a held request was answered after %s, before the window ended", d)
	}
}
