package devkitworld

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/oklog/ulid/v2"

	"github.com/stormctl/stormctl/internal/eventlog"
	"github.com/stormctl/stormctl/worlds/devkitworld/sidecar"
)

const testRun = "wrun_01M8XMFQZN0MPGRVV6SR7AN1ZA"

// stored is what the package gives back for pe: the fields it keeps, as
// @workflow/world's EventSchema reads them (a wait keeps only resumeAt),
// with an id it minted.
func stored(t *testing.T, pe PackageEvent, minted time.Time) PackageEvent {
	t.Helper()
	out := PackageEvent{EventType: pe.EventType, CorrelationID: pe.CorrelationID, RunID: testRun,
		EventID: "evnt_" + ulid.MustNew(ulid.Timestamp(minted), ulid.DefaultEntropy()).String(), CreatedAt: minted}
	var data map[string]json.RawMessage
	if len(pe.EventData) > 0 {
		if err := json.Unmarshal(pe.EventData, &data); err != nil {
			t.Fatal(err)
		}
	}
	if pe.EventType == string(eventlog.WaitCreated) || pe.EventType == string(eventlog.WaitCompleted) {
		data = map[string]json.RawMessage{"resumeAt": data["resumeAt"]}
	}
	if len(data) > 0 {
		out.EventData, _ = json.Marshal(data)
	}
	return out
}

// TestRoundTrip: every draft the package can hold comes back as it went in,
// id and mint time the package's; what it cannot hold is refused.
func TestRoundTrip(t *testing.T) {
	p := func(s string) json.RawMessage { return json.RawMessage(s) }
	tests := []struct {
		name string
		d    eventlog.Draft
		want eventlog.Draft // zero: the draft itself
	}{
		{"run_created", eventlog.Draft{Type: eventlog.RunCreated, Payload: p(`{"rounds":6}`)}, eventlog.Draft{}},
		{"step_created", eventlog.Draft{Type: eventlog.StepCreated, CorrelationID: "step_1", Payload: p(`{"name":"settle","args":{"r":1}}`)}, eventlog.Draft{}},
		{"step_started", eventlog.Draft{Type: eventlog.StepStarted, CorrelationID: "step_1"}, eventlog.Draft{}},
		{"step_completed", eventlog.Draft{Type: eventlog.StepCompleted, CorrelationID: "step_1", Payload: p(`{"result":"ok"}`)}, eventlog.Draft{}},
		{"step_failed", eventlog.Draft{Type: eventlog.StepFailed, CorrelationID: "step_1", Payload: p(`{"error":"boom"}`)}, eventlog.Draft{}},
		{"hook_created", eventlog.Draft{Type: eventlog.HookCreated, CorrelationID: "hook_1", Token: "poke", Payload: p(`{"token":"poke"}`)}, eventlog.Draft{}},
		{"hook_received", eventlog.Draft{Type: eventlog.HookReceived, CorrelationID: "hook_1", Dedup: "poke-3", Payload: p(`{"k":3}`)}, eventlog.Draft{}},
		{"hook_disposed", eventlog.Draft{Type: eventlog.HookDisposed, CorrelationID: "hook_1"}, eventlog.Draft{}},
		{"wait_created keeps resumeAt", eventlog.Draft{Type: eventlog.WaitCreated, CorrelationID: "wait_1", Payload: p(`{"durationMs":2500,"resumeAt":"2026-12-03T09:50:29.623Z"}`)},
			eventlog.Draft{Type: eventlog.WaitCreated, CorrelationID: "wait_1", Payload: p(`{"resumeAt":"2026-12-03T09:50:29.623Z"}`)}},
		{"wait_completed", eventlog.Draft{Type: eventlog.WaitCompleted, CorrelationID: "wait_1", Payload: p(`{"resumeAt":"2026-12-03T09:50:29.623Z"}`)}, eventlog.Draft{}},
		{"run_completed", eventlog.Draft{Type: eventlog.RunCompleted, Payload: p(`{"output":[1,2]}`)}, eventlog.Draft{}},
		{"run_failed", eventlog.Draft{Type: eventlog.RunFailed, Payload: p(`{"code":"CORRUPTED_EVENT_LOG","message":"m"}`)}, eventlog.Draft{}},
	}
	minted := time.Date(2026, 12, 3, 9, 50, 0, 123e6, time.UTC)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want := tt.want
			if want.Type == "" {
				want = tt.d
			}
			pe, err := toPackage(testRun, "", tt.d)
			if err != nil {
				t.Fatalf("toPackage: %v", err)
			}
			e, err := fromPackage(testRun, stored(t, pe, minted))
			if err != nil {
				t.Fatalf("fromPackage: %v", err)
			}
			got := e.Draft()
			if got.Type != want.Type || got.CorrelationID != want.CorrelationID || got.Token != want.Token || got.Dedup != want.Dedup || !sameJSON(got.Payload, want.Payload) {
				t.Fatalf("round trip of %+v gave %+v, want %+v", tt.d, got, want)
			}
			if e.RunID != testRun || !e.MintedAt.Equal(minted) {
				t.Fatalf("event run %s minted %v, want %s, %v", e.RunID, e.MintedAt, testRun, minted)
			}
		})
	}
}

func sameJSON(a, b json.RawMessage) bool {
	if len(a) == 0 || len(b) == 0 {
		return len(a) == len(b)
	}
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	xb, _ := json.Marshal(x)
	yb, _ := json.Marshal(y)
	return string(xb) == string(yb)
}

// TestPackageShapes: what the package is asked to store: a step's name, a
// run's names, a token scoped by its run (tokens are global there).
func TestPackageShapes(t *testing.T) {
	tests := []struct {
		d    eventlog.Draft
		want string
	}{
		{eventlog.Draft{Type: eventlog.StepCreated, CorrelationID: "s", Payload: json.RawMessage(`{"name":"settle"}`)},
			`{"input":{"payload":{"name":"settle"}},"stepName":"settle"}`},
		{eventlog.Draft{Type: eventlog.StepCreated, CorrelationID: "s"}, `{"input":{},"stepName":"s"}`},
		{eventlog.Draft{Type: eventlog.HookCreated, CorrelationID: "h", Token: "poke"},
			`{"metadata":{},"token":"` + testRun + `:poke"}`},
		{eventlog.Draft{Type: eventlog.RunCreated, CorrelationID: "ignored"}, `{"deploymentId":"stormctl","input":{},"workflowName":"stormctl"}`},
		{eventlog.Draft{Type: eventlog.HookDisposed, CorrelationID: "h"}, ``},
	}
	for _, tt := range tests {
		pe, err := toPackage(testRun, "", tt.d)
		if err != nil {
			t.Fatalf("toPackage(%+v): %v", tt.d, err)
		}
		if string(pe.EventData) != tt.want {
			t.Errorf("toPackage(%s).eventData = %s, want %s", tt.d.Type, pe.EventData, tt.want)
		}
		if tt.d.Type == eventlog.RunCreated && pe.CorrelationID != "" {
			t.Errorf("run_created carries correlation id %q to the package", pe.CorrelationID)
		}
	}
}

// TestUnrepresentable: drafts the package cannot hold are refused, not
// changed.
func TestUnrepresentable(t *testing.T) {
	for _, d := range []eventlog.Draft{
		{Type: eventlog.AttrSet, CorrelationID: "a", Payload: json.RawMessage(`{"key":"k"}`)},
		{Type: eventlog.Noop},
		{Type: eventlog.HookConflict, CorrelationID: "h"},
		{Type: eventlog.StepStarted, CorrelationID: "s", Payload: json.RawMessage(`{"x":1}`)},
		{Type: eventlog.HookDisposed, CorrelationID: "h", Dedup: "d"},
		{Type: eventlog.WaitCreated, CorrelationID: "w", Payload: json.RawMessage(`{"durationMs":5}`)},
		{Type: eventlog.WaitCompleted, CorrelationID: "w", Dedup: "x"},
	} {
		if _, err := toPackage(testRun, "", d); !errors.Is(err, eventlog.ErrRefused) {
			t.Errorf("toPackage(%s %+v) = %v, want an error matching %v", d.Type, d, err, eventlog.ErrRefused)
		}
	}
}

// TestHookConflictEvent: the package's hook_conflict comes back with the
// token unscoped.
func TestHookConflictEvent(t *testing.T) {
	pe := PackageEvent{EventType: "hook_conflict", CorrelationID: "hook_2", RunID: testRun,
		EventID:   "wevt_01M8XMFXHNDH8J2K8VFNDYBHZW",
		EventData: json.RawMessage(`{"token":"` + testRun + `:tok","conflictingRunId":"` + testRun + `"}`)}
	e, err := fromPackage(testRun, pe)
	if err != nil {
		t.Fatal(err)
	}
	if e.Type != eventlog.HookConflict || e.Token != "tok" || e.CorrelationID != "hook_2" {
		t.Fatalf("hook_conflict read as %+v", e)
	}
}

// TestClassify: the package's errors become stormctl's by what they mean.
func TestClassify(t *testing.T) {
	d := &eventlog.Draft{Type: eventlog.StepCompleted, CorrelationID: "s"}
	tests := []struct {
		err  error
		want error // nil: none of the classes
	}{
		{&sidecar.Error{Name: "EntityConflictError", Message: `Cannot modify step in terminal state "completed"`}, eventlog.ErrConflict},
		{&sidecar.Error{Name: "HookNotFoundError", Message: "hook h"}, eventlog.ErrRefused},
		{&sidecar.Error{Name: "WorkflowWorldError", Message: `Step "s" not found`}, eventlog.ErrRefused},
		{&sidecar.Error{Name: "ZodError", Message: "invalid"}, eventlog.ErrRefused},
		{&sidecar.Error{Name: "Error", Code: "57P01", Message: "terminating connection due to administrator command"}, eventlog.ErrUnavailable},
		{&sidecar.Error{Name: "Error", Code: "ECONNREFUSED"}, eventlog.ErrUnavailable},
		// world-vercel 5.0's transport failure of a v4 events request.
		{&sidecar.Error{Name: "StreamError", Code: "STREAM_ERROR", Message: "POST createEventBatch transport failure after 3450ms (UND_ERR_REQ_RETRY)"}, eventlog.ErrUnavailable},
		{sidecar.ErrExited, eventlog.ErrUnavailable},
		{&sidecar.Error{Name: "TypeError", Message: "x is undefined"}, nil},
	}
	for _, tt := range tests {
		got := Classify("create", testRun, d, tt.err)
		for _, class := range []error{eventlog.ErrConflict, eventlog.ErrRefused, eventlog.ErrUnavailable} {
			if errors.Is(got, class) != (class == tt.want) {
				t.Errorf("Classify(%v) = %v: matches %v is %v", tt.err, got, class, errors.Is(got, class))
			}
		}
	}
	var ce *eventlog.ConflictError
	if err := Classify("create", testRun, d, &sidecar.Error{Name: "EntityConflictError"}); !errors.As(err, &ce) || ce.Key != "step_completed/s" {
		t.Errorf("a conflict names key %+v, want step_completed/s", ce)
	}
}

// TestWorkflowName: a run's run_created names its workflow to the package
// as stormctl/<scenario>, which ScenarioOf reads back; a run that names
// none is bare "stormctl", and no other name maps to a scenario.
func TestWorkflowName(t *testing.T) {
	pe, err := toPackage(testRun, "step-storm", eventlog.Draft{Type: eventlog.RunCreated, Payload: json.RawMessage(`{}`)})
	if err != nil {
		t.Fatal(err)
	}
	var data struct {
		Deployment string `json:"deploymentId"`
		Workflow   string `json:"workflowName"`
	}
	if err := json.Unmarshal(pe.EventData, &data); err != nil || data.Deployment != "stormctl" || data.Workflow != "stormctl/step-storm" {
		t.Errorf("eventData %s (%v)", pe.EventData, err)
	}
	for _, tt := range []struct {
		name, scenario string
		ok             bool
	}{
		{WorkflowName("step-storm"), "step-storm", true},
		{WorkflowName(""), "", false},
		{"stormctl/", "", false},
		{"workflow//./workflows/step-storm//stepStorm", "", false},
	} {
		if s, ok := ScenarioOf(tt.name); s != tt.scenario || ok != tt.ok {
			t.Errorf("ScenarioOf(%q) = %q, %v; want %q, %v", tt.name, s, ok, tt.scenario, tt.ok)
		}
	}
}
