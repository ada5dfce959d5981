// Package nettest serves loopback listeners for tests: a port that answers
// as a test says, closed when the test ends.
package nettest

import (
	"net"
	"testing"
)

// Serve listens on a free loopback port, hands every connection to serve
// on a goroutine of its own until the test ends, and returns the
// listener's address (host:port).
func Serve(t testing.TB, serve func(net.Conn)) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go serve(c)
		}
	}()
	return l.Addr().String()
}

// HTTP400 answers whatever a connection sends first as an HTTP server
// refusing it would, then closes it: a server that is not the one a client
// expected.
func HTTP400(c net.Conn) {
	defer c.Close()
	buf := make([]byte, 512)
	c.Read(buf)
	c.Write([]byte("HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n"))
}

// ClosedPort is a loopback address nothing listens on.
func ClosedPort(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}
