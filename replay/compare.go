package replay

import (
	"bytes"
	"encoding/json"
	"reflect"

	"github.com/stormctl/stormctl/eventlog"
)

// samePayload says how draft d differs from the recorded event e it
// should have written ("" when it does not): its token, dedup value or
// payload (compared as JSON values). A wait_created's resumeAt is the
// writer's clock plus the wait's duration, so only its duration is
// compared.
func samePayload(e eventlog.Event, d eventlog.Draft) string {
	switch {
	case e.Token != d.Token:
		return "token " + d.Token + ", recorded " + e.Token
	case e.Dedup != d.Dedup:
		return "dedup " + d.Dedup + ", recorded " + e.Dedup
	}
	a, b := jsonValue(e.Payload), jsonValue(d.Payload)
	if e.Type == eventlog.WaitCreated {
		a, b = withoutKey(a, "resumeAt"), withoutKey(b, "resumeAt")
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
