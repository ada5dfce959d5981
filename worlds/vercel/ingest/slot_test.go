package ingest_test

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/stormctl/stormctl/internal/eventlog"
	"github.com/stormctl/stormctl/worlds/vercel/ingest"
	"github.com/stormctl/stormctl/worlds/worldtest"
)

// decodeInto decodes an answer's body, failing t unless it has status.
func decodeInto[T any](t *testing.T, a answer, status int) T {
	t.Helper()
	if a.status != status {
		t.Fatalf("HTTP %d %s, want %d", a.status, a.body, status)
	}
	var v T
	if err := json.Unmarshal(a.body, &v); err != nil {
		t.Fatalf("body %s: %v", a.body, err)
	}
	return v
}

// wantErr asserts an error answer's status and code and returns its body.
func wantErr(t *testing.T, what string, a answer, status int, code string) ingest.ErrorBody {
	t.Helper()
	if a.status != status {
		t.Fatalf("%s: HTTP %d %s, want %d %s", what, a.status, a.body, status, code)
	}
	b := a.errBody(t)
	if b.Code != code {
		t.Fatalf("%s: code %q (%s), want %q", what, b.Code, b.Error, code)
	}
	return b
}

// TestSlotEndpoints: reserve, commit and seal over HTTP, with the answers
// and error bodies a client maps back to the contract: a reservation is
// invisible until committed; a read across an empty slot is a 409 hole
// naming it; a seal fills it with a noop naming its sealer and frees its
// keys; the commit of a sealed reservation is a 409 sealed naming the slot
// and seals the rest itself; every committed slot and noop has a commit
// time.
func TestSlotEndpoints(t *testing.T) {
	e := newEnv(t, "")
	run := e.createRun(eventlog.SchemeSlot, "")
	slots := "/v1/runs/" + run + "/slots/"
	held := []eventlog.Draft{draft(eventlog.StepCreated, "a"), draft(eventlog.StepCreated, "b")}

	res := decodeInto[ingest.ReservationResponse](t, e.post(slots+"reserve", ingest.ReserveRequest{Events: held}), http.StatusCreated)
	if res.RunID != run || res.First != 1 || res.Count != 2 || res.ReservedAt.IsZero() {
		t.Fatalf("reservation %+v, want slots 1-2 of %s with a time", res, run)
	}
	if log := e.log(run); len(log) != 0 {
		t.Fatalf("dump shows %d events with only a reservation", len(log))
	}
	p := decodeInto[eventlog.Page](t, e.send(http.MethodGet, "/v1/runs/"+run+"/events", nil), http.StatusOK)
	if len(p.Events) != 0 || p.More {
		t.Fatalf("list with only a reservation = %+v, want an empty page (a reserved tail is no hole)", p)
	}
	zero := int64(0)
	b := wantErr(t, "fenced reserve at 0", e.post(slots+"reserve", ingest.ReserveRequest{Events: []eventlog.Draft{draft(eventlog.StepCreated, "c")}, ExpectedSeq: &zero}),
		http.StatusPreconditionFailed, ingest.CodeFenced)
	if *b.Expected != 0 || *b.Actual != 2 {
		t.Fatalf("412 body %+v, want expected 0, actual 2 (the slots reserved)", b)
	}
	b = wantErr(t, "reserve of a held key", e.post(slots+"reserve", ingest.ReserveRequest{Events: held[:1]}), http.StatusConflict, ingest.CodeConflict)
	if b.Key != "step_created/a" {
		t.Fatalf("conflict on %q, want step_created/a", b.Key)
	}
	fact := e.mustAppend(run, draft(eventlog.StepCompleted, "x"))
	if fact[0].Seq != 3 || fact[0].ID != eventlog.SlotID(3) {
		t.Fatalf("fact at %s@%d, want slot 3", fact[0].ID, fact[0].Seq)
	}
	b = wantErr(t, "list across the reservation", e.send(http.MethodGet, "/v1/runs/"+run+"/events", nil), http.StatusConflict, ingest.CodeHole)
	if *b.Slot != 1 || *b.Above != 3 {
		t.Fatalf("hole body %+v, want slot 1 below 3", b)
	}

	sealed := decodeInto[ingest.SealResponse](t, e.post(slots+"2/seal", ingest.SealRequest{Actor: "reader"}), http.StatusOK)
	if !sealed.Sealed || sealed.Event == nil || sealed.Event.Type != eventlog.Noop || sealed.Event.Seq != 2 || sealed.Event.CommittedAt.IsZero() {
		t.Fatalf("seal of slot 2 = %+v", sealed)
	}
	var np eventlog.NoopPayload
	if err := json.Unmarshal(sealed.Event.Payload, &np); err != nil || np.SealedBy != "reader" || !np.ReservedAt.Equal(res.ReservedAt) {
		t.Fatalf("noop payload %s, want sealedBy reader and reservedAt %v", sealed.Event.Payload, res.ReservedAt)
	}
	for _, slot := range []string{"2", "3"} {
		if again := decodeInto[ingest.SealResponse](t, e.post(slots+slot+"/seal", ingest.SealRequest{}), http.StatusOK); again.Sealed || again.Event != nil {
			t.Fatalf("seal of filled slot %s = %+v, want nothing sealed", slot, again)
		}
	}
	wantErr(t, "seal of a slot never reserved", e.post(slots+"99/seal", ingest.SealRequest{}), http.StatusNotFound, ingest.CodeNoSlot)
	wantErr(t, "seal of slot x", e.post(slots+"x/seal", ingest.SealRequest{}), http.StatusBadRequest, ingest.CodeInvalidRequest)

	commit := ingest.CommitRequest{First: res.First, ReservedAt: res.ReservedAt, Events: held, Actor: "writer"}
	b = wantErr(t, "commit of a half-sealed reservation", e.post(slots+"commit", commit), http.StatusConflict, ingest.CodeSealed)
	if *b.Slot != 2 {
		t.Fatalf("sealed body %+v, want slot 2", b)
	}
	log := e.log(run)
	if len(log) != 3 || log[0].Type != eventlog.Noop || log[1].Type != eventlog.Noop || log[2].ID != fact[0].ID {
		t.Fatalf("log after the void commit: %+v, want noop, noop, the fact", log)
	}
	if err := json.Unmarshal(log[0].Payload, &np); err != nil || np.SealedBy != "writer" {
		t.Fatalf("slot 1's noop %s, want sealed by the writer whose commit was refused", log[0].Payload)
	}
	cts := decodeInto[ingest.CommitTimesResponse](t, e.send(http.MethodGet, "/v1/runs/"+run+"/commit-times", nil), http.StatusOK)
	for i, ct := range cts.CommitTimes {
		if ct.At.IsZero() || ct.EventID != log[i].ID || ct.Seq != int64(i+1) {
			t.Fatalf("commit time %d = %+v, want slot %d's, observed", i, ct, i+1)
		}
	}

	res = decodeInto[ingest.ReservationResponse](t, e.post(slots+"reserve", ingest.ReserveRequest{Events: held}), http.StatusCreated)
	if res.First != 4 {
		t.Fatalf("re-reservation of the void drafts from %d, want 4 (their keys released)", res.First)
	}
	other := ingest.CommitRequest{First: res.First, ReservedAt: res.ReservedAt, Events: []eventlog.Draft{held[1], held[0]}}
	wantErr(t, "commit of other drafts", e.post(slots+"commit", other), http.StatusConflict, ingest.CodeNotReserved)
	wantErr(t, "commit without reservedAt", e.post(slots+"commit", ingest.CommitRequest{First: res.First, Events: held}), http.StatusBadRequest, ingest.CodeInvalidRequest)
	wantErr(t, "commit of slots never reserved", e.post(slots+"commit", ingest.CommitRequest{First: 40, ReservedAt: res.ReservedAt, Events: held}),
		http.StatusNotFound, ingest.CodeNoSlot)
	evs := decodeInto[ingest.EventsResponse](t, e.post(slots+"commit", ingest.CommitRequest{First: res.First, ReservedAt: res.ReservedAt, Events: held}), http.StatusCreated)
	if len(evs.Events) != 2 || evs.Events[0].ID != eventlog.SlotID(4) || !evs.Events[1].MintedAt.Equal(res.ReservedAt) || evs.Events[1].CommittedAt.Before(res.ReservedAt) {
		t.Fatalf("commit = %+v, want slots 4-5 minted at the reservation", evs.Events)
	}
	wantErr(t, "a second commit", e.post(slots+"commit", ingest.CommitRequest{First: res.First, ReservedAt: res.ReservedAt, Events: held}),
		http.StatusConflict, ingest.CodeNotReserved)
	p = decodeInto[eventlog.Page](t, e.send(http.MethodGet, "/v1/runs/"+run+"/events?afterSeq=3&limit=1", nil), http.StatusOK)
	if len(p.Events) != 1 || p.Events[0].Seq != 4 || !p.More || p.Next.Seq != 4 {
		t.Fatalf("list after 3, limit 1 = %+v, want slot 4 and more", p)
	}

	seq := e.createRun(eventlog.SchemeSeq, "")
	wantErr(t, "reserve on a seq run", e.post("/v1/runs/"+seq+"/slots/reserve", ingest.ReserveRequest{Events: held}), http.StatusBadRequest, ingest.CodeInvalidRequest)
	wantErr(t, "seal on a seq run", e.post("/v1/runs/"+seq+"/slots/1/seal", ingest.SealRequest{}), http.StatusBadRequest, ingest.CodeInvalidRequest)
	wantErr(t, "reserve on an unknown run", e.post("/v1/runs/wrun_missing/slots/reserve", ingest.ReserveRequest{Events: held}), http.StatusNotFound, ingest.CodeNoRun)
	wantErr(t, "seal with GET", e.send(http.MethodGet, slots+"1/seal", nil), http.StatusMethodNotAllowed, ingest.CodeMethodNotAllowed)
}

// TestSlotAppendWindow: an append to a slot run reserves at once and
// commits after its window: while it waits, readers see nothing of it, its
// slot is reserved, and a seal of it in the window voids the append with a
// 409 sealed. The append is held
// in its window (worldtest.Holder) while the reader seals, so the seal
// cannot miss the window.
func TestSlotAppendWindow(t *testing.T) {
	hold := worldtest.NewHolder()
	e := newEnvWith(t, hold)
	run := e.createRun(eventlog.SchemeSlot, "")
	hold.Hold(1)
	done := make(chan answer, 1)
	go func() {
		done <- e.post("/v1/runs/"+run+"/events", ingest.AppendRequest{Events: []eventlog.Draft{draft(eventlog.StepCompleted, "w")}, Actor: "writer"})
	}()
	held := hold.Next(t, "the append in its window")
	if log := e.log(run); len(log) != 0 {
		held.Release()
		t.Fatalf("readers see %+v of an append in its window", log)
	}
	a := e.post("/v1/runs/"+run+"/slots/1/seal", ingest.SealRequest{Actor: "reader"})
	held.Release()
	if s := decodeInto[ingest.SealResponse](t, a, http.StatusOK); !s.Sealed {
		t.Fatalf("seal in the writer's window found the slot filled: %s", a.body)
	}
	a = <-done
	if b := wantErr(t, "append whose slot was sealed in its window", a, http.StatusConflict, ingest.CodeSealed); *b.Slot != 1 {
		t.Fatalf("sealed body %+v, want slot 1", b)
	}
	log := e.log(run)
	if len(log) != 1 || log[0].Type != eventlog.Noop {
		t.Fatalf("log %+v, want the reader's noop only", log)
	}
	evs := e.mustAppend(run, draft(eventlog.StepCompleted, "w"))
	if evs[0].Seq != 2 || !evs[0].CommittedAt.After(evs[0].MintedAt) {
		t.Fatalf("re-append = %+v, want slot 2 committed after its reservation", evs[0])
	}
}
