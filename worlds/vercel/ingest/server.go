package ingest

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	mrand "math/rand/v2"
	"net/http"
	"sync"
	"time"

	"github.com/stormctl/stormctl/internal/base/httpserve"
	"github.com/stormctl/stormctl/internal/eventlog"
	"github.com/stormctl/stormctl/worlds"
	"github.com/stormctl/stormctl/worlds/vercel/countindex"
	"github.com/stormctl/stormctl/worlds/vercel/dynamo"
)

// Config configures a Server.
type Config struct {
	// Store is the DynamoDB store the server writes to (required).
	Store *dynamo.Store
	// Index is the count index of the legacy guard. Nil: runs stamped
	// with eventlog.GuardCountIndex are refused at creation.
	Index *countindex.Index
	// Latency shapes the window between minting an event's id and sending
	// its write to DynamoDB: the payload drain (nil: none).
	Latency worlds.Profile
	// Seed seeds the entropy of the wevt_ ULIDs the server mints.
	Seed uint64
	// MaxBody is the largest request body read (0: DefaultMaxBody).
	MaxBody int64
	// WriteTimeout bounds a DynamoDB write once it is sent (0: 30 s). A
	// write that was sent finishes even if its client goes away, so that
	// the server knows its outcome.
	WriteTimeout time.Duration
	// Logger receives the server's warnings (nil: discarded).
	Logger *slog.Logger
	// Wrap, when set, wraps the server's handler once Start serves it:
	// the nemesis's gate (storm --nemesis) stands there.
	Wrap func(http.Handler) http.Handler
}

// Server is the ingest server: an http.Handler over a Store and an Index.
type Server struct {
	cfg    Config
	minter *eventlog.Minter
	mux    *http.ServeMux
	acks   sync.Map // run id → *runAcks
	guards sync.Map // run id → *guardCounts

	// Set by Start.
	mu  sync.Mutex
	srv *httpserve.Server
}

// New returns a Server over cfg.Store.
func New(cfg Config) (*Server, error) {
	if cfg.Store == nil {
		return nil, errors.New("ingest: Config.Store is nil")
	}
	cfg.Latency = worlds.ProfileOrNone(cfg.Latency)
	if cfg.MaxBody <= 0 {
		cfg.MaxBody = DefaultMaxBody
	}
	if cfg.WriteTimeout <= 0 {
		cfg.WriteTimeout = 30 * time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	s := &Server{cfg: cfg, minter: eventlog.NewMinter(eventlog.ServerPrefix, newEntropy(cfg.Seed))}
	s.routes()
	return s, nil
}

// newEntropy is a ChaCha8 stream seeded from seed, the ULID entropy source.
func newEntropy(seed uint64) *mrand.ChaCha8 {
	var b [32]byte
	binary.LittleEndian.PutUint64(b[:8], seed)
	copy(b[8:], "stormctl/worlds/vercel/ingest")
	return mrand.NewChaCha8(b)
}

func (s *Server) routes() {
	m := http.NewServeMux()
	m.HandleFunc("POST /v1/runs", s.createRun)
	m.HandleFunc("POST /v1/runs/{runId}/events", s.appendFacts)
	m.HandleFunc("POST /v1/runs/{runId}/events/fenced", s.appendFenced)
	m.HandleFunc("POST /v1/runs/{runId}/slots/reserve", s.reserve)
	m.HandleFunc("POST /v1/runs/{runId}/slots/commit", s.commitReservation)
	m.HandleFunc("POST /v1/runs/{runId}/slots/{slot}/seal", s.seal)
	m.HandleFunc("GET /v1/runs/{runId}/events", s.list)
	m.HandleFunc("GET /v1/runs/{runId}/dump", s.dump)
	m.HandleFunc("GET /v1/runs/{runId}/commit-times", s.commitTimes)
	m.HandleFunc("GET /v1/runs/{runId}/guard", s.guard)
	m.HandleFunc("POST /v1/reset", s.reset)
	m.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) })
	m.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		if allow := allowFor(r); allow != "" {
			w.Header().Set("Allow", allow)
			writeError(w, http.StatusMethodNotAllowed, ErrorBody{Code: CodeMethodNotAllowed, Error: r.Method + " is not allowed on " + r.URL.Path})
			return
		}
		writeError(w, http.StatusNotFound, ErrorBody{Code: CodeNotFound, Error: "no route " + r.Method + " " + r.URL.Path})
	})
	s.mux = m
}

// ServeHTTP serves the JSON API (see the package documentation).
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.mux.ServeHTTP(w, r) }

// allowFor lists the methods the request's path is served under.
func allowFor(r *http.Request) string {
	var allow []string
	for _, m := range []string{http.MethodGet, http.MethodPost} {
		if m == r.Method {
			continue
		}
		probe := r.Clone(r.Context())
		probe.Method = m
		if _, p := routeMux.Handler(probe); p != "" {
			allow = append(allow, m)
		}
	}
	if len(allow) == 0 {
		return ""
	}
	out := allow[0]
	for _, a := range allow[1:] {
		out += ", " + a
	}
	return out
}

// routeMux knows the routes (with no-op handlers), to tell a 405 from a 404.
var routeMux = func() *http.ServeMux {
	m := http.NewServeMux()
	nop := func(http.ResponseWriter, *http.Request) {}
	for _, p := range []string{
		"POST /v1/runs", "POST /v1/runs/{runId}/events", "POST /v1/runs/{runId}/events/fenced",
		"POST /v1/runs/{runId}/slots/reserve", "POST /v1/runs/{runId}/slots/commit", "POST /v1/runs/{runId}/slots/{slot}/seal",
		"GET /v1/runs/{runId}/events", "GET /v1/runs/{runId}/dump", "GET /v1/runs/{runId}/commit-times",
		"GET /v1/runs/{runId}/guard", "POST /v1/reset", "GET /healthz",
	} {
		m.HandleFunc(p, nop)
	}
	return m
}()

// Start listens on addr (such as 127.0.0.1:0) and serves in the
// background; it returns the server's base URL, http://host:port.
func (s *Server) Start(addr string) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.srv != nil {
		return "", errors.New("ingest: server already started")
	}
	var h http.Handler = s
	if s.cfg.Wrap != nil {
		h = s.cfg.Wrap(s)
	}
	srv, err := httpserve.Start(addr, h, s.cfg.Logger)
	if err != nil {
		return "", fmt.Errorf("ingest: %w", err)
	}
	s.srv = srv
	return srv.URL(), nil
}

// URL returns the base URL Start listens on ("" before Start).
func (s *Server) URL() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.srv == nil {
		return ""
	}
	return s.srv.URL()
}

// Shutdown stops a started server: it stops listening and waits for the
// requests in flight (until ctx ends, then closes their connections).
func (s *Server) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	srv := s.srv
	s.mu.Unlock()
	if srv == nil {
		return nil
	}
	return srv.Shutdown(ctx)
}
