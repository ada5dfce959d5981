package dynamo

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	miniserver "github.com/truora/minidyn/server"
)

// Embedded is minidyn's DynamoDB-API server (github.com/truora/minidyn)
// serving on a loopback port of this process: an in-memory DynamoDB that
// leaves nothing on disk. Open a Store on Embedded.URL with
// Config.StaticCredentials.
type Embedded struct {
	srv  *http.Server
	mini *miniserver.Server
	url  string
	done chan error
	once sync.Once
	err  error
}

// StartEmbedded starts an embedded DynamoDB-API server on 127.0.0.1 and a
// free port.
func StartEmbedded() (*Embedded, error) { return StartEmbeddedWrapped(nil) }

// StartEmbeddedWrapped is StartEmbedded with the server's handler wrapped
// by wrap (nil: not wrapped): the nemesis's gate stands there.
func StartEmbeddedWrapped(wrap func(http.Handler) http.Handler) (*Embedded, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("dynamo: embedded server: listen: %w", err)
	}
	e := &Embedded{
		mini: miniserver.NewServer(),
		url:  "http://" + l.Addr().String(),
		done: make(chan error, 1),
	}
	var h http.Handler = &tableGuard{next: e.mini}
	if wrap != nil {
		h = wrap(h)
	}
	e.srv = &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 10 * time.Second,
		ErrorLog:          log.New(discard{}, "", 0),
	}
	go func() { e.done <- e.srv.Serve(l) }()
	return e, nil
}

// URL returns the server's endpoint, http://127.0.0.1:port.
func (e *Embedded) URL() string { return e.url }

// Server returns the minidyn server, for failure emulation in tests.
func (e *Embedded) Server() *miniserver.Server { return e.mini }

// Close stops the server (closing its connections) and drops every table.
// Calling it again returns the first result.
func (e *Embedded) Close() error {
	e.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		err := e.srv.Shutdown(ctx)
		if err != nil {
			err = errors.Join(err, e.srv.Close())
		}
		if serr := <-e.done; serr != nil && !errors.Is(serr, http.ErrServerClosed) {
			err = errors.Join(err, serr)
		}
		_ = e.mini.Reset()
		e.err = err
	})
	return e.err
}

// discard swallows the http.Server's own log lines (closed connections).
type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

// tableGuard keeps minidyn's table operations apart from everything else:
// its CreateTable, UpdateTable and DeleteTable change the server's table map
// without the lock its item operations take, so a table created for one run
// while another run's transaction looked its table up was a concurrent map
// read and write, which kills the process. A burst of requests (a
// dynamo-pause releasing what it held) made that likely. Its DescribeTable
// counts a table's items without that lock too, racing any write to the
// table (a store waiting for its new table while writes began), so it is
// kept apart as well.
type tableGuard struct {
	mu   sync.RWMutex
	next http.Handler
}

func (g *tableGuard) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	target := r.Header.Get("X-Amz-Target")
	switch target[strings.LastIndexByte(target, '.')+1:] {
	case "CreateTable", "UpdateTable", "DeleteTable", "DescribeTable":
		g.mu.Lock()
		defer g.mu.Unlock()
	default:
		g.mu.RLock()
		defer g.mu.RUnlock()
	}
	g.next.ServeHTTP(w, r)
}
