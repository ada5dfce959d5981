package engine_test

import (
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/stormctl/stormctl/internal/engine"
	"github.com/stormctl/stormctl/internal/eventlog"
)

// sleepOnce sleeps a second.
func sleepOnce(c *engine.Ctx) (any, error) {
	_, err := c.Await(c.Sleep(time.Second))
	return nil, err
}

// TestDuplicatedWaitCompletion: a wait a world created twice is completed
// as core 4.8.9's invocation completes it (runtime.ts, waitsToComplete):
// one wait_completed per due wait_created, in log order, each carrying its
// own resumeAt, so the first creation's commits and the second is a
// conflict. Its replay then consumes both creations, the consumer expecting
// the last one's resumeAt (sleep.ts): the run diverges exactly when the two
// creations disagree, as on the real runtime.
func TestDuplicatedWaitCompletion(t *testing.T) {
	const run = "wrun_dupwait"
	for _, tc := range []struct {
		name     string
		second   time.Duration // the duplicate's resumeAt, after invokeT0
		diverges bool
	}{
		{"both creations resume at one time", time.Second, false},
		{"the duplicate resumes later", 1500 * time.Millisecond, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := &memWorld{}
			if _, err := w.Append(t.Context(), run, []eventlog.Draft{{Type: eventlog.RunCreated, Payload: json.RawMessage(`null`)}}); err != nil {
				t.Fatal(err)
			}
			detached(t, w, sleepOnce, invokeT0, 0).Invoke(t.Context(), run, engine.Delivery{})
			log := w.log()
			if got := types(log); !slices.Equal(got, []eventlog.Type{eventlog.RunCreated, eventlog.WaitCreated}) {
				t.Fatalf("the first invocation left %v, want run_created, wait_created", got)
			}
			// Another invocation, whose clock stood later, created the wait
			// again: the world let both through.
			dup := log[1].Draft()
			dup.Payload = mustJSONT(t, map[string]any{"durationMs": 1000, "resumeAt": invokeT0.Add(tc.second)})
			if _, err := w.Append(t.Context(), run, []eventlog.Draft{dup}); err != nil {
				t.Fatal(err)
			}

			outs := detached(t, w, sleepOnce, invokeT0.Add(3*time.Second), 0).Invoke(t.Context(), run, engine.Delivery{})
			var completions []time.Time
			for _, e := range w.log() {
				if e.Type == eventlog.WaitCompleted {
					var p struct {
						ResumeAt time.Time `json:"resumeAt"`
					}
					if err := json.Unmarshal(e.Payload, &p); err != nil {
						t.Fatal(err)
					}
					completions = append(completions, p.ResumeAt)
				}
			}
			if len(completions) != 1 || !completions[0].Equal(invokeT0.Add(time.Second)) {
				t.Fatalf("wait_completed carries %v, want one, for the first creation's resumeAt %v", completions, invokeT0.Add(time.Second))
			}
			if len(outs) != 1 {
				t.Fatalf("%d outcomes, want 1", len(outs))
			}
			d := outs[0].Divergence
			switch {
			case tc.diverges && (d == nil || d.Kind != "wait_resume_at"):
				t.Fatalf("divergence %v, want the completion's resumeAt refused", d)
			case !tc.diverges && d != nil:
				t.Fatalf("divergence %v, want none", d)
			case !tc.diverges && !slices.ContainsFunc(outs[0].Decisions, func(d eventlog.Draft) bool { return d.Type == eventlog.RunCompleted }):
				t.Fatalf("decisions %v, want run_completed", outs[0].Decisions)
			}
		})
	}
}

func mustJSONT(t *testing.T, v any) json.RawMessage {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
