package backend

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/oklog/ulid/v2"

	"github.com/stormctl/stormctl/internal/eventlog"
)

// slotMeta is a world-vercel 5.0 frame meta (spec 7) of type typ with
// extra fields.
func slotMeta(typ, corr string, extra ...any) map[string]any {
	m := map[string]any{"eventType": typ, "specVersion": 7}
	if corr != "" {
		m["correlationId"] = corr
	}
	for i := 0; i+1 < len(extra); i += 2 {
		m[extra[i].(string)] = extra[i+1]
	}
	return m
}

// newRunID is a fresh run id.
func newRunID() string { return "wrun_" + ulid.Make().String() }

// eventIDOf is the id of an answer's event.
func eventIDOf(out map[string]any) string {
	ev, _ := out["event"].(map[string]any)
	id, _ := ev["eventId"].(string)
	return id
}

// idsOf are the ids of an answer's events.
func idsOf(out map[string]any) []string {
	evs, _ := out["events"].([]any)
	var ids []string
	for _, e := range evs {
		ids = append(ids, e.(map[string]any)["eventId"].(string))
	}
	return ids
}

// list lists a run's events and returns the frames' ids and the sentinel.
func list(t *testing.T, tn *Tenant, runID, query string) ([]string, map[string]any) {
	t.Helper()
	rec := httptest.NewRecorder()
	tn.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/api/v4/runs/"+runID+"/events"+query, nil))
	b, _ := io.ReadAll(rec.Body)
	fs, err := ReadFrames(b)
	if rec.Code != http.StatusOK || err != nil || len(fs) == 0 {
		t.Fatalf("list %s: %d %v: %s", query, rec.Code, err, b)
	}
	var ids []string
	for _, f := range fs[:len(fs)-1] {
		var m map[string]any
		if err := Unmarshal(f.Meta, &m); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, m["eventId"].(string))
	}
	end := map[string]any{}
	if err := Unmarshal(fs[len(fs)-1].Meta, &end); err != nil {
		t.Fatal(err)
	}
	return ids, end
}

func slot(p int64) string { return eventlog.SlotID(p) }

// startSlotRun writes a run's run_created and run_started (spec 7): slots
// 1 and 2.
func startSlotRun(t *testing.T, tn *Tenant) string {
	t.Helper()
	runID := newRunID()
	if code, out := post(t, tn, runID, slotMeta("run_created", "", "deploymentId", "d", "workflowName", "wf"), []byte("in")); code != http.StatusOK || eventIDOf(out) != slot(1) {
		t.Fatalf("run_created: %d %v", code, out)
	}
	if code, out := post(t, tn, runID, slotMeta("run_started", "", "skipPreload", true), nil); code != http.StatusOK || eventIDOf(out) != slot(2) {
		t.Fatalf("run_started: %d %v", code, out)
	}
	return runID
}

// TestSlotContract: a run stamped at spec 6 or later gets slot ids
// allocated at commit; each request is answered as world-vercel
// 5.0.0-beta.50 reads it.
func TestSlotContract(t *testing.T) {
	tn := tenantOn(t)
	for _, tt := range []struct {
		name string
		// before are the events posted first (after run_created and
		// run_started: slots 1 and 2), each {type, correlation id}.
		before [][2]string
		meta   map[string]any
		body   []byte
		status int
		id     string   // the answer's event id
		events []string // the answer's events (nil: none)
		check  func(t *testing.T, out map[string]any)
	}{
		{name: "a step created at the tail", meta: slotMeta("step_created", "s1", "stepName", "st"), body: []byte("x"), status: 200, id: slot(3)},
		{name: "a step created twice", before: [][2]string{{"step_created", "s1"}}, meta: slotMeta("step_created", "s1", "stepName", "st"), body: []byte("x"),
			status: http.StatusConflict},
		{name: "bump and report: the writer held 2 slots, the write landed on 5",
			before: [][2]string{{"step_created", "s1"}, {"wait_created", "w1"}}, meta: slotMeta("step_created", "s2", "stepName", "st", "maxSlot", 2),
			body: []byte("x"), status: 200, id: slot(5), events: []string{slot(3), slot(4)},
			check: func(t *testing.T, out map[string]any) {
				if out["cursor"] != nil || out["hasMore"] != false {
					t.Errorf("report: cursor %v hasMore %v, want null and false (a report moves no read position)", out["cursor"], out["hasMore"])
				}
			}},
		{name: "the delta after the writer's cursor", before: [][2]string{{"wait_created", "w1"}},
			meta: slotMeta("wait_completed", "w1", "sinceCursor", slot(2), "maxSlot", 3), status: 200, id: slot(4), events: []string{slot(3), slot(4)},
			check: func(t *testing.T, out map[string]any) {
				if out["cursor"] != slot(4) || out["hasMore"] != false {
					t.Errorf("delta: cursor %v hasMore %v, want %s and false", out["cursor"], out["hasMore"], slot(4))
				}
			}},
		{name: "a lazy step start creates its step", meta: slotMeta("step_started", "s1", "stepName", "st", "ownerMessageId", "msg_1"), body: []byte("in"),
			status: 200, id: slot(4), check: func(t *testing.T, out map[string]any) {
				if out["stepCreated"] != true || out["step"] == nil {
					t.Errorf("lazy start: stepCreated %v step %v, want true and the step", out["stepCreated"], out["step"])
				}
			}},
		{name: "a lazy step start of a step that exists lost the claim", before: [][2]string{{"step_created", "s1"}},
			meta: slotMeta("step_started", "s1", "stepName", "st"), body: []byte("in"), status: http.StatusConflict},
		{name: "a run ended twice", before: [][2]string{{"run_completed", ""}}, meta: slotMeta("run_failed", ""), status: http.StatusConflict},
		{name: "run attributes are not implemented", meta: slotMeta("step_created", "s1", "attributes", map[string]any{"k": "v"}),
			status: http.StatusNotImplemented},
	} {
		t.Run(tt.name, func(t *testing.T) {
			runID := startSlotRun(t, tn)
			for _, b := range tt.before {
				if code, out := post(t, tn, runID, slotMeta(b[0], b[1], "stepName", "st"), []byte("b")); code != http.StatusOK {
					t.Fatalf("before %v: %d %v", b, code, out)
				}
			}
			code, out := post(t, tn, runID, tt.meta, tt.body)
			if code != tt.status {
				t.Fatalf("answered %d %v, want %d", code, out, tt.status)
			}
			if code != http.StatusOK {
				return
			}
			if eventIDOf(out) != tt.id {
				t.Errorf("event %s, want %s", eventIDOf(out), tt.id)
			}
			if !slices.Equal(idsOf(out), tt.events) {
				t.Errorf("events %v, want %v", idsOf(out), tt.events)
			}
			if tt.check != nil {
				tt.check(t, out)
			}
			ids, end := list(t, tn, runID, "?returnAll=true")
			for i, id := range ids {
				if id != slot(int64(i)+1) {
					t.Fatalf("log %v: not dense from 1", ids)
				}
			}
			if end["hasMore"] != false || end["next"] != ids[len(ids)-1] {
				t.Errorf("sentinel %v, want hasMore false and next %s (the resume point, on the last page too)", end, ids[len(ids)-1])
			}
		})
	}
}

// TestSlotRunStarted: a run_started that asks for the run's log (Accept:
// v4 frames) is answered with it as frames, the event ceiling in
// x-wf-max-events; a resilient start writes the run_created it implies.
func TestSlotRunStarted(t *testing.T) {
	tn := tenantOn(t)
	runID := newRunID()
	frame, err := AppendFrame(nil, slotMeta("run_started", "", "deploymentId", "d", "workflowName", "wf"), []byte("in"))
	if err != nil {
		t.Fatal(err)
	}
	req := httptest.NewRequest(http.MethodPost, "/api/v4/runs/"+runID+"/events/run_started", bytes.NewReader(frame))
	req.Header.Set("Accept", FrameContentType)
	rec := httptest.NewRecorder()
	tn.ServeHTTP(rec, req)
	b, _ := io.ReadAll(rec.Body)
	fs, err := ReadFrames(b)
	if rec.Code != http.StatusOK || err != nil || len(fs) != 3 {
		t.Fatalf("run_started: %d, %d frames (%v): %s", rec.Code, len(fs), err, b)
	}
	if rec.Header().Get(maxEventsHeader) == "" || rec.Header().Get("x-wf-event-id") != slot(2) {
		t.Errorf("headers %v: want %s and the event id %s", rec.Header(), maxEventsHeader, slot(2))
	}
	var end map[string]any
	if err := Unmarshal(fs[2].Meta, &end); err != nil || end["next"] != slot(2) || end["hasMore"] != false {
		t.Errorf("sentinel %v (%v), want next %s, hasMore false", end, err, slot(2))
	}
}

// TestSlotBatch: a batch is decided event by event, in order, on the run
// with the batch's earlier events applied; refused events are answered
// with their status and dropped, the rest written at consecutive slots in
// one write; a legacy run's batch is refused 400.
func TestSlotBatch(t *testing.T) {
	tn := tenantOn(t)
	runID := startSlotRun(t, tn)
	var body []byte
	for _, m := range []map[string]any{
		slotMeta("step_created", "s1", "stepName", "st"),
		slotMeta("step_started", "s1"),
		slotMeta("step_created", "s1", "stepName", "st"), // the batch's own first one holds it
		slotMeta("wait_created", "w1"),
	} {
		var err error
		if body, err = AppendFrame(body, m, []byte("p")); err != nil {
			t.Fatal(err)
		}
	}
	code, out := serve(t, tn, httptest.NewRequest(http.MethodPost, "/api/v4/runs/"+runID+"/events/batch", bytes.NewReader(body)))
	if code != http.StatusOK {
		t.Fatalf("batch: %d %v", code, out)
	}
	results, _ := out["results"].([]any)
	var got []string
	for _, r := range results {
		m := r.(map[string]any)
		got = append(got, fmt.Sprintf("%v %s", m["status"], eventIDOf(m)))
	}
	want := []string{"200 " + slot(3), "200 " + slot(4), "409 ", "200 " + slot(5)}
	if !slices.Equal(got, want) {
		t.Fatalf("results %q, want %q", got, want)
	}
	legacy := "wrun_" + ulid.Make().String()
	if code, out := post(t, tn, legacy, map[string]any{"eventType": "run_created", "specVersion": 3, "deploymentId": "d", "workflowName": "wf"}, []byte("in")); code != http.StatusOK || !strings.HasPrefix(eventIDOf(out), "wevt_") {
		t.Fatalf("legacy run_created: %d %v, want a wevt_ id", code, out)
	}
	frame, _ := AppendFrame(nil, slotMeta("step_created", "s1", "stepName", "st"), nil)
	if code, _ := serve(t, tn, httptest.NewRequest(http.MethodPost, "/api/v4/runs/"+legacy+"/events/batch", bytes.NewReader(frame))); code != http.StatusBadRequest {
		t.Fatalf("a legacy run's batch: %d, want 400", code)
	}
	if _, end := list(t, tn, legacy, ""); end["hasMore"] != nil {
		t.Errorf("a legacy run's sentinel %v: want 4.7.4's {_end, next?}", end)
	}
}

// TestSlotResume: the deliveries of one lazy hook resume (resumeId)
// converge on one event; another hook's reuse of the id is refused.
func TestSlotResume(t *testing.T) {
	tn := tenantOn(t)
	runID := startSlotRun(t, tn)
	if code, out := post(t, tn, runID, slotMeta("hook_created", "h1", "hookToken", "tok"), nil); code != http.StatusOK {
		t.Fatalf("hook_created: %d %v", code, out)
	}
	resume := slotMeta("hook_received", "h1", "resumeId", "r1", "resumePayloadDigest", "d1")
	var wg sync.WaitGroup
	got := make([]string, 4)
	for i := range got {
		wg.Go(func() {
			code, out := post(t, tn, runID, resume, []byte("payload"))
			got[i] = fmt.Sprintf("%d %s", code, eventIDOf(out))
		})
	}
	wg.Wait()
	for _, g := range got {
		if g != "200 "+slot(4) {
			t.Fatalf("deliveries answered %q, want every one 200 %s", got, slot(4))
		}
	}
	if code, _ := post(t, tn, runID, slotMeta("hook_received", "h2", "resumeId", "r1"), nil); code != http.StatusConflict {
		t.Fatalf("another hook's resume id: %d, want 409", code)
	}
	if ids, _ := list(t, tn, runID, ""); len(ids) != 4 {
		t.Fatalf("log %v: want one hook_received", ids)
	}
}
