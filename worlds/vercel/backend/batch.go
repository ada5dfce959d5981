package backend

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/stormctl/stormctl/internal/eventlog"
	"github.com/stormctl/stormctl/worlds"
)

// maxBatchBody bounds a batch POST's body: its frames.
const maxBatchBody = 8 << 20

// maxBatchAttempts bounds how often a batch is decided again after its
// write met a key another request claimed meanwhile.
const maxBatchAttempts = 5

// batchItem is one frame of a batch as decided: refused (status), answered
// with an event already written (existing), or written (the plan's events,
// own among them).
type batchItem struct {
	meta        Meta
	req         Request
	body        []byte
	status      int
	code, msg   string
	existing    *Event
	plan        slotWrite
	entities    map[string]any
	first       int // index of the plan's first event in the batch's write
	stepCreated bool
}

// createBatch: POST /api/v4/runs/{runId}/events/batch (world-vercel 5.0's
// events.createBatch), slot runs only: the single POST's frames back to
// back. Each event is decided as its single POST would be, in request
// order, on the run's state with the batch's earlier events applied; the
// refused ones are answered with their single POST's status and code and
// dropped, the others written at the run's tail in one transaction
// (WriteAtTail: one durable write, positions in request order). A key
// another request claimed meanwhile fails that transaction whole: the
// batch is then decided again on the store's new state (its refusals are
// the 409s a retry would meet). The answer is 200 with CBOR {results},
// one per frame: {status: 200, event, run | step | hook | wait} or
// {status, error, message}. A batch for a legacy run is refused 400, as
// world-vercel says its backend refuses one.
func (t *Tenant) createBatch(w http.ResponseWriter, r *http.Request) {
	runID := r.PathValue("runId")
	raw, err := readBody(w, r, maxBatchBody)
	if err != nil {
		writeError(w, http.StatusRequestEntityTooLarge, "too_large", "request body: "+err.Error())
		return
	}
	frames, err := ReadFrames(raw)
	if err != nil || len(frames) == 0 {
		writeError(w, http.StatusBadRequest, "invalid_request", fmt.Sprintf("want one or more v4 frames, got %d (%v)", len(frames), err))
		return
	}
	run, exists, slot, ok := t.slotRun(w, r, runID, frames[0].Meta)
	switch {
	case !ok:
		return
	case !slot:
		writeError(w, http.StatusBadRequest, "invalid_request", fmt.Sprintf("events.createBatch needs a run of spec %d or later (slot ids); run %s is not one", SlotSpecVersion, runID))
		return
	}
	items := make([]batchItem, len(frames))
	for i, f := range frames {
		if items[i].meta, items[i].req, items[i].body, ok = readSlotFrame(w, r, f); !ok {
			return
		}
		if items[i].meta.EventType == "hook_received" {
			writeError(w, http.StatusBadRequest, "invalid_request", "hook_received cannot be batched: it has no entity condition")
			return
		}
	}
	if run, ok = t.ensureSlotRun(w, r, run, exists); !ok {
		return
	}
	ctx := r.Context()
	for attempt := 1; ; attempt++ {
		_, evs, err := t.events(ctx, run.ID)
		if err != nil {
			fail(w, r, err)
			return
		}
		st := fold(run.ID, evs)
		events, keys, delay := t.planBatch(st, items)
		if len(events) > 0 {
			if err := worlds.SpendWindow(ctx, t.cfg.Latency, delay); err != nil {
				writeError(w, http.StatusServiceUnavailable, "cancelled", "request ended during the write's window: nothing written")
				return
			}
			wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), t.cfg.WriteTimeout)
			err = t.writeTail(wctx, run, events, keys, int64(len(evs))+1)
			cancel()
			var ce *eventlog.ConflictError
			if errors.As(err, &ce) && attempt < maxBatchAttempts {
				continue // decided again on the state that claimed the key
			}
			if err != nil {
				fail(w, r, err)
				return
			}
		}
		t.answerBatch(w, items, events)
		return
	}
}

// planBatch decides the batch's items in order on st, applying each
// one's events before the next is decided, and returns what the batch
// writes (in log order, with the keys each claims) and the longest window
// its types ask.
func (t *Tenant) planBatch(st *runState, items []batchItem) ([]Event, [][]string, time.Duration) {
	var events []Event
	var keys [][]string
	var delay time.Duration
	now := time.Now().UTC()
	for i := range items {
		it := &items[i]
		at := now
		if it.meta.OccurredAt != nil {
			at = it.meta.OccurredAt.UTC() // a slot id carries no time: the writer's is the event's
		}
		it.existing, it.status, it.entities = nil, 0, nil
		sw, d := t.planSlot(st, it.meta, it.body, at)
		switch {
		case d.status != 0:
			it.status, it.code, it.msg = d.status, d.code, d.message
			continue
		case d.existing != nil:
			it.existing = d.existing
			it.entities = t.slotEntities(st, *d.existing, false)
			continue
		}
		it.plan, it.first = sw, len(events)
		for _, e := range sw.events {
			st.apply(e)
		}
		it.entities = t.slotEntities(st, sw.events[sw.own], sw.stepCreated)
		events, keys = append(events, sw.events...), append(keys, sw.keys...)
		delay = max(delay, t.cfg.Latency.Delay(eventlog.Type(it.meta.EventType)))
		if it.meta.EventType == "hook_created" {
			t.noteToken(it.meta.HookToken, st.runID)
		}
	}
	return events, keys, delay
}

// answerBatch answers a batch: a result per item, the written events with
// the ids they committed at.
func (t *Tenant) answerBatch(w http.ResponseWriter, items []batchItem, written []Event) {
	results := make([]any, len(items))
	for i, it := range items {
		switch {
		case it.status != 0:
			results[i] = map[string]any{"status": it.status, "error": it.code, "message": it.msg}
			continue
		case it.existing != nil:
			it.entities["event"] = it.existing.entity(false)
		default:
			it.entities["event"] = written[it.first+it.plan.own].entity(false)
		}
		it.entities["status"] = http.StatusOK
		results[i] = it.entities
	}
	writeCBOR(w, map[string]any{"results": results})
}
