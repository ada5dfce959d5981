package pglog

import (
	"encoding/hex"
	"encoding/json"
	"strings"
	"testing"
)

// TestToJSON: cbor-x's encodings of JavaScript values read back as the
// JSON JSON.stringify writes of them (keys sorted).
func TestToJSON(t *testing.T) {
	for _, tt := range []struct {
		name, hex, want string
	}{
		{"small uint", "17", `23`},
		{"uint16", "1906a4", `1700`},
		{"negative", "3863", `-100`},
		{"text", "6568656c6c6f", `"hello"`},
		{"text with a quote", "62225c", `"\"\\"`},
		{"bytes", "43010203", `"AQID"`},
		{"array", "83010203", `[1,2,3]`},
		{"indefinite array", "9f0102ff", `[1,2]`},
		{"map, keys sorted", "a2617a01616102", `{"a":2,"z":1}`},
		{"map16 (cbor-x's b9)", "b900016172f5", `{"r":true}`},
		{"indefinite map", "bf6161f4ff", `{"a":false}`},
		{"non-string key", "a10102", `{"1":2}`},
		{"null, undefined", "82f6f7", `[null,null]`},
		{"half float", "f93e00", `1.5`},
		{"single float", "fa47c35000", `100000`},
		{"double float", "fb3ff199999999999a", `1.1`},
		{"NaN is null", "f97e00", `null`},
		{"Date (tag 1, a double)", "c1fb41dac4c37d68e560", `"2026-12-04T19:01:09.639Z"`},
		{"Date (tag 1, an integer)", "c11a5f5e1000", `"2020-09-13T12:26:40.000Z"`},
		{"other tag: its content", "d8696161", `"a"`},
		{"indefinite text", "7f61616162ff", `"ab"`},
		{"a stored wait_created", "b9000168726573756d654174c1fb41dac4c37d68e560", `{"resumeAt":"2026-12-04T19:01:09.639Z"}`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			b, err := hex.DecodeString(tt.hex)
			if err != nil {
				t.Fatal(err)
			}
			got, err := toJSON(b)
			if err != nil {
				t.Fatalf("toJSON(%s): %v", tt.hex, err)
			}
			if string(got) != tt.want {
				t.Errorf("toJSON(%s) = %s, want %s", tt.hex, got, tt.want)
			}
		})
	}
}

// TestToJSONRefuses: damaged CBOR is an error, never a value.
func TestToJSONRefuses(t *testing.T) {
	for _, tt := range []struct{ name, hex, want string }{
		{"empty", "", "cut off"},
		{"cut text", "6568656c", "cut off"},
		{"cut map", "a2617a01", "cut off"},
		{"trailing bytes", "0101", "extraneous data"},
		{"reserved info", "1c", "invalid additional information"},
		{"lone break", "ff", "break"},
		{"indefinite chunk of another type", "7f4161ff", "wrong element type"},
		{"too deep", strings.Repeat("81", maxDepth+2) + "01", "exceeded max nested level"},
		{"huge length", "5bffffffffffffffff", "too large"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			b, _ := hex.DecodeString(tt.hex)
			if got, err := toJSON(b); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("toJSON(%s) = %s, %v; want an error with %q", tt.hex, got, err, tt.want)
			}
		})
	}
}

// FuzzToJSON: whatever a row holds, toJSON returns valid JSON or an
// error, without panicking.
func FuzzToJSON(f *testing.F) {
	for _, h := range []string{"b9000168726573756d654174c1fb41dac4c37d68e560", "9f0102ff", "bf6161f4ff", "7f61616162ff", "f93e00", "a10102"} {
		b, _ := hex.DecodeString(h)
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		out, err := toJSON(b)
		if err == nil && !json.Valid(out) {
			t.Errorf("toJSON(%x) = %s: not JSON", b, out)
		}
	})
}
