package backend

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	mrand "math/rand/v2"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/oklog/ulid/v2"

	"github.com/stormctl/stormctl/internal/eventlog"
	"github.com/stormctl/stormctl/worlds"
	"github.com/stormctl/stormctl/worlds/vercel/dynamo"
)

// MaxPayload is the largest event payload the server takes, as the vercel
// world's ingest server (a DynamoDB item holds 400 KB).
const MaxPayload = 300 << 10

// maxBody bounds a POST body: a frame of a payload and its meta.
const maxBody = MaxPayload + 64<<10

// TenantConfig configures a Tenant.
type TenantConfig struct {
	// Store keeps the tenant's events (required).
	Store *dynamo.Store
	// Project is the project id the tenant's requests carry
	// (x-vercel-project-id): its hooks' projectId.
	Project string
	// Latency shapes the window between minting an event's id and sending
	// its write (nil: none).
	Latency worlds.Profile
	// Seed seeds the entropy of the ids the tenant mints.
	Seed uint64
	// WriteTimeout bounds a write once it is sent (0: 30 s); it runs to its
	// end even if the client goes away, so its outcome is known.
	WriteTimeout time.Duration
}

// Tenant is one project's backend: the v4 event endpoints over its own
// store. It is an http.Handler for the routes Implemented lists; Server
// routes a project's requests to it.
type Tenant struct {
	cfg    TenantConfig
	minter *eventlog.Minter
	mux    *http.ServeMux

	mu   sync.Mutex
	acks map[string]map[string]time.Time // run id → event id → when the store acknowledged its write
	// tokenRuns are the runs a hook_created named each token in (where
	// getHookByToken looks).
	tokenRuns map[string][]string
}

// NewTenant returns a tenant over cfg.Store.
func NewTenant(cfg TenantConfig) (*Tenant, error) {
	if cfg.Store == nil {
		return nil, errors.New("backend: TenantConfig.Store is nil")
	}
	cfg.Latency = worlds.ProfileOrNone(cfg.Latency)
	if cfg.WriteTimeout <= 0 {
		cfg.WriteTimeout = 30 * time.Second
	}
	var seed [32]byte
	binary.LittleEndian.PutUint64(seed[:8], cfg.Seed)
	copy(seed[8:], "stormctl/worlds/vercel/backend")
	t := &Tenant{cfg: cfg, minter: eventlog.NewMinter(eventlog.ServerPrefix, mrand.NewChaCha8(seed)), acks: map[string]map[string]time.Time{}, tokenRuns: map[string][]string{}}
	t.mux = http.NewServeMux()
	t.mux.HandleFunc("POST /api/v4/runs/{runId}/events/{eventType}", t.createEvent)
	t.mux.HandleFunc("POST /api/v4/runs/{runId}/events/batch", t.createBatch)
	t.mux.HandleFunc("GET /api/v4/runs/{runId}/events", t.listEvents)
	t.mux.HandleFunc("GET /api/v4/runs/{runId}/events/{eventId}", t.getEvent)
	t.mux.HandleFunc("GET /api/v4/events", t.listByCorrelation)
	t.mux.HandleFunc("GET /api/v2/runs/{runId}", t.getRun)
	t.mux.HandleFunc("GET /api/v2/hooks/by-token", t.getHookByToken)
	return t, nil
}

// readBody reads a request's body, at most limit bytes.
func readBody(w http.ResponseWriter, r *http.Request, limit int64) ([]byte, error) {
	return io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
}

// ServeHTTP serves the tenant's routes.
func (t *Tenant) ServeHTTP(w http.ResponseWriter, r *http.Request) { t.mux.ServeHTTP(w, r) }

// CommitTimes returns when each event of the run this tenant wrote
// committed, by event id, as the server observed it (not a store commit
// timestamp): under the legacy contract when the store acknowledged the
// write, under the slot contract when the write that committed it was
// sent (writeTail says why).
func (t *Tenant) CommitTimes(runID string) []worlds.CommitTime {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]worlds.CommitTime, 0, len(t.acks[runID]))
	for id, at := range t.acks[runID] {
		out = append(out, worlds.CommitTime{EventID: id, At: at, Source: "server"})
	}
	slices.SortFunc(out, func(a, b worlds.CommitTime) int { return strings.Compare(a.EventID, b.EventID) })
	return out
}

// acked records when the store committed evs, at (zero: each event's
// CommittedAt, the time the write that committed it was sent).
func (t *Tenant) acked(runID string, evs []eventlog.Event, at time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	m := t.acks[runID]
	if m == nil {
		m = map[string]time.Time{}
		t.acks[runID] = m
	}
	for _, e := range evs {
		if at.IsZero() {
			m[e.ID] = e.CommittedAt
		} else {
			m[e.ID] = at
		}
	}
}

// errorBody is an error answer, the JSON world-vercel reads a message and a
// code from.
type errorBody struct {
	Message string `json:"message"`
	Code    string `json:"code"`
}

func writeError(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(errorBody{Message: msg, Code: code})
}

// fail answers a store error: a conflict 409, an unreachable store or a
// cancelled request 503, anything else 500.
func fail(w http.ResponseWriter, r *http.Request, err error) {
	switch {
	case errors.Is(err, eventlog.ErrConflict):
		writeError(w, http.StatusConflict, "conflict", err.Error())
	case errors.Is(err, eventlog.ErrUnavailable), errors.Is(err, dynamo.ErrContention), r.Context().Err() != nil:
		writeError(w, http.StatusServiceUnavailable, "unavailable", err.Error())
	default:
		writeError(w, http.StatusInternalServerError, "internal", err.Error())
	}
}

// events reads every event of a run, in id order (nil for a run the store
// does not have).
func (t *Tenant) events(ctx context.Context, runID string) (eventlog.Run, []Event, error) {
	run, err := t.cfg.Store.Run(ctx, runID)
	if errors.Is(err, eventlog.ErrNoRun) {
		return run, nil, nil
	}
	if err != nil {
		return run, nil, err
	}
	p, err := t.cfg.Store.List(ctx, run, eventlog.Cursor{}, 0)
	if err != nil {
		return run, nil, err
	}
	out := make([]Event, 0, len(p.Events))
	for _, e := range p.Events {
		x, err := decodeStored(e)
		if err != nil {
			return run, nil, err
		}
		out = append(out, x)
	}
	return run, out, nil
}

func decodeStored(e eventlog.Event) (Event, error) {
	x := Event{ID: e.ID, RunID: e.RunID, CreatedAt: e.MintedAt}
	if err := json.Unmarshal(e.Payload, &x.Stored); err != nil {
		return x, fmt.Errorf("backend: event %s of run %s: %w", e.ID, e.RunID, err)
	}
	return x, nil
}

// item is the store item of an event.
func item(e Event) (eventlog.Event, error) {
	b, err := json.Marshal(e.Stored)
	if err != nil {
		return eventlog.Event{}, fmt.Errorf("backend: encode event %s: %w", e.ID, err)
	}
	return eventlog.Event{RunID: e.RunID, ID: e.ID, Type: eventlog.Type(e.Meta.EventType), CorrelationID: e.Meta.CorrelationID,
		Payload: b, MintedAt: e.CreatedAt}, nil
}

// createEvent: POST /api/v4/runs/{runId}/events/{eventType}, a body of one
// frame. The id is minted when the request is decided, the window spent,
// then the event written with its entity keys; the answer carries the id,
// run id and creation time in x-wf-* headers and the event with its
// entities in a CBOR body.
func (t *Tenant) createEvent(w http.ResponseWriter, r *http.Request) {
	runID := r.PathValue("runId")
	raw, err := readBody(w, r, maxBody)
	if err != nil {
		writeError(w, http.StatusRequestEntityTooLarge, "too_large", "request body: "+err.Error())
		return
	}
	frames, err := ReadFrames(raw)
	if err != nil || len(frames) != 1 {
		writeError(w, http.StatusBadRequest, "invalid_request", fmt.Sprintf("want one v4 frame, got %d (%v)", len(frames), err))
		return
	}
	run, exists, slot, ok := t.slotRun(w, r, runID, frames[0].Meta)
	if !ok {
		return
	}
	if slot {
		t.createSlotEvent(w, r, run, exists, frames[0])
		return
	}
	meta, unknown, err := DecodeMeta(frames[0].Meta)
	switch {
	case err != nil:
		writeError(w, http.StatusBadRequest, "invalid_request", err.Error())
		return
	case len(unknown) > 0:
		writeError(w, http.StatusNotImplemented, "not_implemented", fmt.Sprintf(
			"%s %s: frame meta field(s) %s: not implemented by stormctl's emulation of the world-vercel backend", r.Method, r.URL.Path, strings.Join(unknown, ", ")))
		return
	case !slices.Contains(eventTypes, meta.EventType):
		writeError(w, http.StatusBadRequest, "unknown_event_type", fmt.Sprintf("event type %q", meta.EventType))
		return
	}
	body := frames[0].Body
	if structuredError[meta.EventType] && meta.Error != nil && len(body) == 0 {
		if body, err = Marshal(structured(meta.Error, meta.Stack)); err != nil {
			writeError(w, http.StatusBadRequest, "invalid_request", "error: "+err.Error())
			return
		}
	}
	meta.Error = nil // kept as the body
	if len(body) > MaxPayload {
		writeError(w, http.StatusRequestEntityTooLarge, "too_large", fmt.Sprintf("payload of %d bytes, over %d", len(body), MaxPayload))
		return
	}
	ctx := r.Context()
	rest, ok := strings.CutPrefix(runID, "wrun_")
	if _, perr := ulid.ParseStrict(rest); !ok || perr != nil {
		writeError(w, http.StatusBadRequest, "invalid_run", fmt.Sprintf("run id %q: want wrun_<ULID>", runID))
		return
	}
	// The store's run item holds the run's partition; the run's state is
	// its events'.
	if _, err := t.cfg.Store.Run(ctx, runID); errors.Is(err, eventlog.ErrNoRun) {
		err = t.cfg.Store.CreateRun(ctx, eventlog.Run{ID: runID, Scheme: eventlog.SchemeULID})
		if err != nil && !errors.Is(err, dynamo.ErrRunExists) {
			fail(w, r, err)
			return
		}
	}
	// A run_created that lands between the read and the write of a
	// run_started that creates the run itself (resilientStart) takes the
	// run's key: the request is decided again on the new state, once.
	for attempt := 0; ; attempt++ {
		again, done := t.decideAndWrite(w, r, runID, meta, body, attempt == 0)
		if done || !again {
			return
		}
	}
}

// decideAndWrite decides a POST on the run's state as the store holds it
// and writes its event (and a run_created it implies); again says the
// request met a concurrent run_created and may be decided anew (only when
// mayRetry: nothing has been answered then).
func (t *Tenant) decideAndWrite(w http.ResponseWriter, r *http.Request, runID string, meta Meta, body []byte, mayRetry bool) (again, done bool) {
	ctx := r.Context()
	run, evs, err := t.events(ctx, runID)
	if err != nil {
		fail(w, r, err)
		return false, true
	}
	st := fold(runID, evs)
	now := time.Now().UTC()
	d := st.decide(meta, now)
	switch {
	case d.status != 0:
		writeError(w, d.status, d.code, d.message)
		return false, true
	case d.existing != nil:
		t.answer(w, st, *d.existing, nil)
		return false, true
	}
	// The events written, in id order: a run_created the request implies,
	// then its own.
	var write []Event
	var keys [][]string
	if c, ok := resilientStart(st, meta, body); ok {
		c.ID, c.RunID, c.CreatedAt = t.minter.Mint(now), runID, now
		write, keys = append(write, c), append(keys, []string{"run"})
	}
	e := Event{ID: t.minter.Mint(now), RunID: runID, CreatedAt: now, Stored: Stored{Meta: meta, Body: body}}
	if meta.EventType == "run_started" {
		// Its eventData (the run's input, deployment and workflow) is
		// run_created's: world-local strips it from run_started too.
		e.Stored = Stored{Meta: Meta{EventType: meta.EventType, SpecVersion: meta.SpecVersion, CorrelationID: meta.CorrelationID,
			VercelID: meta.VercelID, OccurredAt: meta.OccurredAt, RemoteRefBehavior: meta.RemoteRefBehavior, StateUpdatedAt: meta.StateUpdatedAt}}
	}
	if meta.EventType == "hook_created" {
		t.noteToken(meta.HookToken, runID)
	}
	if d.hookConflict {
		e, d.keys = conflictOf(e), nil
	}
	write, keys = append(write, e), append(keys, d.keys)
	if err := worlds.SpendWindow(ctx, t.cfg.Latency, t.cfg.Latency.Delay(eventlog.Type(meta.EventType))); err != nil {
		writeError(w, http.StatusServiceUnavailable, "cancelled", "request ended during the write's window: nothing written")
		return false, true
	}
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), t.cfg.WriteTimeout)
	defer cancel()
	err = t.write(wctx, run, write, keys)
	var ce *eventlog.ConflictError
	switch {
	case errors.As(err, &ce) && len(write) > 1 && ce.Key == "run" && mayRetry:
		return true, false // a run_created landed meanwhile: nothing written
	case errors.As(err, &ce) && meta.EventType == "hook_created" && strings.HasPrefix(ce.Key, "token/"):
		// Another hook took the token in the meantime.
		e = conflictOf(e)
		write = []Event{e}
		err = t.write(wctx, run, write, [][]string{nil})
	}
	if err != nil {
		fail(w, r, err)
		return false, true
	}
	for _, x := range write {
		st.apply(x)
	}
	var preload []Event
	if meta.EventType == "run_started" {
		// As the backend's run_started answer (world-vercel's "TTFB
		// preload", world-local's too): the run's events, read from the
		// store after the write, so the runtime may skip its first list.
		if _, preload, err = t.events(wctx, runID); err != nil {
			fail(w, r, err)
			return false, true
		}
	}
	t.answer(w, st, e, preload)
	return false, true
}

// resilientStart is the run_created a run_started implies on a run that
// has none, as world-local 4.4.1 writes one ("resilient start": the
// runtime's start() sends run_created and queues the run at once, so the
// first delivery's run_started, which carries the run's deployment,
// workflow name and input, may come first): ok only for such a
// run_started.
func resilientStart(st *runState, meta Meta, body []byte) (Event, bool) {
	if meta.EventType != "run_started" || st.created != nil || meta.DeploymentID == "" || meta.WorkflowName == "" || len(body) == 0 {
		return Event{}, false
	}
	m := Meta{EventType: "run_created", SpecVersion: meta.SpecVersion, DeploymentID: meta.DeploymentID, WorkflowName: meta.WorkflowName,
		ExecutionContext: meta.ExecutionContext, OccurredAt: meta.OccurredAt}
	return Event{Stored: Stored{Meta: m, Body: body}}, true
}

// conflictOf is the hook_conflict written in place of hook_created e.
func conflictOf(e Event) Event {
	m := Meta{EventType: "hook_conflict", SpecVersion: e.Meta.SpecVersion, CorrelationID: e.Meta.CorrelationID, OccurredAt: e.Meta.OccurredAt}
	e.Stored = Stored{Meta: m, Conflict: &Conflict{Token: e.Meta.HookToken, ConflictingRunID: e.RunID}}
	return e
}

// write writes evs (of one run, in id order) in one transaction, each
// claiming its keys.
func (t *Tenant) write(ctx context.Context, run eventlog.Run, evs []Event, keys [][]string) error {
	items := make([]eventlog.Event, 0, len(evs))
	for _, e := range evs {
		it, err := item(e)
		if err != nil {
			return err
		}
		items = append(items, it)
	}
	res, err := t.cfg.Store.WriteClaims(ctx, run, items, keys)
	if err != nil {
		return err
	}
	t.acked(run.ID, res.Events, res.Acked)
	return nil
}

// maxPreload bounds the events a run_started answer carries (as
// world-local's 1000); a longer log says hasMore with its cursor.
const maxPreload = 1000

// answer writes a POST's answer for event e on the run's state (e
// applied), with the run's events when preload is not nil.
func (t *Tenant) answer(w http.ResponseWriter, st *runState, e Event, preload []Event) {
	out := map[string]any{"event": e.entity(true)}
	if preload != nil {
		page := preload[:min(len(preload), maxPreload)]
		evs := make([]any, 0, len(page))
		for _, x := range page {
			evs = append(evs, x.entity(true))
		}
		out["events"], out["hasMore"] = evs, len(preload) > maxPreload
		if len(page) > 0 {
			out["cursor"] = page[len(page)-1].ID
		}
	}
	corr := e.Meta.CorrelationID
	switch typ := e.Meta.EventType; {
	case strings.HasPrefix(typ, "run_"):
		put(out, "run", st.runEntity())
	case strings.HasPrefix(typ, "step_"):
		put(out, "step", st.stepEntity(corr))
	case strings.HasPrefix(typ, "hook_"):
		put(out, "hook", st.hookEntity(corr, t.cfg.Project))
	case strings.HasPrefix(typ, "wait_"):
		put(out, "wait", st.waitEntity(corr))
	}
	b, err := Marshal(out)
	if err != nil {
		writeError(w, http.StatusInternalServerError, "internal", err.Error())
		return
	}
	h := w.Header()
	h.Set("Content-Type", "application/cbor")
	h.Set("x-wf-event-id", e.ID)
	h.Set("x-wf-run-id", e.RunID)
	h.Set("x-wf-created-at", e.CreatedAt.Format(time.RFC3339Nano))
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(b)
}

// listQuery is a list request's pagination.
type listQuery struct {
	cursor string
	limit  int
	desc   bool
	lazy   bool // remoteRefBehavior=lazy: frames without bodies
	// all: returnAll=true without a limit (world-vercel 5.0's "the whole
	// log"), honoured under the slot contract.
	all bool
	// slot: the run is under the slot contract, whose sentinel says
	// hasMore and carries the cursor past the page's last event even on
	// the last page (the incremental-load resume point).
	slot bool
}

func parseList(w http.ResponseWriter, r *http.Request) (listQuery, bool) {
	q := r.URL.Query()
	lq := listQuery{cursor: q.Get("cursor"), limit: 100, lazy: q.Get("remoteRefBehavior") == "lazy",
		all: q.Get("returnAll") == "true" && q.Get("limit") == ""}
	if s := q.Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > 1000 {
			writeError(w, http.StatusBadRequest, "invalid_request", fmt.Sprintf("limit %q: want 1 to 1000", s))
			return lq, false
		}
		lq.limit = n
	}
	switch q.Get("sortOrder") {
	case "", "asc":
	case "desc":
		lq.desc = true
	default:
		writeError(w, http.StatusBadRequest, "invalid_request", fmt.Sprintf("sortOrder %q: want asc or desc", q.Get("sortOrder")))
		return lq, false
	}
	return lq, true
}

// forRun is lq for a run of scheme sch: under the slot contract the
// cursor is read as cursorOf reads it and returnAll lifts the limit.
func (lq listQuery) forRun(sch eventlog.Scheme) listQuery {
	if sch != eventlog.SchemeSlot {
		return lq
	}
	lq.slot, lq.cursor = true, cursorOf(lq.cursor).ID
	if lq.all {
		lq.limit = 0
	}
	return lq
}

// page cuts the events (in id order) after the cursor, per the query:
// the page and the cursor of the next one ("" when none follows).
func (lq listQuery) page(evs []Event) ([]Event, string) {
	if lq.desc {
		evs = slices.Clone(evs)
		slices.Reverse(evs)
	}
	if lq.cursor != "" {
		i := slices.IndexFunc(evs, func(e Event) bool {
			if lq.desc {
				return e.ID < lq.cursor
			}
			return e.ID > lq.cursor
		})
		if i < 0 {
			i = len(evs)
		}
		evs = evs[i:]
	}
	if lq.limit <= 0 || len(evs) <= lq.limit {
		return evs, ""
	}
	return evs[:lq.limit], evs[lq.limit-1].ID
}

// frames answers a list: a frame per event, then the {_end, next} sentinel.
func (lq listQuery) frames(w http.ResponseWriter, evs []Event, next string) {
	var b []byte
	var err error
	for _, e := range evs {
		body := e.Body
		if lq.lazy {
			body = nil
		}
		if b, err = AppendFrame(b, e.entity(false), body); err != nil {
			writeError(w, http.StatusInternalServerError, "internal", err.Error())
			return
		}
	}
	end := map[string]any{"_end": 1}
	switch {
	case lq.slot:
		end["hasMore"] = next != ""
		if len(evs) > 0 {
			end["next"] = evs[len(evs)-1].ID
		}
	case next != "":
		end["next"] = next
	}
	if b, err = AppendFrame(b, end, nil); err != nil {
		writeError(w, http.StatusInternalServerError, "internal", err.Error())
		return
	}
	w.Header().Set("Content-Type", FrameContentType)
	_, _ = w.Write(b)
}

// listEvents: GET /api/v4/runs/{runId}/events?cursor&limit&sortOrder, the
// run's events in id order (a run this server does not have: none).
func (t *Tenant) listEvents(w http.ResponseWriter, r *http.Request) {
	lq, ok := parseList(w, r)
	if !ok {
		return
	}
	ctx, runID := r.Context(), r.PathValue("runId")
	if !lq.desc {
		// Ascending: one Query from the cursor, as the store pages.
		run, err := t.cfg.Store.Run(ctx, runID)
		if errors.Is(err, eventlog.ErrNoRun) {
			lq.frames(w, nil, "")
			return
		}
		var p eventlog.Page
		if err == nil {
			lq = lq.forRun(run.Scheme)
			after := eventlog.Cursor{ID: lq.cursor}
			if lq.slot {
				after = cursorOf(lq.cursor)
			}
			p, err = t.cfg.Store.List(ctx, run, after, lq.limit)
		}
		if err != nil {
			fail(w, r, err)
			return
		}
		page := make([]Event, 0, len(p.Events))
		for _, e := range p.Events {
			x, err := decodeStored(e)
			if err != nil {
				fail(w, r, err)
				return
			}
			page = append(page, x)
		}
		next := ""
		if p.More && len(page) > 0 {
			next = page[len(page)-1].ID
		}
		lq.frames(w, page, next)
		return
	}
	run, evs, err := t.events(ctx, runID)
	if err != nil {
		fail(w, r, err)
		return
	}
	lq = lq.forRun(run.Scheme)
	page, next := lq.page(evs)
	lq.frames(w, page, next)
}

// listByCorrelation: GET /api/v4/events?correlationId&runId&…, a run's
// events of one correlation id. Without runId it would need an index
// across runs, which this emulation does not have: 501.
func (t *Tenant) listByCorrelation(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	corr, runID := q.Get("correlationId"), q.Get("runId")
	if runID == "" {
		writeError(w, http.StatusNotImplemented, "not_implemented", fmt.Sprintf(
			"%s %s without runId: not implemented by stormctl's emulation of the world-vercel backend (it has no index across runs)", r.Method, r.URL.Path))
		return
	}
	lq, ok := parseList(w, r)
	if !ok {
		return
	}
	run, evs, err := t.events(r.Context(), runID)
	if err != nil {
		fail(w, r, err)
		return
	}
	lq = lq.forRun(run.Scheme)
	evs = slices.DeleteFunc(evs, func(e Event) bool { return e.Meta.CorrelationID != corr })
	page, next := lq.page(evs)
	lq.frames(w, page, next)
}

// getEvent: GET /api/v4/runs/{runId}/events/{eventId}, one frame.
func (t *Tenant) getEvent(w http.ResponseWriter, r *http.Request) {
	_, evs, err := t.events(r.Context(), r.PathValue("runId"))
	if err != nil {
		fail(w, r, err)
		return
	}
	i := slices.IndexFunc(evs, func(e Event) bool { return e.ID == r.PathValue("eventId") })
	if i < 0 {
		writeError(w, http.StatusNotFound, "not_found", fmt.Sprintf("event %s of run %s not found", r.PathValue("eventId"), r.PathValue("runId")))
		return
	}
	b, err := AppendFrame(nil, evs[i].entity(false), evs[i].Body)
	if err != nil {
		writeError(w, http.StatusInternalServerError, "internal", err.Error())
		return
	}
	w.Header().Set("Content-Type", FrameContentType)
	_, _ = w.Write(b)
}
