package ingest_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/stormctl/stormctl/internal/eventlog"
	"github.com/stormctl/stormctl/worlds/vercel/ingest"
)

// TestBadInput: every malformed or impossible request gets a 4xx with a
// JSON {error, code} body, and writes nothing.
func TestBadInput(t *testing.T) {
	e := newEnv(t, "")
	e.forEachScheme(t, func(t *testing.T, s eventlog.Scheme, run string) {
		events := "/v1/runs/" + run + "/events"
		fenced := events + "/fenced"
		huge := `{"events":[{"eventType":"step_completed","correlationId":"big","payload":"` + strings.Repeat("x", 2<<20) + `"}]}`
		bigPayload := `{"events":[{"eventType":"step_completed","correlationId":"big","payload":"` + strings.Repeat("x", ingest.MaxPayload) + `"}]}`
		tooMany := make([]eventlog.Draft, 60) // 60 events + 60 key markers > 100 actions
		for i := range tooMany {
			tooMany[i] = draft(eventlog.StepCompleted, fmt.Sprint("many_", i))
		}
		tooManyBody, _ := json.Marshal(ingest.AppendRequest{Events: tooMany})
		tests := []struct {
			name, method, path, body string
			status                   int
			code                     string
		}{
			{"malformed JSON", "POST", events, `{"events":[{"eventType":`, 400, ingest.CodeBadJSON},
			{"not an object", "POST", events, `[1,2]`, 400, ingest.CodeBadJSON},
			{"empty body", "POST", events, ``, 400, ingest.CodeBadJSON},
			{"unknown field", "POST", events, `{"events":[],"extra":1}`, 400, ingest.CodeBadJSON},
			{"trailing data", "POST", events, `{"events":[]} {}`, 400, ingest.CodeBadJSON},
			{"invalid payload JSON", "POST", events, `{"events":[{"eventType":"step_completed","correlationId":"p","payload":{nope}}]}`, 400, ingest.CodeBadJSON},
			{"unknown event type", "POST", events, `{"events":[{"eventType":"step_exploded","correlationId":"a"}]}`, 400, ingest.CodeUnknownType},
			{"unknown type in fenced batch", "POST", fenced, `{"expectedSeq":0,"events":[{"eventType":"step_created","correlationId":"a"},{"eventType":"nope"}]}`, 400, ingest.CodeUnknownType},
			{"oversized body", "POST", events, huge, 413, ingest.CodeTooLarge},
			{"payload over a DynamoDB item", "POST", events, bigPayload, 413, ingest.CodeTooLarge},
			{"batch too large", "POST", events, string(tooManyBody), 400, ingest.CodeBatchTooLarge},
			{"fenced without expectedSeq", "POST", fenced, `{"events":[{"eventType":"step_created","correlationId":"a"}]}`, 400, ingest.CodeInvalidRequest},
			{"negative expectedSeq", "POST", fenced, `{"expectedSeq":-1,"events":[{"eventType":"step_created","correlationId":"a"}]}`, 400, ingest.CodeInvalidRequest},
			{"missing run", "POST", "/v1/runs/wrun_missing/events", `{"events":[{"eventType":"step_completed","correlationId":"a"}]}`, 404, ingest.CodeNoRun},
			{"missing run fenced", "POST", "/v1/runs/wrun_missing/events/fenced", `{"expectedSeq":0,"events":[{"eventType":"step_created","correlationId":"a"}]}`, 404, ingest.CodeNoRun},
			{"missing run list", "GET", "/v1/runs/wrun_missing/events", ``, 404, ingest.CodeNoRun},
			{"missing run guard", "GET", "/v1/runs/wrun_missing/guard", ``, 404, ingest.CodeNoRun},
			{"bad limit", "GET", events + "?limit=-3", ``, 400, ingest.CodeInvalidRequest},
			{"bad cursor", "GET", events + "?afterSeq=x", ``, 400, ingest.CodeInvalidRequest},
			{"unknown route", "GET", "/v2/whatever", ``, 404, ingest.CodeNotFound},
			{"wrong method", "DELETE", events, ``, 405, ingest.CodeMethodNotAllowed},
			{"run exists", "POST", "/v1/runs", `{"runId":"` + run + `","scheme":"` + string(s) + `"}`, 409, ingest.CodeRunExists},
			{"unsupported scheme", "POST", "/v1/runs", `{"runId":"wrun_x_` + string(s) + `","scheme":"sequence"}`, 400, ingest.CodeInvalidRun},
			{"unknown guard", "POST", "/v1/runs", `{"runId":"wrun_y_` + string(s) + `","scheme":"seq","guard":"magic"}`, 400, ingest.CodeInvalidRun},
			{"empty run id", "POST", "/v1/runs", `{"runId":"","scheme":"seq"}`, 400, ingest.CodeInvalidRun},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				e.t = t
				var body []byte
				if tt.body != "" || tt.method == "POST" {
					body = []byte(tt.body)
				}
				a := e.send(tt.method, tt.path, body)
				if a.status != tt.status {
					t.Fatalf("HTTP %d %s, want %d", a.status, a.body, tt.status)
				}
				if b := a.errBody(t); b.Code != tt.code {
					t.Fatalf("code %q (%s), want %q", b.Code, b.Error, tt.code)
				}
				if n := len(e.log(run)); n != 0 {
					t.Fatalf("the run holds %d events after a refused request", n)
				}
			})
		}
	})
}

// TestConcurrentDuplicateFacts: 16 clients post the same fact at once;
// exactly one is accepted, the others conflict, the log holds it once.
func TestConcurrentDuplicateFacts(t *testing.T) {
	e := newEnv(t, "fixed:5ms")
	e.forEachScheme(t, func(t *testing.T, s eventlog.Scheme, run string) {
		const clients = 16
		statuses := make([]int, clients)
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i := range clients {
			wg.Go(func() {
				<-start
				a := e.appendFacts(run, eventlog.Draft{Type: eventlog.HookReceived, CorrelationID: "h1", Dedup: "p1", Payload: json.RawMessage(`{"i":` + fmt.Sprint(i) + `}`)})
				statuses[i] = a.status
				if a.status == http.StatusConflict {
					if b := a.errBody(t); b.Code != ingest.CodeConflict || b.Key != "hook_received/h1/p1" {
						t.Errorf("conflict body %+v, want code conflict and key hook_received/h1/p1", b)
					}
				}
			})
		}
		close(start)
		wg.Wait()
		accepted := 0
		for _, st := range statuses {
			switch st {
			case http.StatusCreated:
				accepted++
			case http.StatusConflict:
			default:
				t.Fatalf("statuses %v: want only 201 and 409", statuses)
			}
		}
		if accepted != 1 {
			t.Fatalf("%d of %d duplicate facts accepted, want exactly 1 (statuses %v)", accepted, clients, statuses)
		}
		if log := e.log(run); len(log) != 1 || (s.Positioned() && log[0].Seq != 1) {
			t.Fatalf("log %+v, want the one fact (seq 1 under seq and slot)", log)
		}
	})
}

// TestFencedBatchAllOrNothing: a fenced batch with one taken key inside
// conflicts and writes none of its events nor claims any of its keys; a
// stale one is rejected with 412 carrying both positions; the free drafts
// then go in.
func TestFencedBatchAllOrNothing(t *testing.T) {
	e := newEnv(t, "")
	e.forEachScheme(t, func(t *testing.T, s eventlog.Scheme, run string) {
		e.mustAppend(run, draft(eventlog.RunCreated, ""), draft(eventlog.StepCreated, "taken"))
		hook := eventlog.Draft{Type: eventlog.HookCreated, CorrelationID: "h1", Token: "tok1"}
		batch := []eventlog.Draft{draft(eventlog.StepCreated, "a"), hook, draft(eventlog.StepCreated, "taken"), draft(eventlog.WaitCreated, "w")}

		a := e.appendFenced(run, 2, batch...)
		if a.status != http.StatusConflict {
			t.Fatalf("batch with a taken key: HTTP %d %s, want 409", a.status, a.body)
		}
		if b := a.errBody(t); b.Key != "step_created/taken" {
			t.Fatalf("conflict on key %q, want step_created/taken", b.Key)
		}
		if n := len(e.log(run)); n != 2 {
			t.Fatalf("log holds %d events after the refused batch, want 2", n)
		}

		a = e.appendFenced(run, 1, batch[0], batch[1], batch[3])
		if a.status != http.StatusPreconditionFailed {
			t.Fatalf("stale batch: HTTP %d %s, want 412", a.status, a.body)
		}
		if b := a.errBody(t); b.Code != ingest.CodeFenced || b.Expected == nil || *b.Expected != 1 || b.Actual == nil || *b.Actual != 2 {
			t.Fatalf("412 body %s, want code fenced, expected 1, actual 2", a.body)
		}

		a = e.appendFenced(run, 2, batch[0], batch[1], batch[3])
		if a.status != http.StatusCreated {
			t.Fatalf("the free drafts: HTTP %d %s, want 201 (a refused batch must claim no key)", a.status, a.body)
		}
		log := e.log(run)
		if len(log) != 5 {
			t.Fatalf("log holds %d events, want 5", len(log))
		}
		if s.Positioned() {
			if err := eventlog.CheckDensity(run, 0, log); err != nil {
				t.Fatal(err)
			}
		}
	})
}

// TestStoreUnavailable: with DynamoDB gone, appends and reads answer 503
// unavailable; with Redis gone, a guarded run's creation and fenced appends
// do too, while unguarded runs carry on.
func TestStoreUnavailable(t *testing.T) {
	t.Run("redis", func(t *testing.T) {
		e := newEnv(t, "")
		guarded := e.createRun(eventlog.SchemeULID, eventlog.GuardCountIndex)
		plain := e.createRun(eventlog.SchemeSeq, "")
		e.redis.Close()
		for name, a := range map[string]answer{
			"fenced append": e.appendFenced(guarded, 0, draft(eventlog.StepCreated, "a")),
			"create run":    e.post("/v1/runs", eventlog.Run{ID: "wrun_new", Scheme: eventlog.SchemeULID, Guard: eventlog.GuardCountIndex}),
		} {
			if a.status != http.StatusServiceUnavailable || a.errBody(t).Code != ingest.CodeUnavailable {
				t.Fatalf("%s with Redis down: HTTP %d %s, want 503 unavailable", name, a.status, a.body)
			}
		}
		if n := len(e.log(guarded)); n != 0 {
			t.Fatalf("the guarded run holds %d events after a refused fenced append", n)
		}
		e.mustAppend(plain, draft(eventlog.StepCompleted, "still"))
	})
	t.Run("dynamo", func(t *testing.T) {
		e := newEnv(t, "")
		run := e.createRun(eventlog.SchemeSeq, "")
		if err := e.dyn.Close(); err != nil {
			t.Fatal(err)
		}
		for name, a := range map[string]answer{
			"append": e.appendFacts(run, draft(eventlog.StepCompleted, "a")),
			"fenced": e.appendFenced(run, 0, draft(eventlog.StepCreated, "a")),
			"list":   e.send(http.MethodGet, "/v1/runs/"+run+"/events", nil),
			"create": e.post("/v1/runs", eventlog.Run{ID: "wrun_new", Scheme: eventlog.SchemeSeq}),
		} {
			if a.status != http.StatusServiceUnavailable || a.errBody(t).Code != ingest.CodeUnavailable {
				t.Fatalf("%s with DynamoDB down: HTTP %d %s, want 503 unavailable", name, a.status, a.body)
			}
		}
	})
}
