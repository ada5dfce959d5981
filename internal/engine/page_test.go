package engine_test

import (
	"encoding/json"
	"slices"
	"sync"
	"testing"

	"github.com/stormctl/stormctl/internal/engine"
	"github.com/stormctl/stormctl/internal/eventlog"
)

// threeSteps calls steps a, b and c at once and awaits them all.
func threeSteps(c *engine.Ctx) (any, error) {
	_, err := c.Await(c.All(c.Step("a", 1), c.Step("b", 2), c.Step("c", 3)))
	return nil, err
}

// TestPagedLoad: the page knob sets how many events each List of an
// invocation's load asks for (0: the runtime's page size, 100 here), and a
// paged load that spans a concurrent commit sees what core 4.8.9's paged
// read of world-local sees (getWorkflowRunEvents in runtime/helpers.ts:
// each page lists the events whose ids sort after the last page's last id,
// until a page says there are no more). A commit landing between two pages
// is read when its id sorts after the cursor and missed for good when it
// was minted before the cursor's event (a cursor skip); a load that read
// the whole log in one page before the commit sees neither.
func TestPagedLoad(t *testing.T) {
	const run = "wrun_paged"
	for _, tc := range []struct {
		name   string
		page   int
		limits []int
		view   []string
	}{
		{"page 0: the runtime's page size, one page read before the commit", 0, []int{100},
			[]string{"evnt_000010", "evnt_000020", "evnt_000030", "evnt_000040", "evnt_000050"}},
		{"pages of 2: the later id read, the earlier skipped", 2, []int{2, 2, 2},
			[]string{"evnt_000010", "evnt_000020", "evnt_000030", "evnt_000040", "evnt_000050", "evnt_000070"}},
		{"pages of 4: the later id read, the earlier skipped", 4, []int{4, 4},
			[]string{"evnt_000010", "evnt_000020", "evnt_000030", "evnt_000040", "evnt_000050", "evnt_000070"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := &memWorld{}
			if _, err := w.Append(t.Context(), run, []eventlog.Draft{{Type: eventlog.RunCreated, Payload: json.RawMessage(`null`)}}); err != nil {
				t.Fatal(err)
			}
			detached(t, w, threeSteps, invokeT0, 0).Invoke(t.Context(), run, engine.Delivery{})
			log := w.log()
			if got := types(log); !slices.Equal(got, []eventlog.Type{eventlog.RunCreated, eventlog.StepCreated, eventlog.StepCreated, eventlog.StepCreated}) {
				t.Fatalf("the first invocation left %v, want run_created and three step_created", got)
			}
			a, b := log[1].CorrelationID, log[2].CorrelationID
			w.commitAt(run, "evnt_000050", eventlog.Draft{Type: eventlog.StepStarted, CorrelationID: a})

			w.mu.Lock()
			w.limits, w.reads = nil, nil
			var once sync.Once
			w.between = func(read int) {
				if read < 4 {
					return
				}
				// Once the reader is past the fourth event: a step worker's
				// step_started for b, minted before c's creation (id 35),
				// and a's completion, minted now (id 70), commit.
				once.Do(func() {
					w.commitAt(run, "evnt_000035", eventlog.Draft{Type: eventlog.StepStarted, CorrelationID: b})
					w.commitAt(run, "evnt_000070", eventlog.Draft{Type: eventlog.StepCompleted, CorrelationID: a,
						Payload: json.RawMessage(`{"result":"a"}`)})
				})
			}
			w.mu.Unlock()

			detached(t, w, threeSteps, invokeT0, tc.page).Invoke(t.Context(), run, engine.Delivery{})
			w.mu.Lock()
			limits, view := w.limits, slices.Concat(w.reads...)
			w.mu.Unlock()
			if !slices.Equal(limits, tc.limits) {
				t.Errorf("the load asked for pages of %v, want %v", limits, tc.limits)
			}
			if !slices.Equal(view, tc.view) {
				t.Errorf("the load read %v, want %v", view, tc.view)
			}
		})
	}
}
