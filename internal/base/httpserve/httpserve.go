// Package httpserve serves an http.Handler in the background on a
// listener of its own, for the HTTP servers stormctl starts itself (the
// vercel world's ingest server, the devkit-vercel world's backend), and
// stops it: Shutdown waits for the requests in flight, then closes what
// is left.
package httpserve

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"
)

// Server is a handler served in the background.
type Server struct {
	hs   *http.Server
	url  string
	done chan error
}

// Start listens on addr (such as 127.0.0.1:0) and serves h in the
// background; logger receives the server's own errors at debug level.
func Start(addr string, h http.Handler, logger *slog.Logger) (*Server, error) {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", addr, err)
	}
	s := &Server{
		hs:   &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, ErrorLog: slog.NewLogLogger(logger.Handler(), slog.LevelDebug)},
		url:  "http://" + l.Addr().String(),
		done: make(chan error, 1),
	}
	go func() { s.done <- s.hs.Serve(l) }()
	return s, nil
}

// URL is the server's base URL, http://host:port.
func (s *Server) URL() string { return s.url }

// Shutdown stops listening and waits for the requests in flight (until ctx
// ends, then closes their connections). A second Shutdown returns at once.
func (s *Server) Shutdown(ctx context.Context) error {
	err := s.hs.Shutdown(ctx)
	if err != nil {
		err = errors.Join(err, s.hs.Close())
	}
	if serr := <-s.done; serr != nil && !errors.Is(serr, http.ErrServerClosed) {
		err = errors.Join(err, serr)
	}
	s.done <- http.ErrServerClosed
	return err
}
