package pipeline

import (
	"encoding/json"
	"testing"

	"github.com/stormctl/stormctl/internal/eventlog"
)

// TestSpecVersion: a run's contract version is the one its runtime stamped
// on its run_created, none where no runtime stamps one.
func TestSpecVersion(t *testing.T) {
	created := func(pkg string) eventlog.Event {
		return eventlog.Event{ID: "evnt_1", Type: eventlog.RunCreated, Package: json.RawMessage(pkg)}
	}
	started := eventlog.Event{ID: "evnt_2", Type: eventlog.RunStarted, Package: json.RawMessage(`{"specVersion":9}`)}
	for _, tc := range []struct {
		name  string
		final []eventlog.Event
		want  int // 0: none
	}{
		{"stamped", []eventlog.Event{created(`{"eventType":"run_created","specVersion":3}`), started}, 3},
		{"the 5.0 line", []eventlog.Event{created(`{"specVersion":7}`)}, 7},
		{"not stamped", []eventlog.Event{created(`{"eventType":"run_created"}`), started}, 0},
		{"the model's world: no package copy", []eventlog.Event{{ID: "evnt_1", Type: eventlog.RunCreated}}, 0},
		{"no run_created", []eventlog.Event{started}, 0},
	} {
		got := specVersion(tc.final)
		switch {
		case tc.want == 0 && got != nil:
			t.Errorf("%s: spec %d, want none", tc.name, *got)
		case tc.want != 0 && (got == nil || *got != tc.want):
			t.Errorf("%s: spec %v, want %d", tc.name, got, tc.want)
		}
	}
}
