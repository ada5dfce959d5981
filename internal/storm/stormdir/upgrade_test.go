package stormdir

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/stormctl/stormctl/internal/history"
	"github.com/stormctl/stormctl/reports"
)

// TestUpgrade: schema 1's camelCase keys read as schema 2's snake_case
// ones; values, payloads (a workflow's own JSON) and white space stay as
// they were; other schemas are not touched.
func TestUpgrade(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		schema int
		in     string
		want   string
	}{
		{"a run line", 1,
			`{"runId":"wrun_a","durationMs":5,"stats":{"gaveUp":1,"lastStoreOK":"2026-01-01T00:00:00Z"},"verdicts":[{"expectedSeq":3,"actualSeq":4}]}`,
			`{"run_id":"wrun_a","duration_ms":5,"stats":{"gave_up":1,"last_store_ok":"2026-01-01T00:00:00Z"},"verdicts":[{"expected_seq":3,"actual_seq":4}]}`},
		{"an op, its payload left alone", 1,
			`{"op":"append_fenced","runId":"r","wrote":[{"type":"wait_created","mintedAt":"x","payload":{"durationMs":5,"runId":"keep"}}],"read":{"setHash":7}}`,
			`{"op":"append_fenced","run_id":"r","wrote":[{"type":"wait_created","minted_at":"x","payload":{"durationMs":5,"runId":"keep"}}],"read":{"set_hash":7}}`},
		{"scalar and string payloads", 1,
			`{"payload":"runId","runId":"a"} {"payload": 12 ,"errText":"runId"}`,
			`{"payload":"runId","run_id":"a"} {"payload": 12 ,"err_text":"runId"}`},
		{"a key's name as a value", 1, `{"outcome":"runId"}`, `{"outcome":"runId"}`},
		{"storm.json, its lines kept", 1,
			"{\n  \"config\": {\n    \"timeScale\": 0.2,\n    \"runsInFlight\" :0\n  },\n  \"pageSizes\": {\"local/ulid\": 100}\n}",
			"{\n  \"config\": {\n    \"time_scale\": 0.2,\n    \"runs_in_flight\" :0\n  },\n  \"page_sizes\": {\"local/ulid\": 100}\n}"},
		{"escaped quotes in strings", 1, `{"detail":"a \"runId\": b","runId":"x\\"}`, `{"detail":"a \"runId\": b","run_id":"x\\"}`},
		{"schema 2 untouched", 2, `{"runId":"a"}`, `{"runId":"a"}`},
		{"an unknown schema untouched", 7, `{"runId":"a"}`, `{"runId":"a"}`},
		{"cut off", 1, `{"runId":"a","ti`, `{"run_id":"a","ti`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := string(upgrade(tc.schema, []byte(tc.in))); got != tc.want {
				t.Errorf("upgrade(%d, %s)\n= %s\nwant %s", tc.schema, tc.in, got, tc.want)
			}
		})
	}
}

// jsonKeys lists the JSON names of every field of t and of the structs
// it holds (its fields', slices', maps' and pointers'), except values that
// write themselves (time.Time, json.RawMessage, text marshalers).
func jsonKeys(t reflect.Type, seen map[reflect.Type]bool, out map[string]bool) {
	for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Map || t.Kind() == reflect.Array {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct || seen[t] {
		return
	}
	seen[t] = true
	if t.Implements(reflect.TypeFor[json.Marshaler]()) || reflect.PointerTo(t).Implements(reflect.TypeFor[json.Unmarshaler]()) ||
		reflect.PointerTo(t).Implements(reflect.TypeFor[interface{ UnmarshalText([]byte) error }]()) {
		// Cell writes itself, its own fields plus one: still walk them.
		if t != reflect.TypeFor[reports.Cell]() {
			return
		}
	}
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" || !f.IsExported() {
			continue
		}
		if name != "" {
			out[name] = true
		} else if !f.Anonymous {
			out[f.Name] = true
		}
		jsonKeys(f.Type, seen, out)
	}
}

// TestArtifactKeysAreSnakeCase: every key storm.json, runs.jsonl,
// history.jsonl and summary.json are written with is snake_case, and every
// schema 1 key upgrade renames is one of them, so a schema 1 artifact reads
// whole as this build's.
func TestArtifactKeysAreSnakeCase(t *testing.T) {
	t.Parallel()
	keys := map[string]bool{}
	seen := map[reflect.Type]bool{}
	for _, v := range []any{Meta{}, reports.RunRecord{}, history.Op{}, reports.Summary{}} {
		jsonKeys(reflect.TypeOf(v), seen, keys)
	}
	for k := range keys {
		if strings.ToLower(k) != k {
			t.Errorf("artifact key %q is not snake_case", k)
		}
	}
	for from, to := range camelKeys {
		if !keys[to] {
			t.Errorf("schema 1 key %q is renamed %q, which no artifact has", from, to)
		}
	}
	for _, want := range []string{"run_id", "minted_at", "time_scale", "non_prefix_reads", "true_positives"} {
		if !keys[want] {
			t.Errorf("no artifact key %q: the walk missed a type", want)
		}
	}
}

// FuzzUpgrade: upgrading never fails nor panics, keeps a document's lines
// where they were, and turns JSON into JSON.
func FuzzUpgrade(f *testing.F) {
	for _, seed := range []string{
		`{"runId":"a","wrote":[{"mintedAt":"b","payload":{"runId":1}}]}`,
		"{\n\"timeScale\": 1,\n\"payload\": [1, {\"a\": \"}\"}]\n}",
		`{"payload"`, `"runId":`, `{"a":"\`, `[{"payload":}]`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		got := upgrade(camelSchema, b)
		if n, m := bytes.Count(b, []byte("\n")), bytes.Count(got, []byte("\n")); n != m {
			t.Fatalf("upgrade turned %d lines into %d:\n%q\n%q", n+1, m+1, b, got)
		}
		if json.Valid(b) && !json.Valid(got) {
			t.Fatalf("upgrade turned JSON %q into %q", b, got)
		}
	})
}
