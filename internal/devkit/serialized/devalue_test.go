package serialized

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"encoding/json"
	"errors"
	"testing"
)

// TestDecode: values the runtime serialized (captured from a real
// control run of @workflow/core 4.8.9 on world-local 4.4.1) decode to the
// plain JSON the scenario checks read; other values pass as they are.
func TestDecode(t *testing.T) {
	t.Parallel()
	bin := func(s string) json.RawMessage {
		b, _ := json.Marshal(map[string]string{"__type": "Uint8Array", "data": base64.StdEncoding.EncodeToString([]byte(s))})
		return b
	}
	for _, tc := range []struct {
		name string
		in   json.RawMessage
		want string
	}{
		{"a run's arguments", bin(`devl[[1],{"iterations":2,"scale":3,"token":4},8,1,"wrun_X"]`), `[{"iterations":8,"scale":1,"token":"wrun_X"}]`},
		{"a control ledger", bin(`devl[[1,5],{"i":2,"path":3,"sync":4},0,"timer","sync(r=0,b=0)",{"i":6,"path":3,"sync":7},1,"sync(r=1,b=0)"]`),
			`[{"i":0,"path":"timer","sync":"sync(r=0,b=0)"},{"i":1,"path":"timer","sync":"sync(r=1,b=0)"}]`},
		{"undefined fields dropped, sentinels null", bin(`devl[{"a":1,"b":-1,"c":-3},[-4,2]," x"]`), `{"a":[null," x"],"c":null}`},
		{"tagged values", bin(`devl[[1,2,3],["Date","2026-12-04T00:00:00.000Z"],["Set",4],["null","k",4],7]`), `["2026-12-04T00:00:00.000Z",[7],{"k":7}]`},
		{"a top-level undefined is its bare sentinel", bin(`devl-1`), `null`},
		{"a top-level NaN is its bare sentinel", bin(`devl-3`), `null`},
		{"gzip of devalue (5.0)", bin(gz(`devl[[1],7]`)), `[7]`},
		{"a custom type is what its reducer made", bin(`devl[["Error",1],{"name":2,"message":3},"TypeError","boom"]`), `{"message":"boom","name":"TypeError"}`},
		{"plain JSON passes", json.RawMessage(`{"output":3}`), `{"output":3}`},
		{"other bytes pass", bin(`cbor...`), string(bin(`cbor...`))},
	} {
		got, err := Decode(tc.in)
		if err != nil || string(got) != tc.want {
			t.Errorf("%s: Decode = %s, %v; want %s", tc.name, got, err, tc.want)
		}
	}
	for _, bad := range []string{`devl{`, `devl[[5]]`, `devl[[0]]`, `devl5`} {
		if _, err := Decode(bin(bad)); !errors.Is(err, errDevalue) {
			t.Errorf("Decode(%q) = %v, want errDevalue", bad, err)
		}
	}
}

// gz is "gzip" and s gzipped, as 5.0 stores a large value.
func gz(s string) string {
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	zw.Write([]byte(s))
	zw.Close()
	return "gzip" + b.String()
}

// FuzzDecode: no input makes the decoder panic or loop.
func FuzzDecode(f *testing.F) {
	f.Add([]byte(`[[1],{"a":2},3,"x"]`))
	f.Add([]byte(`[["Map",1,1]]`))
	f.Fuzz(func(t *testing.T, b []byte) {
		_, _ = unflatten(b)
	})
}
