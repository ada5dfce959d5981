package backend

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"

	"github.com/stormctl/stormctl/internal/base/httpserve"
)

// Routes are the endpoints @workflow/world-vercel 4.7.4 and 5.0.0-beta.50
// call (under their server's /api), by the method and pattern this server
// matches them with. Implemented says which this emulation serves; every
// other request is answered 501 naming its method and path.
var Routes = []Route{
	{"POST /api/v4/runs/{runId}/events/{eventType}", true},
	{"POST /api/v4/runs/{runId}/events/batch", true}, // 5.0: events.createBatch, slot runs only
	{"GET /api/v4/runs/{runId}/events", true},
	{"GET /api/v4/runs/{runId}/events/{eventId}", true},
	{"GET /api/v4/events", true},
	{"POST /api/v1/runs/{runId}/events", false}, // v1Compat: legacy spec-version runs
	{"POST /api/v1/runs/create", false},
	{"PUT /api/v1/runs/{runId}/cancel", false},
	{"GET /api/v2/runs", false},
	{"GET /api/v2/runs/{runId}", true},
	{"GET /api/v2/runs/{runId}/steps", false},
	{"POST /api/v2/runs/{runId}/steps", false},
	{"GET /api/v2/runs/{runId}/steps/{stepId}", false},
	{"PUT /api/v2/runs/{runId}/steps/{stepId}", false},
	{"GET /api/v2/hooks", false},
	{"POST /api/v2/hooks/create", false},
	{"GET /api/v2/hooks/by-token", true},
	{"GET /api/v2/hooks/{hookId}", false},
	{"DELETE /api/v2/hooks/{hookId}", false},
}

// Route is an endpoint of the world-vercel backend.
type Route struct {
	Pattern     string // "METHOD /path/{wildcard}", as http.ServeMux reads it
	Implemented bool
}

// noRoute is the pattern of a request no Route matches.
const noRoute = "(no route of the world-vercel backend)"

// Call is what a Server saw of one endpoint: how often it was called and,
// for one it does not implement (its route, or a request to it: a frame
// meta field the tenant does not read), the line its first such request
// was answered with.
type Call struct {
	Pattern     string
	Implemented bool
	Count       int
	// Line is the 501's message (endpoints not implemented only).
	Line string
}

// Server is the front of stormctl's emulation of the world-vercel backend
// ("workflow-server"): one HTTP server for every tenant, which routes each
// request to the tenant of its project (the x-vercel-project-id header
// world-vercel sends when given a project id), answers 501 to what no
// tenant implements, and records which endpoints were called (Calls).
type Server struct {
	routes *http.ServeMux // every Route, with no-op handlers: tells a pattern
	logger *slog.Logger

	mu      sync.Mutex
	tenants map[string]http.Handler
	calls   map[string]*Call
	srv     *httpserve.Server
}

// NewServer returns a server with no tenant (nil logger: discarded).
func NewServer(logger *slog.Logger) *Server {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	s := &Server{routes: http.NewServeMux(), logger: logger, tenants: map[string]http.Handler{}, calls: map[string]*Call{}}
	nop := func(http.ResponseWriter, *http.Request) {}
	for _, rt := range Routes {
		s.routes.HandleFunc(rt.Pattern, nop)
	}
	return s
}

// Register routes the requests of project to h (a Tenant, or a fault gate
// in front of one); Unregister stops it.
func (s *Server) Register(project string, h http.Handler) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.tenants[project] = h
}

// Unregister drops project's tenant.
func (s *Server) Unregister(project string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.tenants, project)
}

// NotImplemented is the line a request this emulation does not serve is
// answered with (501), naming its method and path.
func NotImplemented(method, path string) string {
	return fmt.Sprintf("stormctl's emulation of the world-vercel backend does not implement %s %s", method, path)
}

// ServeHTTP records the request's endpoint and serves it.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	_, pattern := s.routes.Handler(r)
	implemented := false
	for _, rt := range Routes {
		if rt.Pattern == pattern {
			implemented = rt.Implemented
		}
	}
	if pattern == "" {
		pattern = noRoute
	}
	line := ""
	if !implemented {
		line = NotImplemented(r.Method, r.URL.Path)
	}
	s.mu.Lock()
	c := s.calls[pattern]
	if c == nil {
		c = &Call{Pattern: pattern, Implemented: implemented, Line: line}
		s.calls[pattern] = c
	}
	c.Count++
	h := s.tenants[r.Header.Get("x-vercel-project-id")]
	s.mu.Unlock()
	switch {
	case !implemented:
		s.logger.Warn("devkit-vercel: " + line)
		writeError(w, http.StatusNotImplemented, "not_implemented", line)
	case h == nil:
		writeError(w, http.StatusNotFound, "not_found", fmt.Sprintf("no project %q on this server", r.Header.Get("x-vercel-project-id")))
	default:
		rec := &statusRecorder{ResponseWriter: w}
		h.ServeHTTP(rec, r)
		if rec.status == http.StatusNotImplemented {
			// A route served in part (a frame meta field it does not
			// read): the call is one the emulation does not implement.
			var e errorBody
			_ = json.Unmarshal(rec.body.Bytes(), &e)
			s.mu.Lock()
			c.Implemented = false
			if c.Line == "" {
				c.Line = e.Message
			}
			s.mu.Unlock()
			s.logger.Warn("devkit-vercel: " + e.Message)
		}
	}
}

// statusRecorder passes a response through, keeping its status and, for a
// 501, its body (an error line).
type statusRecorder struct {
	http.ResponseWriter
	status int
	body   bytes.Buffer
}

// WriteHeader implements http.ResponseWriter.
func (r *statusRecorder) WriteHeader(code int) {
	r.status = code
	r.ResponseWriter.WriteHeader(code)
}

// Write implements http.ResponseWriter.
func (r *statusRecorder) Write(b []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	if r.status == http.StatusNotImplemented && r.body.Len() < 4096 {
		r.body.Write(b)
	}
	return r.ResponseWriter.Write(b)
}

// Calls returns the endpoints called so far, by pattern.
func (s *Server) Calls() []Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Call, 0, len(s.calls))
	for _, c := range s.calls {
		out = append(out, *c)
	}
	slices.SortFunc(out, func(a, b Call) int { return strings.Compare(a.Pattern, b.Pattern) })
	return out
}

// Start listens on addr (such as 127.0.0.1:0) and serves in the
// background; it returns the server's base URL, http://host:port (the
// packages append /api).
func (s *Server) Start(addr string) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.srv != nil {
		return "", errors.New("backend: server already started")
	}
	srv, err := httpserve.Start(addr, s, s.logger)
	if err != nil {
		return "", fmt.Errorf("backend: %w", err)
	}
	s.srv = srv
	return srv.URL(), nil
}

// Shutdown stops a started server, waiting for the requests in flight
// until ctx ends.
func (s *Server) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	srv := s.srv
	s.mu.Unlock()
	if srv == nil {
		return nil
	}
	return srv.Shutdown(ctx)
}
