package ingest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/stormctl/stormctl/internal/eventlog"
	"github.com/stormctl/stormctl/worlds"
	"github.com/stormctl/stormctl/worlds/vercel/dynamo"
)

// createRun: POST /v1/runs with an eventlog.Run.
func (s *Server) createRun(w http.ResponseWriter, r *http.Request) {
	var run eventlog.Run
	if !s.decode(w, r, &run) {
		return
	}
	ctx := r.Context()
	if run.Guard == eventlog.GuardCountIndex {
		if s.cfg.Index == nil {
			writeError(w, http.StatusBadRequest, ErrorBody{Code: CodeInvalidRun, Error: "run " + run.ID + ": this server has no count index for guard " + string(eventlog.GuardCountIndex)})
			return
		}
		// The index first: a count without a run is harmless (it expires),
		// a guarded run without a count would start indeterminate.
		if err := s.cfg.Index.Start(ctx, run.ID); err != nil {
			s.fail(w, r, err)
			return
		}
	}
	if err := s.cfg.Store.CreateRun(ctx, run); err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, run)
}

// batch is a decoded, checked append before its window.
type batch struct {
	run    eventlog.Run
	drafts []eventlog.Draft
	events []eventlog.Event // minted (not under slot: slots are ids)
	delay  time.Duration
	actor  string
}

// prepare decodes nothing: it checks drafts and loads the run (load),
// mints the ids (the moment of ingest; under slot the reservation takes
// them instead) and draws the window. ok is false when an error was
// answered.
func (s *Server) prepare(w http.ResponseWriter, r *http.Request, drafts []eventlog.Draft) (batch, bool) {
	run, ok := s.load(w, r, drafts)
	if !ok {
		return batch{}, false
	}
	b := batch{run: run, drafts: drafts}
	now := time.Now().UTC()
	for _, d := range drafts {
		if run.Scheme != eventlog.SchemeSlot {
			b.events = append(b.events, d.Event(run.ID, s.minter.Mint(now), now))
		}
		b.delay = max(b.delay, s.cfg.Latency.Delay(d.Type))
	}
	return b, true
}

// load checks drafts (known types, JSON payloads within MaxPayload, a
// batch one transaction holds) and loads the request's run. ok is false
// when an error was answered.
func (s *Server) load(w http.ResponseWriter, r *http.Request, drafts []eventlog.Draft) (eventlog.Run, bool) {
	runID := r.PathValue("runId")
	for i, d := range drafts {
		if !d.Type.Valid() {
			_, err := eventlog.ParseType(string(d.Type))
			writeError(w, http.StatusBadRequest, ErrorBody{Code: CodeUnknownType, Error: fmt.Sprintf("event %d: %v", i, err)})
			return eventlog.Run{}, false
		}
		if len(d.Payload) > 0 && !json.Valid(d.Payload) {
			writeError(w, http.StatusBadRequest, ErrorBody{Code: CodeInvalidPayload, Error: fmt.Sprintf("event %d (%s): payload is not valid JSON", i, d.Type)})
			return eventlog.Run{}, false
		}
		if len(d.Payload) > MaxPayload {
			writeError(w, http.StatusRequestEntityTooLarge, ErrorBody{Code: CodeTooLarge, Error: fmt.Sprintf(
				"event %d (%s): payload of %d bytes, over %d: a DynamoDB item holds 400 KB, and this server does not drain large payloads to S3", i, d.Type, len(d.Payload), MaxPayload)})
			return eventlog.Run{}, false
		}
	}
	run, err := s.cfg.Store.Run(r.Context(), runID)
	if err != nil {
		s.fail(w, r, err)
		return eventlog.Run{}, false
	}
	if a := dynamo.Actions(run.Scheme, drafts); a > dynamo.MaxTransactItems {
		writeError(w, http.StatusBadRequest, ErrorBody{Code: CodeBatchTooLarge,
			Error: fmt.Sprintf("run %s: %d events need %d transaction actions, at most %d fit in one DynamoDB transaction", runID, len(drafts), a, dynamo.MaxTransactItems)})
		return eventlog.Run{}, false
	}
	return run, true
}

// appendFacts: POST /v1/runs/{runId}/events with an AppendRequest.
func (s *Server) appendFacts(w http.ResponseWriter, r *http.Request) {
	var req AppendRequest
	if !s.decode(w, r, &req) {
		return
	}
	b, ok := s.prepare(w, r, req.Events)
	if !ok {
		return
	}
	b.actor = req.Actor
	s.commit(w, r, b, dynamo.Fence{})
}

// appendFenced: POST /v1/runs/{runId}/events/fenced with a FencedRequest.
//
//   - guard count-index: the handler reads the run's count from Redis,
//     judges it, and only then drains and writes (unfenced): the
//     check-then-write gap of the legacy guard, on purpose.
//   - ulid: the handler counts the run's events with one Query, then
//     drains and writes: the legacy store count, the same gap.
//   - seq: the fence is the condition of the write's own transaction.
//   - slot: the fence is the condition of the reservation's transaction,
//     on the run's slot counter (whatever the run's fence basis).
func (s *Server) appendFenced(w http.ResponseWriter, r *http.Request) {
	var req FencedRequest
	if !s.decode(w, r, &req) {
		return
	}
	if req.ExpectedSeq == nil || *req.ExpectedSeq < 0 {
		writeError(w, http.StatusBadRequest, ErrorBody{Code: CodeInvalidRequest, Error: "expectedSeq is required and must be >= 0"})
		return
	}
	expected := *req.ExpectedSeq
	b, ok := s.prepare(w, r, req.Events)
	if !ok {
		return
	}
	b.actor = req.Actor
	ctx := r.Context()
	switch {
	case b.run.Guard == eventlog.GuardCountIndex:
		if err := s.judge(ctx, b.run.ID, expected, req.Watermark); err != nil {
			s.fail(w, r, err)
			return
		}
		s.commit(w, r, b, dynamo.Fence{})
	case b.run.Scheme == eventlog.SchemeULID:
		n, err := s.cfg.Store.Count(ctx, b.run.ID)
		if err == nil && n != expected {
			err = &eventlog.FencedError{RunID: b.run.ID, Expected: expected, Actual: n}
		}
		if err != nil {
			s.fail(w, r, err)
			return
		}
		s.commit(w, r, b, dynamo.Fence{})
	default:
		s.commit(w, r, b, dynamo.Fence{On: true, Expected: expected})
	}
}

// commit spends the batch's window, writes it and answers with the
// committed events (under slot: appendSlots). Once the write is sent it
// runs to its end even if the client goes away, so its commit time is
// known.
func (s *Server) commit(w http.ResponseWriter, r *http.Request, b batch, f dynamo.Fence) {
	if b.run.Scheme == eventlog.SchemeSlot {
		s.appendSlots(w, r, b, f)
		return
	}
	if len(b.events) == 0 {
		writeJSON(w, http.StatusOK, EventsResponse{Events: []eventlog.Event{}})
		return
	}
	if err := worlds.SpendWindow(r.Context(), s.cfg.Latency, b.delay); err != nil {
		writeError(w, http.StatusServiceUnavailable, ErrorBody{Code: CodeCancelled, Error: "request ended during the write's window: nothing written"})
		return
	}
	ctx, cancel := s.writeCtx(r)
	defer cancel()
	var res dynamo.Written
	var err error
	switch {
	case b.run.Scheme == eventlog.SchemeSeq:
		res, err = s.cfg.Store.WriteSeq(ctx, b.run, b.events, f)
	case dynamo.ClaimsToken(b.run, b.drafts):
		res, err = s.cfg.Store.WriteHookClaims(ctx, b.run, b.events, b.drafts, s.minter.Mint)
	default:
		res, err = s.cfg.Store.WriteULID(ctx, b.run, b.events)
	}
	if err != nil {
		s.fail(w, r, err)
		return
	}
	s.written(ctx, b.run, res)
	writeJSON(w, http.StatusCreated, EventsResponse{Events: res.Events})
}

// written records what a write committed: the events' CommittedAt (the
// server-observed acknowledgement), their commit times and the noops a
// refused slot commit wrote itself, and, on a guarded run, the events in
// the count index.
func (s *Server) written(ctx context.Context, run eventlog.Run, res dynamo.Written) {
	ids := make([]string, len(res.Events))
	for i := range res.Events {
		res.Events[i].CommittedAt = res.Acked
		ids[i] = res.Events[i].ID
	}
	s.acked(run.ID, res.Events)
	s.acked(run.ID, res.Noops)
	for _, e := range res.Foreign {
		s.acked(e.RunID, []eventlog.Event{e})
	}
	if run.Guard == eventlog.GuardCountIndex && len(ids) > 0 {
		// After the write, as the legacy index did. A failure leaves the
		// index short of the log (the guard then reads it as incomplete);
		// the write itself stands.
		if err := s.cfg.Index.Record(ctx, run.ID, ids); err != nil {
			s.cfg.Logger.Warn("count index not updated", "run", run.ID, "events", len(ids), "err", err)
		}
	}
}

// writeCtx is the context of a store write once it is sent: it outlives
// the request (so the server knows the outcome) within WriteTimeout.
func (s *Server) writeCtx(r *http.Request) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(r.Context()), s.cfg.WriteTimeout)
}

// appendSlots is an append to a slot run: Reserve (fenced on the slot
// counter when f.On), the batch's window, Commit. A request that ends in
// the window leaves its slots reserved and empty, without cleaning up (a
// hole only a seal fills) and answers 503 cancelled; a commit whose slot
// was sealed meanwhile seals the rest of its slots and answers 409 sealed.
func (s *Server) appendSlots(w http.ResponseWriter, r *http.Request, b batch, f dynamo.Fence) {
	if len(b.drafts) == 0 {
		writeJSON(w, http.StatusOK, EventsResponse{Events: []eventlog.Event{}})
		return
	}
	if r.Context().Err() != nil {
		writeError(w, http.StatusServiceUnavailable, ErrorBody{Code: CodeCancelled, Error: "request ended before the reservation: nothing written"})
		return
	}
	ctx, cancel := s.writeCtx(r)
	defer cancel()
	res, err := s.cfg.Store.Reserve(ctx, b.run, b.drafts, f)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if err := worlds.SpendWindow(r.Context(), s.cfg.Latency, b.delay); err != nil {
		last := res.First + int64(len(b.drafts)) - 1
		writeError(w, http.StatusServiceUnavailable, ErrorBody{Code: CodeCancelled, Error: fmt.Sprintf(
			"request ended during the write's window: slots %d-%d of run %s stay reserved and empty until sealed", res.First, last, b.run.ID)})
		return
	}
	s.commitSlots(w, r, b.run, res.First, res.ReservedAt, b.drafts, b.actor)
}

// commitSlots commits a reservation and answers with its events (201), or
// with the error; the noops of a refused commit are recorded either way.
func (s *Server) commitSlots(w http.ResponseWriter, r *http.Request, run eventlog.Run, first int64, reservedAt time.Time, d []eventlog.Draft, actor string) {
	ctx, cancel := s.writeCtx(r)
	defer cancel()
	res, err := s.cfg.Store.Commit(ctx, run, first, reservedAt, d, actor)
	s.written(ctx, run, res)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, EventsResponse{Events: res.Events})
}

// reserve: POST /v1/runs/{runId}/slots/reserve with a ReserveRequest.
func (s *Server) reserve(w http.ResponseWriter, r *http.Request) {
	var req ReserveRequest
	if !s.decode(w, r, &req) {
		return
	}
	if req.ExpectedSeq != nil && *req.ExpectedSeq < 0 {
		writeError(w, http.StatusBadRequest, ErrorBody{Code: CodeInvalidRequest, Error: "expectedSeq must be >= 0"})
		return
	}
	run, ok := s.load(w, r, req.Events)
	if !ok || !s.slotRun(w, run) {
		return
	}
	var f dynamo.Fence
	if req.ExpectedSeq != nil {
		f = dynamo.Fence{On: true, Expected: *req.ExpectedSeq}
	}
	ctx, cancel := s.writeCtx(r)
	defer cancel()
	res, err := s.cfg.Store.Reserve(ctx, run, req.Events, f)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	status := http.StatusCreated
	if len(req.Events) == 0 {
		status = http.StatusOK
	}
	writeJSON(w, status, ReservationResponse{RunID: run.ID, First: res.First, Count: len(req.Events), ReservedAt: res.ReservedAt})
}

// commitReservation: POST /v1/runs/{runId}/slots/commit with a
// CommitRequest.
func (s *Server) commitReservation(w http.ResponseWriter, r *http.Request) {
	var req CommitRequest
	if !s.decode(w, r, &req) {
		return
	}
	if len(req.Events) > 0 && (req.First < 1 || req.ReservedAt.IsZero()) {
		writeError(w, http.StatusBadRequest, ErrorBody{Code: CodeInvalidRequest, Error: "first (>= 1) and reservedAt are required: the reservation's"})
		return
	}
	run, ok := s.load(w, r, req.Events)
	if !ok || !s.slotRun(w, run) {
		return
	}
	if len(req.Events) == 0 {
		writeJSON(w, http.StatusOK, EventsResponse{Events: []eventlog.Event{}})
		return
	}
	s.commitSlots(w, r, run, req.First, req.ReservedAt, req.Events, req.Actor)
}

// seal: POST /v1/runs/{runId}/slots/{slot}/seal with a SealRequest.
func (s *Server) seal(w http.ResponseWriter, r *http.Request) {
	var req SealRequest
	if !s.decode(w, r, &req) {
		return
	}
	slot, err := strconv.ParseInt(r.PathValue("slot"), 10, 64)
	if err != nil {
		writeError(w, http.StatusBadRequest, ErrorBody{Code: CodeInvalidRequest, Error: "slot: want an integer"})
		return
	}
	run, ok := s.load(w, r, nil)
	if !ok || !s.slotRun(w, run) {
		return
	}
	ctx, cancel := s.writeCtx(r)
	defer cancel()
	res, sealed, err := s.cfg.Store.Seal(ctx, run, slot, req.Actor)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if !sealed {
		writeJSON(w, http.StatusOK, SealResponse{})
		return
	}
	s.written(ctx, run, res)
	writeJSON(w, http.StatusOK, SealResponse{Sealed: true, Event: &res.Events[0]})
}

// slotRun answers 400 unless run is a slot run.
func (s *Server) slotRun(w http.ResponseWriter, run eventlog.Run) bool {
	if run.Scheme == eventlog.SchemeSlot {
		return true
	}
	writeError(w, http.StatusBadRequest, ErrorBody{Code: CodeInvalidRequest, Error: fmt.Sprintf("run %s has scheme %s: slots are reserved, committed and sealed on slot runs only", run.ID, run.Scheme)})
	return false
}

// list: GET /v1/runs/{runId}/events?afterId=&afterSeq=&limit=.
func (s *Server) list(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	after := eventlog.Cursor{ID: q.Get("afterId")}
	limit := 0
	var err error
	if v := q.Get("afterSeq"); v != "" {
		if after.Seq, err = strconv.ParseInt(v, 10, 64); err != nil || after.Seq < 0 {
			writeError(w, http.StatusBadRequest, ErrorBody{Code: CodeInvalidRequest, Error: "afterSeq: want an integer >= 0"})
			return
		}
	}
	if v := q.Get("limit"); v != "" {
		if limit, err = strconv.Atoi(v); err != nil || limit < 0 {
			writeError(w, http.StatusBadRequest, ErrorBody{Code: CodeInvalidRequest, Error: "limit: want an integer >= 0 (0: all)"})
			return
		}
	}
	run, err := s.cfg.Store.Run(r.Context(), r.PathValue("runId"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	p, err := s.cfg.Store.List(r.Context(), run, after, limit)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	s.overlay(run.ID, p.Events)
	if p.Events == nil {
		p.Events = []eventlog.Event{}
	}
	writeJSON(w, http.StatusOK, p)
}

// dump: GET /v1/runs/{runId}/dump, every event in scheme order, no density
// assertion.
func (s *Server) dump(w http.ResponseWriter, r *http.Request) {
	run, evs, ok := s.dumpRun(w, r)
	if !ok {
		return
	}
	s.overlay(run.ID, evs)
	if evs == nil {
		evs = []eventlog.Event{}
	}
	writeJSON(w, http.StatusOK, EventsResponse{Events: evs})
}

// dumpRun dumps the request's run; on failure it has answered with the
// error and ok is false.
func (s *Server) dumpRun(w http.ResponseWriter, r *http.Request) (run eventlog.Run, evs []eventlog.Event, ok bool) {
	run, err := s.cfg.Store.Run(r.Context(), r.PathValue("runId"))
	if err != nil {
		s.fail(w, r, err)
		return eventlog.Run{}, nil, false
	}
	evs, err = s.cfg.Store.Dump(r.Context(), run)
	if err != nil {
		s.fail(w, r, err)
		return eventlog.Run{}, nil, false
	}
	return run, evs, true
}

// commitTimes: GET /v1/runs/{runId}/commit-times, server-observed.
func (s *Server) commitTimes(w http.ResponseWriter, r *http.Request) {
	run, evs, ok := s.dumpRun(w, r)
	if !ok {
		return
	}
	out := CommitTimesResponse{CommitTimes: make([]CommitTime, len(evs))}
	acks := s.runAcks(run.ID)
	acks.mu.Lock()
	for i, e := range evs {
		out.CommitTimes[i] = CommitTime{EventID: e.ID, Seq: e.Seq, At: acks.at[e.ID], Source: SourceServer}
	}
	acks.mu.Unlock()
	writeJSON(w, http.StatusOK, out)
}

// guard: GET /v1/runs/{runId}/guard.
func (s *Server) guard(w http.ResponseWriter, r *http.Request) {
	run, err := s.cfg.Store.Run(r.Context(), r.PathValue("runId"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	out := GuardResponse{Guard: string(run.Guard), Counts: s.counts(run.ID).snapshot()}
	if run.Guard == eventlog.GuardCountIndex && s.cfg.Index != nil {
		n, ok, err := s.cfg.Index.Count(r.Context(), run.ID)
		if err == nil && ok {
			out.Count = &n
		}
		if err == nil {
			out.Window, err = s.cfg.Index.Window(r.Context(), run.ID)
		}
		if err != nil {
			s.fail(w, r, err)
			return
		}
	}
	writeJSON(w, http.StatusOK, out)
}

// reset: POST /v1/reset drops every run: the table(s), the index's keys,
// the commit times and guard counts.
func (s *Server) reset(w http.ResponseWriter, r *http.Request) {
	if err := s.cfg.Store.Reset(r.Context()); err != nil {
		s.fail(w, r, err)
		return
	}
	if s.cfg.Index != nil {
		if err := s.cfg.Index.Reset(r.Context()); err != nil {
			s.fail(w, r, err)
			return
		}
	}
	s.acks.Clear()
	s.guards.Clear()
	w.WriteHeader(http.StatusNoContent)
}

// runAcks are the server-observed commit times of one run's events.
type runAcks struct {
	mu sync.Mutex
	at map[string]time.Time
}

func (s *Server) runAcks(runID string) *runAcks {
	if v, ok := s.acks.Load(runID); ok {
		return v.(*runAcks)
	}
	v, _ := s.acks.LoadOrStore(runID, &runAcks{at: map[string]time.Time{}})
	return v.(*runAcks)
}

// acked records the commit time of written events.
func (s *Server) acked(runID string, evs []eventlog.Event) {
	a := s.runAcks(runID)
	a.mu.Lock()
	for _, e := range evs {
		a.at[e.ID] = e.CommittedAt
	}
	a.mu.Unlock()
}

// overlay sets CommittedAt of read events to their server-observed commit
// time where this server wrote them (else it stays the time the write was
// sent, stored on the item).
func (s *Server) overlay(runID string, evs []eventlog.Event) {
	v, ok := s.acks.Load(runID)
	if !ok {
		return
	}
	a := v.(*runAcks)
	a.mu.Lock()
	for i := range evs {
		if t, ok := a.at[evs[i].ID]; ok {
			evs[i].CommittedAt = t
		}
	}
	a.mu.Unlock()
}

// decode reads a JSON body of at most MaxBody bytes into v, strictly (no
// unknown fields, nothing after the value). ok is false when an error was
// answered: 413 for an oversized body, 400 otherwise.
func (s *Server) decode(w http.ResponseWriter, r *http.Request, v any) bool {
	r.Body = http.MaxBytesReader(w, r.Body, s.cfg.MaxBody)
	dec := json.NewDecoder(r.Body)
	dec.DisallowUnknownFields()
	err := dec.Decode(v)
	if err == nil {
		if extra := dec.Decode(&struct{}{}); !errors.Is(extra, io.EOF) {
			err = errors.New("data after the JSON value")
			if extra != nil {
				err = extra
			}
		}
	}
	var tooBig *http.MaxBytesError
	switch {
	case err == nil:
		return true
	case errors.As(err, &tooBig):
		writeError(w, http.StatusRequestEntityTooLarge, ErrorBody{Code: CodeTooLarge, Error: fmt.Sprintf("request body over %d bytes", tooBig.Limit)})
	case errors.Is(err, io.EOF):
		writeError(w, http.StatusBadRequest, ErrorBody{Code: CodeBadJSON, Error: "empty request body: want a JSON object"})
	default:
		writeError(w, http.StatusBadRequest, ErrorBody{Code: CodeBadJSON, Error: "malformed JSON: " + err.Error()})
	}
	return false
}

// fail answers with the status and code an error stands for.
func (s *Server) fail(w http.ResponseWriter, r *http.Request, err error) {
	var (
		fe *eventlog.FencedError
		ce *eventlog.ConflictError
		se *eventlog.SealedError
		he *eventlog.HoleError
		ge *eventlog.GapError
		de *eventlog.DuplicateError
	)
	status, code, found := sentinelStatus(err)
	switch {
	case errors.As(err, &fe):
		writeError(w, http.StatusPreconditionFailed, ErrorBody{Code: CodeFenced, Error: fe.Error(), Expected: &fe.Expected, Actual: &fe.Actual, InBand: fe.InBand})
	case errors.As(err, &se):
		// Before unavailable: a refused commit whose own seals failed is
		// still void, and that is what its writer must learn.
		writeError(w, http.StatusConflict, ErrorBody{Code: CodeSealed, Error: err.Error(), Slot: &se.Slot})
	case errors.As(err, &ce):
		writeError(w, http.StatusConflict, ErrorBody{Code: CodeConflict, Error: ce.Error(), Key: ce.Key})
	case errors.As(err, &he):
		writeError(w, http.StatusConflict, ErrorBody{Code: CodeHole, Error: err.Error(), Slot: &he.Slot, Above: &he.Above})
	case errors.As(err, &ge):
		writeError(w, http.StatusConflict, ErrorBody{Code: CodeGap, Error: err.Error(), Want: &ge.Want, Got: &ge.Got})
	case errors.As(err, &de):
		writeError(w, http.StatusConflict, ErrorBody{Code: CodeDuplicate, Error: err.Error(), Seq: &de.Seq})
	case found:
		writeError(w, status, ErrorBody{Code: code, Error: err.Error()})
	case r.Context().Err() != nil:
		writeError(w, http.StatusServiceUnavailable, ErrorBody{Code: CodeCancelled, Error: err.Error()})
	default:
		s.cfg.Logger.Warn("ingest: internal error", "method", r.Method, "path", r.URL.Path, "err", err)
		writeError(w, http.StatusInternalServerError, ErrorBody{Code: CodeInternal, Error: err.Error()})
	}
}

// sentinelStatus gives the status and code of the first sentinel error err
// wraps, in the order fail tries them after the typed errors; found is
// false when it wraps none.
func sentinelStatus(err error) (status int, code string, found bool) {
	for _, s := range []struct {
		err    error
		status int
		code   string
	}{
		{dynamo.ErrNotReserved, http.StatusConflict, CodeNotReserved},
		{dynamo.ErrNoSlot, http.StatusNotFound, CodeNoSlot},
		{dynamo.ErrNotSlotRun, http.StatusBadRequest, CodeInvalidRequest},
		{dynamo.ErrRunExists, http.StatusConflict, CodeRunExists},
		{eventlog.ErrNoRun, http.StatusNotFound, CodeNoRun},
		{eventlog.ErrHookClaimUnsupported, http.StatusBadRequest, CodeHookClaim},
		{dynamo.ErrInvalidRun, http.StatusBadRequest, CodeInvalidRun},
		{dynamo.ErrBatchTooLarge, http.StatusBadRequest, CodeBatchTooLarge},
		{eventlog.ErrUnavailable, http.StatusServiceUnavailable, CodeUnavailable},
		{dynamo.ErrContention, http.StatusServiceUnavailable, CodeContention},
	} {
		if errors.Is(err, s.err) {
			return s.status, s.code, true
		}
	}
	return 0, "", false
}

func writeError(w http.ResponseWriter, status int, body ErrorBody) { writeJSON(w, status, body) }

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
