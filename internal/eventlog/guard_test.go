package eventlog

import (
	"encoding/json"
	"testing"
)

// TestGuardNoneIsOneThing: "" and "none" both read as GuardNone, which a Run
// leaves out of its JSON and a struct that always shows its guard writes as
// "none", as storm.json's knobs did before the type existed.
func TestGuardNoneIsOneThing(t *testing.T) {
	t.Parallel()
	for _, g := range Guards() {
		if got, err := ParseGuard(g.String()); err != nil || got != g {
			t.Errorf("ParseGuard(%q) = %q, %v", g.String(), got, err)
		}
	}
	if _, err := ParseGuard(""); err == nil {
		t.Error(`ParseGuard("") accepted the empty name; a person writes none`)
	}
	tests := []struct {
		name string
		v    any
		want string
	}{
		{"unguarded run", Run{ID: "r", Scheme: SchemeSeq}, `{"runId":"r","scheme":"seq"}`},
		{"guarded run", Run{ID: "r", Scheme: SchemeULID, Guard: GuardCountIndex}, `{"runId":"r","scheme":"ulid","guard":"count-index"}`},
		{"shown none", struct {
			Guard Guard `json:"guard"`
		}{}, `{"guard":"none"}`},
	}
	for _, tt := range tests {
		b, err := json.Marshal(tt.v)
		if err != nil || string(b) != tt.want {
			t.Errorf("%s: json %s, %v; want %s", tt.name, b, err, tt.want)
		}
	}
	for in, want := range map[string]Guard{`{}`: GuardNone, `{"guard":""}`: GuardNone, `{"guard":"none"}`: GuardNone,
		`{"guard":"count-index"}`: GuardCountIndex, `{"guard":"lock"}`: "lock"} {
		var r Run
		if err := json.Unmarshal([]byte(in), &r); err != nil || r.Guard != want {
			t.Errorf("unmarshal %s: guard %q, %v; want %q", in, r.Guard, err, want)
		}
	}
}
