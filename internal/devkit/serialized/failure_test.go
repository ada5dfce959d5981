package serialized

import (
	"encoding/base64"
	"encoding/json"
	"testing"

	"github.com/stormctl/stormctl/internal/engine"
)

// TestRunFailure: a run_failed's code and message, in each shape the
// runtime stores its error: 4.x's object or string, 5.0's serialized
// Error (core's "Error" reducer: ["Error", i] naming its fields), plain
// or gzipped.
func TestRunFailure(t *testing.T) {
	t.Parallel()
	bin := func(s string) string {
		b, _ := json.Marshal(map[string]string{"__type": "Uint8Array", "data": base64.StdEncoding.EncodeToString([]byte(s))})
		return string(b)
	}
	const msg = "Workflow replay diverged 4 times after 3 recovery replays; latest divergent event was evnt_9. Last divergence: x"
	errorValue := `devl[["Error",1],{"name":2,"message":3,"stack":4},"Error","` + msg + `","Error: x\n    at replay"]`
	for _, tc := range []struct {
		name, eventData string
		want            engine.RunFailure
	}{
		{"4.x error object", `{"errorCode":"CORRUPTED_EVENT_LOG","error":{"message":"` + msg + `","stack":"..."}}`,
			engine.RunFailure{Code: "CORRUPTED_EVENT_LOG", Message: msg}},
		{"a string error", `{"error":"boom"}`, engine.RunFailure{Message: "boom"}},
		{"the code on the error", `{"error":{"message":"boom","code":"USER_ERROR"}}`, engine.RunFailure{Code: "USER_ERROR", Message: "boom"}},
		{"5.0: the Error serialized", `{"errorCode":"CORRUPTED_EVENT_LOG","error":` + bin(errorValue) + `}`,
			engine.RunFailure{Code: "CORRUPTED_EVENT_LOG", Message: msg}},
		{"5.0: the Error serialized and gzipped", `{"errorCode":"CORRUPTED_EVENT_LOG","error":` + bin(gz(errorValue)) + `}`,
			engine.RunFailure{Code: "CORRUPTED_EVENT_LOG", Message: msg}},
		{"5.0: a thrown string serialized", `{"errorCode":"USER_ERROR","error":` + bin(`devl["boom"]`) + `}`,
			engine.RunFailure{Code: "USER_ERROR", Message: "boom"}},
		{"an error without a message is kept as stored", `{"errorCode":"USER_ERROR","error":{"name":"E"}}`,
			engine.RunFailure{Code: "USER_ERROR", Message: `{"name":"E"}`}},
		{"no error", `{"errorCode":"USER_ERROR"}`, engine.RunFailure{Code: "USER_ERROR"}},
		{"no eventData", ``, engine.RunFailure{}},
	} {
		if got := RunFailure(json.RawMessage(tc.eventData)); got != tc.want {
			t.Errorf("%s: RunFailure = %+v, want %+v", tc.name, got, tc.want)
		}
	}
}
