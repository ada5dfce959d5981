package vercel

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/stormctl/stormctl/internal/base/redact"
	"github.com/stormctl/stormctl/internal/eventlog"
	"github.com/stormctl/stormctl/internal/history"
	"github.com/stormctl/stormctl/internal/nemesis"
	"github.com/stormctl/stormctl/worlds"
	"github.com/stormctl/stormctl/worlds/vercel/ingest"
)

// Name is the world's registry name.
const Name = "vercel"

// Config configures a World.
type Config struct {
	// IngestURL is the base URL of a running ingest server. Empty: the
	// World starts its own (a Stack) on 127.0.0.1 and stops it on Close.
	IngestURL string
	// DynamoEndpoint is DynamoDB Local's or AWS's endpoint for a World's
	// own ingest server (standard credential chain). Empty: an embedded
	// minidyn. Ignored with IngestURL.
	DynamoEndpoint string
	// RedisURL is the Redis of a World's own ingest server's count index.
	// Empty: an embedded miniredis. Ignored with IngestURL.
	RedisURL string
	// Keep keeps the table(s) and the index's keys on Close. Ignored with
	// IngestURL.
	Keep bool
	// Latency shapes the ingest server's mint-to-write window (nil:
	// none). Ignored with IngestURL: that server has its own.
	Latency worlds.Profile
	// Seed seeds the ULID entropy of a World's own ingest server.
	Seed uint64
	// RequestTimeout bounds every request to the ingest server, answer
	// included (0: DefaultRequestTimeout): a server that hangs is
	// unavailable, never a run stuck waiting on it.
	RequestTimeout time.Duration
	// Nemesis opens the World for fault injection (storm --nemesis): the
	// client reaches the ingest server through a latency proxy, its own
	// stack opens with StackConfig.Nemesis, and the World offers its
	// targets. Every endpoint must be on loopback.
	Nemesis bool
}

// DefaultRequestTimeout bounds a request to the ingest server when
// Config.RequestTimeout is 0: far above any write's window (the latency
// profile draws up to a few seconds) and the server's own 30 s bound on a
// DynamoDB write.
const DefaultRequestTimeout = 60 * time.Second

// World is the vercel world's client: it talks to an ingest server only
// over HTTP and maps its answers back to the eventlog contract. It is safe
// for concurrent use.
type World struct {
	base      string
	hc        *http.Client
	transport *http.Transport
	stack     *Stack // nil with Config.IngestURL
	closed    atomic.Bool
	proxy     *nemesis.Proxy // in front of the ingest server, with Config.Nemesis
}

var (
	_ worlds.World        = (*World)(nil)
	_ worlds.Dumper       = (*World)(nil)
	_ worlds.CommitTimes  = (*World)(nil)
	_ worlds.GuardCounter = (*World)(nil)
	_ worlds.Resetter     = (*World)(nil)
	_ worlds.Slotter      = (*World)(nil)
)

// Register adds the vercel world to r. Every World it opens takes its
// endpoints from src (called once per Open); latency and seed come from
// worlds.Options.
func Register(r *worlds.Registry, src func(ctx context.Context) (Config, error)) {
	r.Register(Entry(src))
}

// Entry describes the vercel world whose Worlds take their endpoints from
// src (called once per Open): the registry's entry, and what a test hands
// the conformance suite (worldtest.Exercise).
func Entry(src func(ctx context.Context) (Config, error)) worlds.Entry {
	return worlds.Entry{
		Name: Name,
		Description: "HTTP ingest server minting wevt_ ids over DynamoDB (aws-sdk-go-v2; embedded minidyn by default); " +
			"seq through TransactWriteItems on the run item's counter; slot as reserve, window, commit (conditional " +
			"transactions on slot items, noop seals); legacy count-index guard in Redis",
		Schemes: []string{string(eventlog.SchemeULID), string(eventlog.SchemeSeq), string(eventlog.SchemeSlot)},
		Guards:  []eventlog.Guard{eventlog.GuardCountIndex},
		// HookClaims: the ingest's token partition (dynamo.WriteHookClaims).
		HookClaims: true,
		// A seq page reads the whole run (Query, sorted by seq after the
		// read): pages of 100 made loading an n-event log cost n²/100 item
		// reads, 1,000 (a DynamoDB Query page holds up to 1 MB) cost n. A
		// ulid or slot page is a Query from the cursor with a Limit: the
		// common size.
		PageSizes: map[string]int{string(eventlog.SchemeSeq): 1000},
		// The ingest server, the embedded DynamoDB-API server (one lock,
		// JSON both ways) and the engine share this process. The 216-run
		// acceptance storm on 2 cores: at 40 in flight, runs grew to twice
		// their size and it did not finish in 10 minutes; at 12, 7m02s once
		// and over 15 minutes once (a little outside load tipped it the same
		// way); at 8, 7m53s using two thirds of the CPU, leaving headroom.
		RunsPerCore: 4,
		Endpoints:   []worlds.Endpoint{IngestFlag, DynamoFlag, RedisFlag},
		Faults:      []nemesis.Kind{nemesis.Ingest503, nemesis.DynamoPause, nemesis.RedisDown, nemesis.Latency},
		Open: worlds.FactoryFrom(src, func(cfg *Config, opts worlds.Options) {
			cfg.Latency, cfg.Seed, cfg.Nemesis = opts.Latency, opts.Seed, opts.Nemesis
		}, Open),
	}
}

// Open returns a World. Without cfg.IngestURL it starts a Stack (ingest
// server, DynamoDB store and count index, embedded servers as needed) and
// Close stops it; an endpoint that cannot be reached fails within a few
// seconds with eventlog.ErrUnavailable. With cfg.IngestURL it checks that
// the server answers.
func Open(ctx context.Context, cfg Config) (*World, error) {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConns = 512
	tr.MaxIdleConnsPerHost = 256
	tr.IdleConnTimeout = 30 * time.Second
	tr.DialContext = (&net.Dialer{Timeout: 2 * time.Second, KeepAlive: 30 * time.Second}).DialContext
	if cfg.RequestTimeout <= 0 {
		cfg.RequestTimeout = DefaultRequestTimeout
	}
	w := &World{hc: &http.Client{Transport: tr, Timeout: cfg.RequestTimeout}, transport: tr}
	if cfg.IngestURL == "" {
		st, err := StartStack(ctx, StackConfig{
			DynamoEndpoint: cfg.DynamoEndpoint, RedisURL: cfg.RedisURL, Keep: cfg.Keep,
			Latency: cfg.Latency, Seed: cfg.Seed, Nemesis: cfg.Nemesis,
		})
		if err != nil {
			return nil, err
		}
		w.stack, w.base = st, st.URL()
		if err := w.proxyIngest(cfg); err != nil {
			_ = st.Close()
			return nil, err
		}
		return w, nil
	}
	u, err := url.Parse(cfg.IngestURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("vercel: invalid ingest URL %q: want http://host:port", redact.String(cfg.IngestURL))
	}
	w.base = strings.TrimRight(cfg.IngestURL, "/")
	if err := w.proxyIngest(cfg); err != nil {
		return nil, err
	}
	hctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := w.do(hctx, http.MethodGet, "/healthz", nil, nil); err != nil {
		tr.CloseIdleConnections()
		w.closeProxy()
		return nil, err
	}
	return w, nil
}

// Kept implements worlds.Keeper: what the World's own stack leaves on the
// servers it was given (Stack.Kept); nothing with Config.IngestURL, whose
// server owns its stores.
func (w *World) Kept() string {
	if w.stack == nil {
		return ""
	}
	return w.stack.Kept()
}

// URL returns the base URL of the ingest server the World talks to.
func (w *World) URL() string { return w.base }

// Stack returns the World's own stack, nil with Config.IngestURL.
func (w *World) Stack() *Stack { return w.stack }

// CreateRun creates the run, stamped with its scheme, fence basis and
// guard. An existing run fails with eventlog.ErrConflict.
func (w *World) CreateRun(ctx context.Context, r eventlog.Run) error {
	return w.do(ctx, http.MethodPost, "/v1/runs", r, nil)
}

// Append writes facts unfenced, the batch all or nothing. Under seq the
// server assigns positions at commit; under slot it reserves the slots,
// spends the window and commits (a commit whose slot a reader sealed
// meanwhile is an *eventlog.SealedError: nothing of it is visible).
func (w *World) Append(ctx context.Context, runID string, d []eventlog.Draft) ([]eventlog.Event, error) {
	if err := checkPayloads(runID, d); err != nil {
		return nil, err
	}
	var out ingest.EventsResponse
	req := ingest.AppendRequest{Events: nonNil(d), Actor: worlds.ActorFrom(ctx)}
	err := w.do(ctx, http.MethodPost, runPath(runID, "events"), req, &out)
	return out.Events, err
}

// AppendFenced writes a batch of decisions all or nothing if the log is
// where the writer expects it: under seq the fence is the condition of the
// write's transaction; under slot, of its reservation's (on the run's slot
// counter: slots reserved, committed or not); under ulid the server counts
// the run's events first (the legacy guard); on a run stamped
// eventlog.GuardCountIndex the server judges expectedSeq against its Redis
// count instead. A rejection is an *eventlog.FencedError.
func (w *World) AppendFenced(ctx context.Context, runID string, expectedSeq int64, d []eventlog.Draft) ([]eventlog.Event, error) {
	if err := checkPayloads(runID, d); err != nil {
		return nil, err
	}
	var out ingest.EventsResponse
	req := ingest.FencedRequest{ExpectedSeq: &expectedSeq, Events: nonNil(d), Actor: worlds.ActorFrom(ctx)}
	err := w.do(ctx, http.MethodPost, runPath(runID, "events/fenced"), req, &out)
	return out.Events, err
}

// List returns up to limit events after the cursor in the run's scheme
// order (limit <= 0: all of them). Under seq the server asserts density;
// under slot it returns committed events and noops only and refuses a page
// with an empty slot below a committed one (an *eventlog.HoleError).
func (w *World) List(ctx context.Context, runID string, after eventlog.Cursor, limit int) (eventlog.Page, error) {
	q := url.Values{}
	if after.ID != "" {
		q.Set("afterId", after.ID)
	}
	if after.Seq != 0 {
		q.Set("afterSeq", strconv.FormatInt(after.Seq, 10))
	}
	if limit > 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	p := runPath(runID, "events")
	if len(q) > 0 {
		p += "?" + q.Encode()
	}
	var page eventlog.Page
	err := w.do(ctx, http.MethodGet, p, nil, &page)
	return page, err
}

// Reserve implements worlds.Slotter: the server takes the slot run's next
// len(d) slots and claims d's keys in one transaction (a taken key is an
// *eventlog.ConflictError and takes nothing). The reservation carries d.
func (w *World) Reserve(ctx context.Context, runID string, d []eventlog.Draft) (worlds.Reservation, error) {
	if err := checkPayloads(runID, d); err != nil {
		return worlds.Reservation{}, err
	}
	var out ingest.ReservationResponse
	if err := w.do(ctx, http.MethodPost, runPath(runID, "slots/reserve"), ingest.ReserveRequest{Events: nonNil(d)}, &out); err != nil {
		return worlds.Reservation{}, err
	}
	if out.Count != len(d) || (len(d) > 0 && out.First < 1) {
		return worlds.Reservation{}, fmt.Errorf("vercel: run %s: the server reserved %d slots from %d for %d drafts", runID, out.Count, out.First, len(d))
	}
	return worlds.Reservation{RunID: runID, First: out.First, Drafts: nonNil(d), ReservedAt: out.ReservedAt}, nil
}

// Commit implements worlds.Slotter: the server commits the reservation's
// events at its slots in one transaction, conditioned on every slot being
// still reserved. If one was sealed, it commits nothing, seals the rest
// (sealed by worlds.ActorFrom(ctx)) and this returns an
// *eventlog.SealedError.
func (w *World) Commit(ctx context.Context, r worlds.Reservation) ([]eventlog.Event, error) {
	if err := checkPayloads(r.RunID, r.Drafts); err != nil {
		return nil, err
	}
	var out ingest.EventsResponse
	req := ingest.CommitRequest{First: r.First, ReservedAt: r.ReservedAt, Events: nonNil(r.Drafts), Actor: worlds.ActorFrom(ctx)}
	err := w.do(ctx, http.MethodPost, runPath(r.RunID, "slots/commit"), req, &out)
	return out.Events, err
}

// Seal implements worlds.Slotter: the server fills the slot with a noop,
// sealed by worlds.ActorFrom(ctx), if it is reserved and empty, and
// releases its keys; a filled slot is left alone (sealed false), a slot
// never reserved is an error.
func (w *World) Seal(ctx context.Context, runID string, slot int64) (eventlog.Event, bool, error) {
	var out ingest.SealResponse
	p := runPath(runID, "slots/"+strconv.FormatInt(slot, 10)+"/seal")
	if err := w.do(ctx, http.MethodPost, p, ingest.SealRequest{Actor: worlds.ActorFrom(ctx)}, &out); err != nil {
		return eventlog.Event{}, false, err
	}
	if !out.Sealed {
		return eventlog.Event{}, false, nil
	}
	if out.Event == nil {
		return eventlog.Event{}, false, fmt.Errorf("vercel: run %s: slot %d sealed without its noop in the answer", runID, slot)
	}
	return *out.Event, true, nil
}

// Dump implements worlds.Dumper: every stored event of the run in scheme
// order, without the density assertion.
func (w *World) Dump(ctx context.Context, runID string) ([]eventlog.Event, error) {
	var out ingest.EventsResponse
	err := w.do(ctx, http.MethodGet, runPath(runID, "dump"), nil, &out)
	return out.Events, err
}

// CommitTimes implements worlds.CommitTimes with Source "server": the time
// the ingest server saw DynamoDB acknowledge each write. Server-observed,
// never a store commit timestamp (DynamoDB keeps none); zero for events the
// server did not write itself.
func (w *World) CommitTimes(ctx context.Context, runID string) ([]worlds.CommitTime, error) {
	var out ingest.CommitTimesResponse
	if err := w.do(ctx, http.MethodGet, runPath(runID, "commit-times"), nil, &out); err != nil {
		return nil, err
	}
	cts := make([]worlds.CommitTime, len(out.CommitTimes))
	for i, c := range out.CommitTimes {
		cts[i] = worlds.CommitTime{EventID: c.EventID, Seq: c.Seq, At: c.At, Source: c.Source}
	}
	return cts, nil
}

// GuardCounts implements worlds.GuardCounter: how the count-index guard
// fared on the run (all zero on a run without it).
func (w *World) GuardCounts(ctx context.Context, runID string) (history.GuardCounts, error) {
	var out ingest.GuardResponse
	err := w.do(ctx, http.MethodGet, runPath(runID, "guard"), nil, &out)
	return out.Counts, err
}

// Reset implements worlds.Resetter: the server drops every run, its
// table(s) and its index keys.
func (w *World) Reset(ctx context.Context) error {
	return w.do(ctx, http.MethodPost, "/v1/reset", nil, nil)
}

// Close stops the World's own stack, if it has one (deleting its table(s)
// and index keys unless Keep), and drops its connections. Later operations
// fail.
func (w *World) Close() error {
	if w.closed.Swap(true) {
		return nil
	}
	var err error
	if w.stack != nil {
		err = w.stack.Close()
	}
	w.transport.CloseIdleConnections()
	w.closeProxy()
	return err
}

// errClosed is returned by every operation on a closed World.
var errClosed = errors.New("vercel: world is closed")

func runPath(runID, rest string) string {
	return "/v1/runs/" + url.PathEscape(runID) + "/" + rest
}

func nonNil(d []eventlog.Draft) []eventlog.Draft {
	if d == nil {
		return []eventlog.Draft{}
	}
	return d
}

// checkPayloads refuses drafts whose payload is not JSON before anything is
// sent (the wire carries payloads as JSON values).
func checkPayloads(runID string, d []eventlog.Draft) error {
	for i, x := range d {
		if len(x.Payload) > 0 && !json.Valid(x.Payload) {
			return fmt.Errorf("vercel: run %s: draft %d (%s): payload is not valid JSON", runID, i, x.Type)
		}
	}
	return nil
}

// do sends one request (body as JSON unless nil) and decodes a 2xx answer
// into out (unless nil); other answers become the contract's errors.
func (w *World) do(ctx context.Context, method, path string, body, out any) error {
	if w.closed.Load() {
		return errClosed
	}
	op := method + " " + path
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return fmt.Errorf("vercel: %s: encode: %w", op, err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, w.base+path, rd)
	if err != nil {
		return fmt.Errorf("vercel: %s: %w", op, err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := w.hc.Do(req)
	if err != nil {
		if cerr := ctx.Err(); cerr != nil {
			return fmt.Errorf("vercel: %s: %w", op, cerr)
		}
		return eventlog.Unavailable("vercel: ingest server "+w.base, rootCause(err))
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		if cerr := ctx.Err(); cerr != nil {
			return fmt.Errorf("vercel: %s: %w", op, cerr)
		}
		return eventlog.Unavailable("vercel: "+op+": read the answer", err)
	}
	if resp.StatusCode/100 == 2 {
		if out == nil || resp.StatusCode == http.StatusNoContent {
			return nil
		}
		if err := json.Unmarshal(data, out); err != nil {
			return fmt.Errorf("vercel: %s: decode the answer: %w", op, err)
		}
		return nil
	}
	return statusErr(ctx, op, resp.StatusCode, data)
}

// statusErr maps an error answer to the contract: 412 an
// *eventlog.FencedError; 409 sealed an *eventlog.SealedError, hole an
// *eventlog.HoleError, gap an *eventlog.GapError, duplicate an
// *eventlog.DuplicateError, not_reserved a plain error, any other
// eventlog.ErrConflict (an *eventlog.ConflictError for a taken key); 404
// no_run eventlog.ErrNoRun; 503 eventlog.ErrUnavailable; anything else a
// plain error carrying the server's message.
func statusErr(ctx context.Context, op string, status int, data []byte) error {
	var b ingest.ErrorBody
	if err := json.Unmarshal(data, &b); err != nil || b.Code == "" {
		b = ingest.ErrorBody{Error: strings.TrimSpace(string(data))}
		if len(b.Error) > 200 {
			b.Error = b.Error[:200] + "…"
		}
	}
	runID := runOf(op)
	switch {
	case status == http.StatusPreconditionFailed && b.Expected != nil && b.Actual != nil:
		return &eventlog.FencedError{RunID: runID, Expected: *b.Expected, Actual: *b.Actual, InBand: b.InBand}
	case status == http.StatusConflict && b.Code == ingest.CodeSealed && b.Slot != nil:
		return &eventlog.SealedError{RunID: runID, Slot: *b.Slot}
	case status == http.StatusConflict && b.Code == ingest.CodeHole && b.Slot != nil && b.Above != nil:
		return &eventlog.HoleError{RunID: runID, Slot: *b.Slot, Above: *b.Above}
	case status == http.StatusConflict && b.Code == ingest.CodeGap && b.Want != nil && b.Got != nil:
		return &eventlog.GapError{RunID: runID, Want: *b.Want, Got: *b.Got}
	case status == http.StatusConflict && b.Code == ingest.CodeDuplicate && b.Seq != nil:
		return &eventlog.DuplicateError{RunID: runID, Seq: *b.Seq}
	case status == http.StatusConflict && b.Code == ingest.CodeNotReserved:
		return fmt.Errorf("vercel: %s: %s", op, b.Error)
	case status == http.StatusConflict && b.Key != "":
		return &eventlog.ConflictError{RunID: runID, Key: b.Key}
	case status == http.StatusConflict:
		return fmt.Errorf("vercel: %s: %s: %w", op, b.Error, eventlog.ErrConflict)
	case status == http.StatusNotFound && b.Code == ingest.CodeNoRun:
		return fmt.Errorf("vercel: run %s: %w", runID, eventlog.ErrNoRun)
	case status == http.StatusBadRequest && b.Code == ingest.CodeHookClaim:
		return fmt.Errorf("vercel: %s: %s: %w", op, b.Error, eventlog.ErrHookClaimUnsupported)
	case status == http.StatusServiceUnavailable && b.Code == ingest.CodeCancelled && ctx.Err() != nil:
		return fmt.Errorf("vercel: %s: %w", op, ctx.Err())
	case status == http.StatusServiceUnavailable:
		return eventlog.Unavailable("vercel: "+op, errors.New(b.Error))
	}
	if b.Code != "" {
		return fmt.Errorf("vercel: %s: %d %s: %s", op, status, b.Code, b.Error)
	}
	return fmt.Errorf("vercel: %s: HTTP %d: %s", op, status, b.Error)
}

// runOf reads the run id out of an operation's path.
func runOf(op string) string {
	_, p, _ := strings.Cut(op, " /v1/runs/")
	id, _, _ := strings.Cut(p, "/")
	if u, err := url.PathUnescape(id); err == nil {
		return u
	}
	return id
}

// rootCause returns the network error inside a transport error when there
// is one: its text names the address and the reason in one line.
func rootCause(err error) error {
	var opErr *net.OpError
	if errors.As(err, &opErr) {
		return opErr
	}
	return err
}
