package scenarios

import (
	"context"
	"slices"
	"testing"

	"github.com/stormctl/stormctl/internal/eventlog"
)

// fakeLog answers Log with its events and, when typed, LogOf too.
type fakeLog struct {
	Hooks
	events []eventlog.Event
}

func (f *fakeLog) Log(context.Context, string) ([]eventlog.Event, error) {
	return slices.Clone(f.events), nil
}

type typedLog struct{ *fakeLog }

func (t typedLog) LogOf(_ context.Context, _ string, types []eventlog.Type) ([]eventlog.Event, error) {
	return slices.DeleteFunc(slices.Clone(t.events), func(e eventlog.Event) bool { return !slices.Contains(types, e.Type) }), nil
}

// TestOnlyGivesTheDriverItsTypes checks that a driver's log holds the
// scenario's Reads only, in log order, whether the engine filters (a
// TypedLogger is asked for them) or Only does; and that every scenario
// whose driver reads the log declares what it reads.
func TestOnlyGivesTheDriverItsTypes(t *testing.T) {
	t.Parallel()
	log := []eventlog.Event{
		{ID: "1", Type: eventlog.RunCreated}, {ID: "2", Type: eventlog.HookCreated}, {ID: "3", Type: eventlog.StepCreated},
		{ID: "4", Type: eventlog.WaitCreated}, {ID: "5", Type: eventlog.HookCreated}, {ID: "6", Type: eventlog.WaitCompleted},
	}
	plain := &fakeLog{events: log}
	typed := typedLog{&fakeLog{events: log}}
	for name, h := range map[string]Hooks{"filtered by Only": plain, "filtered by the engine": typed} {
		got, err := Only(h, []eventlog.Type{eventlog.HookCreated, eventlog.WaitCompleted}).Log(t.Context(), "run")
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, e := range got {
			ids = append(ids, e.ID)
		}
		if !slices.Equal(ids, []string{"2", "5", "6"}) {
			t.Errorf("%s: %v, want the hook_created and wait_completed events in log order", name, ids)
		}
	}
	for _, sc := range Registry() {
		switch sc.Name {
		case "hook-storm", "blocked-branch", "control":
			if len(sc.Reads) == 0 {
				t.Errorf("%s's driver reads the log but declares no Reads", sc.Name)
			}
		}
	}
}
