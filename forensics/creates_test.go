package forensics

import (
	"reflect"
	"slices"
	"testing"

	"github.com/stormctl/stormctl/internal/eventlog"
)

func TestScanCreations(t *testing.T) {
	t.Parallel()
	ev := func(id string, typ eventlog.Type, corr, token string) eventlog.Event {
		return eventlog.Event{ID: id, Type: typ, CorrelationID: corr, Token: token}
	}
	step := func(id, corr string) eventlog.Event { return ev(id, eventlog.StepCreated, corr, "") }
	wait := func(id, corr string) eventlog.Event { return ev(id, eventlog.WaitCreated, corr, "") }
	hook := func(id, corr, token string) eventlog.Event { return ev(id, eventlog.HookCreated, corr, token) }
	tests := []struct {
		name  string
		evs   []eventlog.Event
		extra int
		dups  []Duplicate
	}{
		{name: "empty"},
		{name: "each once", evs: []eventlog.Event{step("a", "s1"), step("b", "s2"), wait("c", "w1"), hook("d", "h1", "t1")}},
		{name: "a fact repeated is no creation", evs: []eventlog.Event{step("a", "s1"), ev("b", eventlog.StepCompleted, "s1", ""), ev("c", eventlog.StepCompleted, "s1", "")}},
		{name: "a step and a wait of one correlation id", evs: []eventlog.Event{step("a", "x"), wait("b", "x")}},
		{name: "step twice", evs: []eventlog.Event{step("b", "s1"), step("a", "s1")}, extra: 1,
			dups: []Duplicate{{Key: "step_created/s1", Type: eventlog.StepCreated, CorrelationID: "s1", IDs: []string{"a", "b"}}}},
		{name: "wait three times", evs: []eventlog.Event{wait("a", "w1"), wait("b", "w1"), wait("c", "w1")}, extra: 2,
			dups: []Duplicate{{Key: "wait_created/w1", Type: eventlog.WaitCreated, CorrelationID: "w1", IDs: []string{"a", "b", "c"}}}},
		{name: "hook twice by correlation id and token: one extra creation", evs: []eventlog.Event{hook("a", "h1", "t1"), hook("b", "h1", "t1")}, extra: 1,
			dups: []Duplicate{
				{Key: "hook_created/h1", Type: eventlog.HookCreated, CorrelationID: "h1", IDs: []string{"a", "b"}},
				{Key: "hook_token/t1", Type: eventlog.HookCreated, CorrelationID: "h1", Token: "t1", IDs: []string{"a", "b"}},
			}},
		{name: "two hooks, one token", evs: []eventlog.Event{hook("a", "h1", "t1"), hook("b", "h2", "t1")}, extra: 1,
			dups: []Duplicate{{Key: "hook_token/t1", Type: eventlog.HookCreated, CorrelationID: "h1", Token: "t1", IDs: []string{"a", "b"}}}},
		{name: "a chain of shared keys is one entity", evs: []eventlog.Event{hook("a", "h1", "t1"), hook("b", "h2", "t2"), hook("c", "h2", "t1")}, extra: 2,
			dups: []Duplicate{
				{Key: "hook_created/h2", Type: eventlog.HookCreated, CorrelationID: "h2", IDs: []string{"b", "c"}},
				{Key: "hook_token/t1", Type: eventlog.HookCreated, CorrelationID: "h1", Token: "t1", IDs: []string{"a", "c"}},
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			// The scan must not depend on the log's order.
			evs := slices.Clone(tt.evs)
			for range max(1, len(evs)) {
				got := ScanCreations(evs)
				if got.Extra != tt.extra || !reflect.DeepEqual(got.Duplicates, tt.dups) {
					t.Fatalf("ScanCreations(%v) = %+v, want extra %d, duplicates %+v", evs, got, tt.extra, tt.dups)
				}
				if len(evs) > 0 {
					evs = append(evs[1:], evs[0])
				}
			}
		})
	}
}
