package replay

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"encoding/json"
	"testing"

	"github.com/stormctl/stormctl/internal/engines/rerun"
	"github.com/stormctl/stormctl/internal/eventlog"
	"github.com/stormctl/stormctl/internal/prodlog"
)

// storedValue is devalue text as the runtime stores a value: "devl" and the
// text, gzipped behind "gzip" when zipped (5.0), as the bytes the host
// writes ({"__type":"Uint8Array","data": base64}).
func storedValue(t *testing.T, devalue string, zipped bool) string {
	t.Helper()
	b := []byte("devl" + devalue)
	if zipped {
		var z bytes.Buffer
		zw := gzip.NewWriter(&z)
		if _, err := zw.Write(b); err != nil {
			t.Fatal(err)
		}
		if err := zw.Close(); err != nil {
			t.Fatal(err)
		}
		b = append([]byte("gzip"), z.Bytes()...)
	}
	out, err := json.Marshal(map[string]string{"__type": "Uint8Array", "data": base64.StdEncoding.EncodeToString(b)})
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

// TestPrefixesReadTheRecordedFailure: the run_failed of a stored log is
// read as the package stored it, in each shape the runtime writes: 4.x's
// {errorCode, error: {message, stack}} or a string error, and 5.0's error
// serialized (core's dehydrateRunError: devalue of the Error through its
// "Error" reducer, gzipped). A prefix whose replay raises that message
// again reproduces it.
func TestPrefixesReadTheRecordedFailure(t *testing.T) {
	const msg = "Workflow replay diverged 4 times after 3 recovery replays; latest divergent event was evnt_2. Last divergence: x"
	quoted, _ := json.Marshal(msg)
	errorValue := `[["Error",1],{"name":2,"message":3,"stack":4},"Error",` + string(quoted) + `,"Error: x\n    at host.mjs"]`
	for _, tt := range []struct {
		name, eventData string
	}{
		{"4.x: an error object", `{"errorCode":"CORRUPTED_EVENT_LOG","error":{"message":` + string(quoted) + `,"stack":"at host.mjs"}}`},
		{"4.x: a string error", `{"errorCode":"CORRUPTED_EVENT_LOG","error":` + string(quoted) + `}`},
		{"5.0: the Error serialized", `{"errorCode":"CORRUPTED_EVENT_LOG","error":` + storedValue(t, errorValue, false) + `}`},
		{"5.0: the Error serialized and gzipped", `{"errorCode":"CORRUPTED_EVENT_LOG","error":` + storedValue(t, errorValue, true) + `}`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			pkg := func(id, typ, data string) json.RawMessage {
				s := `{"eventId":"` + id + `","runId":"wrun_dk","eventType":"` + typ + `","createdAt":"2026-01-01T00:00:00.001Z"`
				if data != "" {
					s += `,"eventData":` + data
				}
				return json.RawMessage(s + "}")
			}
			l := StoredLog{Scenario: "step-storm", Log: prodlog.Log{RunID: "wrun_dk", Source: "test", Events: []eventlog.Event{
				{RunID: "wrun_dk", ID: "evnt_1", Type: eventlog.RunCreated, Package: pkg("evnt_1", "run_created", `{"input":{"__type":"Uint8Array","data":"AA=="}}`)},
				{RunID: "wrun_dk", ID: "evnt_2", Type: runStarted, Package: pkg("evnt_2", "run_started", "")},
				{RunID: "wrun_dk", ID: "evnt_3", Type: eventlog.RunFailed, Package: pkg("evnt_3", "run_failed", tt.eventData)},
			}}}
			l.Runtime = &fakeRuntime{result: rerun.RuntimeResult{Status: 200, Divergence: &rerun.RuntimeDivergence{Message: msg, Terminal: true},
				Failed: &rerun.RuntimeFailure{Code: "CORRUPTED_EVENT_LOG", Message: msg}}}
			rep, err := Prefixes(t.Context(), l, PrefixOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if r := rep.Recorded; r == nil || r.Code != "CORRUPTED_EVENT_LOG" || r.Message != msg || r.Event.ID != "evnt_3" {
				t.Errorf("recorded %+v; want evnt_3's CORRUPTED_EVENT_LOG: %s", r, msg)
			}
			if !rep.Reproduced || !rep.Explained() {
				t.Errorf("reproduced %v, explained %v; want the recorded divergence reproduced: %s", rep.Reproduced, rep.Explained(), rep.Summary)
			}
		})
	}
}
