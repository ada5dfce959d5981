package backend

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/oklog/ulid/v2"

	"github.com/stormctl/stormctl/worlds/vercel/dynamo"
)

// tenantOn returns a tenant over a fresh embedded DynamoDB-API server,
// both closed with t.
func tenantOn(t *testing.T) *Tenant {
	t.Helper()
	dyn, err := dynamo.StartEmbedded()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = dyn.Close() })
	st, err := dynamo.Open(t.Context(), dynamo.Config{Endpoint: dyn.URL(), StaticCredentials: true, TablePerRun: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	tn, err := NewTenant(TenantConfig{Store: st, Project: "prj_test", Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	return tn
}

// post posts one event frame and returns the status and the decoded body.
func post(t *testing.T, tn *Tenant, runID string, meta map[string]any, body []byte) (int, map[string]any) {
	t.Helper()
	frame, err := AppendFrame(nil, meta, body)
	if err != nil {
		t.Fatal(err)
	}
	req := httptest.NewRequest(http.MethodPost, "/api/v4/runs/"+runID+"/events/"+meta["eventType"].(string), bytes.NewReader(frame))
	return serve(t, tn, req)
}

func serve(t *testing.T, tn *Tenant, req *http.Request) (int, map[string]any) {
	t.Helper()
	rec := httptest.NewRecorder()
	tn.ServeHTTP(rec, req)
	b, _ := io.ReadAll(rec.Body)
	out := map[string]any{}
	if rec.Header().Get("Content-Type") == "application/cbor" {
		if err := Unmarshal(b, &out); err != nil {
			t.Fatalf("answer %d: %v", rec.Code, err)
		}
	}
	return rec.Code, out
}

// TestResilientStartAndReads: a run_started that comes before its run's
// run_created (the runtime's start() writes and queues at once) writes the
// run_created it implies first, as world-local 4.4.1 does, answers with the
// run and its events read back, and start's own run_created is then a
// conflict; the run reads back through GET /v2/runs/:id, and a hook
// through GET /v2/hooks/by-token while it lives, not once disposed of.
func TestResilientStartAndReads(t *testing.T) {
	tn := tenantOn(t)
	runID := "wrun_" + ulid.Make().String()
	created := map[string]any{"eventType": "run_created", "specVersion": 3, "deploymentId": "dpl_1", "workflowName": "wf"}
	started := map[string]any{"eventType": "run_started", "specVersion": 3, "deploymentId": "dpl_1", "workflowName": "wf"}
	code, ans := post(t, tn, runID, started, []byte("input"))
	if code != http.StatusOK {
		t.Fatalf("run_started first: %d %v", code, ans)
	}
	run, _ := ans["run"].(map[string]any)
	evs, _ := ans["events"].([]any)
	if run["status"] != "running" || len(evs) != 2 || evs[0].(map[string]any)["eventType"] != "run_created" {
		t.Fatalf("run_started's answer: run %v, events %v; want a running run and [run_created run_started]", run, evs)
	}
	if code, _ := post(t, tn, runID, created, []byte("input")); code != http.StatusConflict {
		t.Fatalf("start's run_created after the resilient start: %d, want 409", code)
	}
	code, got := serve(t, tn, httptest.NewRequest(http.MethodGet, "/api/v2/runs/"+runID+"?remoteRefBehavior=lazy", nil))
	if code != http.StatusOK || got["status"] != "running" || got["workflowName"] != "wf" || got["input"] != nil {
		t.Fatalf("GET run (lazy): %d %v", code, got)
	}
	if code, _ := serve(t, tn, httptest.NewRequest(http.MethodGet, "/api/v2/runs/wrun_"+ulid.Make().String(), nil)); code != http.StatusNotFound {
		t.Fatalf("GET of a run never created: %d, want 404", code)
	}
	hook := map[string]any{"eventType": "hook_created", "specVersion": 3, "correlationId": "hook_1", "hookToken": "tok-1"}
	if code, ans := post(t, tn, runID, hook, nil); code != http.StatusOK {
		t.Fatalf("hook_created: %d %v", code, ans)
	}
	byToken := func() (int, map[string]any) {
		return serve(t, tn, httptest.NewRequest(http.MethodGet, "/api/v2/hooks/by-token?token=tok-1", nil))
	}
	if code, h := byToken(); code != http.StatusOK || h["hookId"] != "hook_1" || h["runId"] != runID {
		t.Fatalf("by-token of a live hook: %d %v", code, h)
	}
	disposed := map[string]any{"eventType": "hook_disposed", "specVersion": 3, "correlationId": "hook_1"}
	if code, ans := post(t, tn, runID, disposed, nil); code != http.StatusOK {
		t.Fatalf("hook_disposed: %d %v", code, ans)
	}
	if code, h := byToken(); code != http.StatusNotFound {
		t.Fatalf("by-token of a disposed hook: %d %v, want 404", code, h)
	}
}
