package replay

import (
	"bytes"
	"encoding/json"
	"reflect"
	"time"

	"github.com/stormctl/stormctl/internal/eventlog"
)

// samePayload says how draft d differs from the recorded event e it
// should have written ("" when it does not): its token, dedup value or
// payload (compared as JSON values, timestamps as instants to the
// millisecond: a real world package stores them so, "…01.49Z" for
// "…01.490278356Z"). A wait_created's resumeAt is the writer's clock plus
// the wait's duration, so only its duration is compared, when the world
// stored it (a package that keeps only resumeAt leaves nothing to compare).
func samePayload(e eventlog.Event, d eventlog.Draft) string {
	switch {
	case e.Token != d.Token:
		return "token " + d.Token + ", recorded " + e.Token
	case e.Dedup != d.Dedup:
		return "dedup " + d.Dedup + ", recorded " + e.Dedup
	}
	a, b := instants(jsonValue(e.Payload)), instants(jsonValue(d.Payload))
	if e.Type == eventlog.WaitCreated {
		a, b = withoutKey(a, "resumeAt"), withoutKey(b, "resumeAt")
		if m, ok := a.(map[string]any); ok {
			if _, stored := m["durationMs"]; !stored {
				b = withoutKey(b, "durationMs")
			}
		}
	}
	if reflect.DeepEqual(a, b) {
		return ""
	}
	return "payload " + compact(d.Payload) + ", recorded " + compact(e.Payload)
}

// jsonValue decodes a payload; one that is not JSON is its bytes.
func jsonValue(raw json.RawMessage) any {
	if len(bytes.TrimSpace(raw)) == 0 {
		return nil
	}
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return string(raw)
	}
	return v
}

// instants replaces every string of a decoded value that is an RFC 3339
// time with that instant truncated to the millisecond, as a string.
func instants(v any) any {
	switch x := v.(type) {
	case string:
		if t, err := time.Parse(time.RFC3339Nano, x); err == nil {
			return t.UTC().Truncate(time.Millisecond).Format(time.RFC3339Nano)
		}
		return x
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, y := range x {
			out[k] = instants(y)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, y := range x {
			out[i] = instants(y)
		}
		return out
	}
	return v
}

// withoutKey drops key from a decoded object.
func withoutKey(v any, key string) any {
	m, ok := v.(map[string]any)
	if !ok {
		return v
	}
	out := make(map[string]any, len(m))
	for k, x := range m {
		if k != key {
			out[k] = x
		}
	}
	return out
}

// compact is a payload on one line.
func compact(raw json.RawMessage) string {
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return string(raw)
	}
	return b.String()
}
