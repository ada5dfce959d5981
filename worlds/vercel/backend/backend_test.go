package backend

import (
	"bytes"
	"net/http"
	"slices"
	"testing"
	"time"
)

// TestFrames: frames round-trip, and a frame cut short is refused.
func TestFrames(t *testing.T) {
	b, err := AppendFrame(nil, map[string]any{"eventType": "step_created", "specVersion": 2}, []byte("payload"))
	if err != nil {
		t.Fatal(err)
	}
	if b, err = AppendFrame(b, map[string]any{"_end": 1}, nil); err != nil {
		t.Fatal(err)
	}
	fs, err := ReadFrames(b)
	if err != nil || len(fs) != 2 || !bytes.Equal(fs[0].Body, []byte("payload")) || len(fs[1].Body) != 0 {
		t.Fatalf("ReadFrames = %v, %v", fs, err)
	}
	m, unknown, err := DecodeMeta(fs[0].Meta)
	if err != nil || m.EventType != "step_created" || m.SpecVersion != 2 || len(unknown) != 0 {
		t.Fatalf("DecodeMeta = %+v, %v, %v", m, unknown, err)
	}
	for cut := 1; cut < len(b); cut += 7 {
		if _, err := ReadFrames(b[:cut]); err == nil && cut != len(b)-(4+len(fs[1].Meta)+4) {
			t.Errorf("ReadFrames of %d of %d bytes: no error", cut, len(b))
		}
	}
}

// TestDecodeMetaUnknown: a meta field the server does not read is named.
func TestDecodeMetaUnknown(t *testing.T) {
	b, err := Marshal(map[string]any{"eventType": "run_created", "specVersion": 2, "attributes": map[string]any{"k": 1}, "zeta": true})
	if err != nil {
		t.Fatal(err)
	}
	_, unknown, err := DecodeMeta(b)
	if err != nil || !slices.Equal(unknown, []string{"attributes", "zeta"}) {
		t.Fatalf("DecodeMeta: unknown %v, err %v; want [attributes zeta]", unknown, err)
	}
}

// TestDecide: the backend's answers to events on a run's state.
func TestDecide(t *testing.T) {
	ev := func(typ, corr string, at time.Time) Event {
		return Event{ID: "wevt_" + typ + corr, RunID: "wrun_1", CreatedAt: at, Stored: Stored{Meta: Meta{EventType: typ, CorrelationID: corr, HookToken: "tok"}}}
	}
	now := time.Now()
	later := now.Add(time.Hour)
	retrying := ev("step_retrying", "s2", now)
	retrying.Meta.RetryAfter = &later
	base := []Event{ev("run_created", "", now), ev("run_started", "", now), ev("step_created", "s1", now), ev("step_started", "s1", now),
		ev("step_completed", "s1", now), ev("step_created", "s2", now), retrying, ev("hook_created", "h1", now), ev("wait_created", "w1", now)}
	ended := append(slices.Clone(base), ev("run_completed", "", now))
	disposed := append(slices.Clone(base), ev("hook_disposed", "h1", now))
	tests := []struct {
		name   string
		log    []Event
		typ    string
		corr   string
		status int
		keys   []string
	}{
		{"run_created again", base, "run_created", "", http.StatusConflict, nil},
		{"run_started on a running run: the first answered", base, "run_started", "", 0, nil},
		{"step_created again", base, "step_created", "s1", http.StatusConflict, nil},
		{"step_created", base, "step_created", "s3", 0, []string{"step/s3"}},
		{"step_started of no step", base, "step_started", "nope", http.StatusNotFound, nil},
		{"step_started of a completed step", base, "step_started", "s1", http.StatusConflict, nil},
		{"step_started before retryAfter", base, "step_started", "s2", http.StatusTooEarly, nil},
		{"hook_created with a token held", base, "hook_created", "h2", 0, nil},
		{"hook_received", base, "hook_received", "h1", 0, nil},
		{"hook_received of a disposed hook", disposed, "hook_received", "h1", http.StatusNotFound, nil},
		{"hook_created with a token released", disposed, "hook_created", "h2", 0, []string{"hook/h2", "token/tok/1"}},
		{"wait_completed", base, "wait_completed", "w1", 0, []string{"wait/w1/completed"}},
		{"run_completed", base, "run_completed", "", 0, []string{"run/terminal"}},
		{"run_failed on a finished run", ended, "run_failed", "", http.StatusConflict, nil},
		{"run_started on a finished run", ended, "run_started", "", http.StatusGone, nil},
		{"step_created on a finished run", ended, "step_created", "s9", http.StatusConflict, nil},
		{"hook_received on a finished run", ended, "hook_received", "h1", http.StatusNotFound, nil},
		{"step_created before run_created (as world-local)", nil, "step_created", "s1", 0, []string{"step/s1"}},
	}
	for _, tt := range tests {
		d := fold("wrun_1", tt.log).decide(Meta{EventType: tt.typ, CorrelationID: tt.corr, HookToken: "tok"}, now)
		if d.status != tt.status || (tt.status == 0 && !slices.Equal(d.keys, tt.keys)) {
			t.Errorf("%s: status %d keys %v (%s), want %d %v", tt.name, d.status, d.keys, d.message, tt.status, tt.keys)
		}
	}
	if d := fold("wrun_1", base).decide(Meta{EventType: "hook_created", CorrelationID: "h2", HookToken: "tok"}, now); !d.hookConflict {
		t.Errorf("hook_created with a token held: %+v, want a hook_conflict", d)
	}
}
