package backend

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/oklog/ulid/v2"

	"github.com/stormctl/stormctl/internal/eventlog"
	"github.com/stormctl/stormctl/worlds"
	"github.com/stormctl/stormctl/worlds/vercel/dynamo"
)

// The slot contract: what world-vercel 5.0 betas ask of the backend for a
// run stamped at spec 6 or later (docs/devkit-vercel-beta.md). A run's
// contract is its store's scheme, chosen when its first event is written
// from the spec version that event's frame carries (as the package says
// the real backend does: "the version stamped on run_created ... is what
// tells the backend which id scheme a run uses"): below SlotSpecVersion the
// legacy contract (eventlog.SchemeULID, unchanged: stable's 4.7.4 sends
// spec 3), from it on the slot contract (eventlog.SchemeSlot).

// SlotSpecVersion is the spec version from which a run gets slot ids:
// @workflow/world's SPEC_VERSION_SUPPORTS_SLOT_IDENTITY.
const SlotSpecVersion = 6

// MaxEvents is the per-run event ceiling the slot contract's run
// lifecycle answers carry (maxEvents, x-wf-max-events), as @workflow/world
// 5.0.0-beta.37's DEFAULT_MAX_EVENTS_PER_RUN; the runtime enforces it.
const MaxEvents = 25_000

// maxEventsHeader carries MaxEvents on a run_started frame stream.
const maxEventsHeader = "x-wf-max-events"

// schemeOf is the scheme a new run takes for a first event of spec
// version spec.
func schemeOf(spec int) eventlog.Scheme {
	if spec >= SlotSpecVersion {
		return eventlog.SchemeSlot
	}
	return eventlog.SchemeULID
}

// slotRun says whether a POST to runID is served under the slot contract:
// the run's scheme when the store holds the run, else the one the frame's
// spec version gives (the run item is then not created yet: exists
// false). A store error on a slot request is answered (ok false); on a
// legacy one it is left to the legacy path, which reads the store again.
func (t *Tenant) slotRun(w http.ResponseWriter, r *http.Request, runID string, meta []byte) (run eventlog.Run, exists, slot, ok bool) {
	var peek struct {
		SpecVersion int `cbor:"specVersion"`
	}
	_ = Unmarshal(meta, &peek) // an unreadable meta is the legacy path's 400
	run, err := t.cfg.Store.Run(r.Context(), runID)
	switch {
	case err == nil:
		return run, true, run.Scheme == eventlog.SchemeSlot, true
	case errors.Is(err, eventlog.ErrNoRun) || peek.SpecVersion < SlotSpecVersion:
		sch := schemeOf(peek.SpecVersion)
		return eventlog.Run{ID: runID, Scheme: sch}, false, sch == eventlog.SchemeSlot, true
	}
	fail(w, r, err)
	return run, false, false, false
}

// readSlotFrame decodes a slot-contract POST frame: its meta, request
// fields and body, each checked as the legacy contract checks them (a
// field this server does not read is answered 501 naming it).
func readSlotFrame(w http.ResponseWriter, r *http.Request, f Frame) (Meta, Request, []byte, bool) {
	meta, req, unknown, err := DecodeSlotMeta(f.Meta)
	switch {
	case err != nil:
		writeError(w, http.StatusBadRequest, "invalid_request", err.Error())
		return meta, req, nil, false
	case len(unknown) > 0:
		writeError(w, http.StatusNotImplemented, "not_implemented", fmt.Sprintf(
			"%s %s: frame meta field(s) %s: not implemented by stormctl's emulation of the world-vercel backend", r.Method, r.URL.Path, strings.Join(unknown, ", ")))
		return meta, req, nil, false
	case !slices.Contains(eventTypes, meta.EventType):
		writeError(w, http.StatusBadRequest, "unknown_event_type", fmt.Sprintf("event type %q", meta.EventType))
		return meta, req, nil, false
	}
	body := f.Body
	if structuredError[meta.EventType] && meta.Error != nil && len(body) == 0 {
		if body, err = Marshal(structured(meta.Error, meta.Stack)); err != nil {
			writeError(w, http.StatusBadRequest, "invalid_request", "error: "+err.Error())
			return meta, req, nil, false
		}
	}
	meta.Error = nil // kept as the body
	if len(body) > MaxPayload {
		writeError(w, http.StatusRequestEntityTooLarge, "too_large", fmt.Sprintf("payload of %d bytes, over %d", len(body), MaxPayload))
		return meta, req, nil, false
	}
	return meta, req, body, true
}

// ensureSlotRun checks runID and creates the run's item under the slot
// contract if the store has none; a run another request created meanwhile
// is read back (and must be a slot run).
func (t *Tenant) ensureSlotRun(w http.ResponseWriter, r *http.Request, run eventlog.Run, exists bool) (eventlog.Run, bool) {
	rest, ok := strings.CutPrefix(run.ID, "wrun_")
	if _, perr := ulid.ParseStrict(rest); !ok || perr != nil {
		writeError(w, http.StatusBadRequest, "invalid_run", fmt.Sprintf("run id %q: want wrun_<ULID>", run.ID))
		return run, false
	}
	if exists {
		return run, true
	}
	ctx := r.Context()
	err := t.cfg.Store.CreateRun(ctx, eventlog.Run{ID: run.ID, Scheme: eventlog.SchemeSlot})
	if errors.Is(err, dynamo.ErrRunExists) {
		run, err = t.cfg.Store.Run(ctx, run.ID)
		if err == nil && run.Scheme != eventlog.SchemeSlot {
			writeError(w, http.StatusConflict, "conflict", fmt.Sprintf("run %s was created under the legacy contract (spec below %d)", run.ID, SlotSpecVersion))
			return run, false
		}
	}
	if err != nil {
		fail(w, r, err)
		return run, false
	}
	return eventlog.Run{ID: run.ID, Scheme: eventlog.SchemeSlot}, true
}

// createSlotEvent: POST /api/v4/runs/{runId}/events/{eventType} under the
// slot contract. The request is decided on the run's state as the store
// holds it, the window spent, then its event written at the run's tail,
// the position allocated in the write's own transaction (WriteAtTail).
func (t *Tenant) createSlotEvent(w http.ResponseWriter, r *http.Request, run eventlog.Run, exists bool, f Frame) {
	meta, req, body, ok := readSlotFrame(w, r, f)
	if !ok {
		return
	}
	if run, ok = t.ensureSlotRun(w, r, run, exists); !ok {
		return
	}
	for attempt := 0; ; attempt++ {
		again, done := t.decideAndWriteSlot(w, r, run, meta, req, body, attempt == 0)
		if done || !again {
			return
		}
	}
}

// slotWrite is what a decided slot-contract event writes: the events in
// log order with the keys each claims, and which of them is the request's
// own (the answer's event).
type slotWrite struct {
	events []Event
	keys   [][]string
	own    int
	// stepCreated: a step_started that created its step (lazy start).
	stepCreated bool
}

// planSlot decides meta on st and returns what to write (an answer already
// written when done).
func (t *Tenant) planSlot(st *runState, meta Meta, body []byte, now time.Time) (slotWrite, decision) {
	if meta.EventType == "hook_received" && meta.ResumeID != "" {
		if d, ok := st.resumed(meta); ok {
			return slotWrite{}, d
		}
	}
	d := st.decide(meta, now)
	if meta.EventType == "hook_received" && meta.ResumeID != "" && d.status == 0 {
		d.keys = append(d.keys, "resume/"+meta.ResumeID)
	}
	lazy := meta.EventType == "step_started" && len(body) > 0 && meta.StepName != "" && meta.CorrelationID != ""
	if lazy {
		// Lazy step start (world-local 5.0's): a step_started carrying the
		// step's name and input creates the step (a step_created written
		// before it, its input there) if no step of that id exists; if one
		// does, a concurrent handler won the create (409).
		switch {
		case st.steps[meta.CorrelationID] != nil:
			d = refuse(http.StatusConflict, "conflict", "Step %q already created", meta.CorrelationID)
		case terminalStatus(st.status):
			d = refuse(http.StatusConflict, "conflict", "Cannot create new entities on run in terminal state %q", st.status)
		default:
			d = decision{keys: []string{"step/" + meta.CorrelationID}}
		}
	}
	if d.status != 0 || d.existing != nil {
		return slotWrite{}, d
	}
	var sw slotWrite
	if c, ok := resilientStart(st, meta, body); ok {
		c.RunID, c.CreatedAt = st.runID, now
		c.Meta.EncryptionPublicKey = meta.EncryptionPublicKey
		sw.events, sw.keys = append(sw.events, c), append(sw.keys, []string{"run"})
	}
	e := Event{RunID: st.runID, CreatedAt: now, Stored: Stored{Meta: meta, Body: body}}
	switch {
	case meta.EventType == "run_started":
		e.Stored = Stored{Meta: Meta{EventType: meta.EventType, SpecVersion: meta.SpecVersion, CorrelationID: meta.CorrelationID,
			VercelID: meta.VercelID, OccurredAt: meta.OccurredAt, RemoteRefBehavior: meta.RemoteRefBehavior, StateUpdatedAt: meta.StateUpdatedAt}}
	case lazy:
		c := Event{RunID: st.runID, CreatedAt: now, Stored: Stored{Meta: Meta{EventType: "step_created", SpecVersion: meta.SpecVersion,
			CorrelationID: meta.CorrelationID, OccurredAt: meta.OccurredAt, StepName: meta.StepName}, Body: body}}
		sw.events, sw.keys = append(sw.events, c), append(sw.keys, d.keys)
		d.keys, e.Body, sw.stepCreated = nil, nil, true // the input is the step_created's
	}
	if d.hookConflict {
		e, d.keys = conflictOf(e), nil
	}
	sw.own = len(sw.events)
	sw.events, sw.keys = append(sw.events, e), append(sw.keys, d.keys)
	return sw, d
}

// decideAndWriteSlot decides a slot-contract POST on the run's state and
// writes its events at the tail; again as for decideAndWrite.
func (t *Tenant) decideAndWriteSlot(w http.ResponseWriter, r *http.Request, run eventlog.Run, meta Meta, req Request, body []byte, mayRetry bool) (again, done bool) {
	ctx := r.Context()
	_, evs, err := t.events(ctx, run.ID)
	if err != nil {
		fail(w, r, err)
		return false, true
	}
	st := fold(run.ID, evs)
	now := time.Now().UTC()
	sw, d := t.planSlot(st, meta, body, now)
	switch {
	case d.status != 0:
		writeError(w, d.status, d.code, d.message)
		return false, true
	case d.existing != nil:
		t.answerSlot(w, r, st, *d.existing, req, false)
		return false, true
	}
	if meta.EventType == "hook_created" {
		t.noteToken(meta.HookToken, run.ID)
	}
	if err := worlds.SpendWindow(ctx, t.cfg.Latency, t.cfg.Latency.Delay(eventlog.Type(meta.EventType))); err != nil {
		writeError(w, http.StatusServiceUnavailable, "cancelled", "request ended during the write's window: nothing written")
		return false, true
	}
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), t.cfg.WriteTimeout)
	defer cancel()
	from := int64(len(evs)) + 1
	err = t.writeTail(wctx, run, sw.events, sw.keys, from)
	var ce *eventlog.ConflictError
	switch {
	case errors.As(err, &ce) && sw.own > 0 && ce.Key == "run" && mayRetry:
		return true, false // a run_created landed meanwhile: nothing written
	case errors.As(err, &ce) && strings.HasPrefix(ce.Key, "resume/") && mayRetry:
		return true, false // another delivery of the resume landed: converge on it
	case errors.As(err, &ce) && meta.EventType == "hook_created" && strings.HasPrefix(ce.Key, "token/"):
		// Another hook took the token in the meantime.
		sw.events[sw.own] = conflictOf(sw.events[sw.own])
		sw.keys[sw.own] = nil
		err = t.writeTail(wctx, run, sw.events, sw.keys, from)
	}
	if err != nil {
		fail(w, r, err)
		return false, true
	}
	for _, x := range sw.events {
		st.apply(x)
	}
	t.answerSlot(w, r, st, sw.events[sw.own], req, sw.stepCreated)
	return false, true
}

// resumed answers a lazy hook resume (a hook_received carrying resumeId)
// whose (runId, resumeId) the run's log holds already, as world-local 5.0
// does: the event of the same hook and payload digest (ok, existing: the
// deliveries of one resume converge on it, even after the hook's
// disposal), or 409 for another hook's or another payload's.
func (st *runState) resumed(m Meta) (decision, bool) {
	e := st.resumes[m.ResumeID]
	switch {
	case e == nil:
		return decision{}, false
	case e.Meta.CorrelationID != m.CorrelationID:
		return refuse(http.StatusConflict, "conflict", "hook_received resumeId %q already recorded for a different hook", m.ResumeID), true
	case m.ResumePayloadDigest != "" && e.Meta.ResumePayloadDigest != "" && m.ResumePayloadDigest != e.Meta.ResumePayloadDigest:
		return refuse(http.StatusConflict, "conflict", "hook_received resumeId %q already recorded with a different payload", m.ResumeID), true
	}
	return decision{existing: e}, true
}

// writeTail writes evs (of one run, in log order) at the run's tail from
// position from, each claiming its keys, and gives them the ids and
// positions they committed at.
func (t *Tenant) writeTail(ctx context.Context, run eventlog.Run, evs []Event, keys [][]string, from int64) error {
	items := make([]eventlog.Event, 0, len(evs))
	for _, e := range evs {
		it, err := item(e)
		if err != nil {
			return err
		}
		items = append(items, it)
	}
	res, err := t.cfg.Store.WriteAtTail(ctx, run, items, keys, from)
	if err != nil {
		return err
	}
	for i := range evs {
		evs[i].ID = res.Events[i].ID
	}
	// The commit time a slot event is reported with is when the
	// transaction that committed it was sent, not when its answer came
	// back: a write goes to position p+1 only once it has seen p taken (in
	// its read of the log or in a refused transaction), so p committed
	// before p+1's transaction was sent, and send times order the events as
	// their commits did (positions), where ack times carry each
	// goroutine's scheduling after the commit.
	t.acked(run.ID, res.Events, time.Time{})
	return nil
}

// position is the slot of an event id (0 for none).
func position(id string) int64 {
	pos, _ := eventlog.SlotPosition(id)
	return pos
}

// answerSlot answers a slot-contract POST for event e on the run's state
// (e applied). A run_started the client asked to stream (Accept: v4
// frames, no skipPreload) is answered with the run's log as frames, read
// after the write; any other answer is CBOR: the event, its entity, the
// run's event ceiling on a run's answers, stepCreated for a lazy start,
// and a page of the log: after req.SinceCursor (the delta), else the
// events on the slots between req.MaxSlot and e's ("bump and report":
// the write landed above the slot the writer asked for).
func (t *Tenant) answerSlot(w http.ResponseWriter, r *http.Request, st *runState, e Event, req Request, stepCreated bool) {
	ctx := context.WithoutCancel(r.Context())
	h := w.Header()
	h.Set("x-wf-event-id", e.ID)
	h.Set("x-wf-run-id", e.RunID)
	h.Set("x-wf-created-at", e.CreatedAt.Format(time.RFC3339Nano))
	if e.Meta.EventType == "run_started" && !req.SkipPreload && strings.Contains(r.Header.Get("Accept"), FrameContentType) {
		_, evs, err := t.events(ctx, e.RunID)
		if err != nil {
			fail(w, r, err)
			return
		}
		h.Set(maxEventsHeader, strconv.Itoa(MaxEvents))
		lq := listQuery{limit: maxPreload, slot: true}
		page, next := lq.page(evs)
		lq.frames(w, page, next)
		return
	}
	out := t.slotEntities(st, e, stepCreated)
	out["event"] = e.entity(true)
	if err := t.slotPage(ctx, out, e, req); err != nil {
		fail(w, r, err)
		return
	}
	b, err := Marshal(out)
	if err != nil {
		writeError(w, http.StatusInternalServerError, "internal", err.Error())
		return
	}
	h.Set("Content-Type", "application/cbor")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(b)
}

// slotEntities is what a slot-contract answer for event e carries beside
// the event, on the run's state st (e applied): the entity e moved, the
// run's event ceiling on a run's answers, stepCreated for a lazy start.
func (t *Tenant) slotEntities(st *runState, e Event, stepCreated bool) map[string]any {
	out := map[string]any{}
	corr := e.Meta.CorrelationID
	switch typ := e.Meta.EventType; {
	case strings.HasPrefix(typ, "run_"):
		put(out, "run", st.runEntity())
		out["maxEvents"] = MaxEvents
	case strings.HasPrefix(typ, "step_"):
		put(out, "step", st.stepEntity(corr))
	case strings.HasPrefix(typ, "hook_"):
		put(out, "hook", st.hookEntity(corr, t.cfg.Project))
	case strings.HasPrefix(typ, "wait_"):
		put(out, "wait", st.waitEntity(corr))
	}
	if stepCreated {
		out["stepCreated"] = true
	}
	return out
}

// slotPage adds the page a slot-contract answer carries to out (events,
// cursor, hasMore), read from the store after the write: the delta after
// req.SinceCursor (cursor: past its last event, or the writer's when it
// is empty), else the report of the slots e's write skipped above
// req.MaxSlot (cursor null: the report does not move the writer's read
// position), else nothing.
func (t *Tenant) slotPage(ctx context.Context, out map[string]any, e Event, req Request) error {
	var page []Event
	var cursor any
	var more bool
	switch pos := position(e.ID); {
	case req.SinceCursor != nil:
		after := cursorOf(*req.SinceCursor)
		p, err := t.readSlots(ctx, e.RunID, after, maxPreload)
		if err != nil {
			return err
		}
		page, more, cursor = p.events, p.more, *req.SinceCursor
		if len(page) > 0 {
			cursor = page[len(page)-1].ID
		}
	case req.MaxSlot != nil && *req.MaxSlot >= 0 && pos > *req.MaxSlot+1:
		span := int(pos - *req.MaxSlot - 1)
		p, err := t.readSlots(ctx, e.RunID, eventlog.Cursor{ID: eventlog.SlotID(*req.MaxSlot), Seq: *req.MaxSlot}, span)
		if err != nil {
			return err
		}
		page = slices.DeleteFunc(p.events, func(x Event) bool { return position(x.ID) >= pos })
		more = len(page) < span
	default:
		return nil
	}
	evs := make([]any, 0, len(page))
	for _, x := range page {
		evs = append(evs, x.entity(true))
	}
	out["events"], out["cursor"], out["hasMore"] = evs, cursor, more
	return nil
}

// slotPageOf is a page read from a slot run.
type slotPageOf struct {
	events []Event
	more   bool
}

// readSlots reads up to limit events of a slot run after the cursor (0:
// all), decoded.
func (t *Tenant) readSlots(ctx context.Context, runID string, after eventlog.Cursor, limit int) (slotPageOf, error) {
	p, err := t.cfg.Store.List(ctx, eventlog.Run{ID: runID, Scheme: eventlog.SchemeSlot}, after, limit)
	if err != nil {
		return slotPageOf{}, err
	}
	out := slotPageOf{more: p.More}
	for _, x := range p.Events {
		e, err := decodeStored(x)
		if err != nil {
			return slotPageOf{}, err
		}
		out.events = append(out.events, e)
	}
	return out, nil
}

// cursorOf reads a list cursor: an event id, or "eid:" and one (the
// cursor world-vercel 5.0 makes itself to resume a stream cut short). A
// slot id's cursor carries its position.
func cursorOf(c string) eventlog.Cursor {
	id := strings.TrimPrefix(c, "eid:")
	return eventlog.Cursor{ID: id, Seq: position(id)}
}
