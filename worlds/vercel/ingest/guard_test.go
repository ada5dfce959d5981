package ingest_test

import (
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/stormctl/stormctl/internal/eventlog"
	"github.com/stormctl/stormctl/internal/history"
	"github.com/stormctl/stormctl/worlds/vercel/ingest"
	"github.com/stormctl/stormctl/worlds/worldtest"
)

// guardStep is one fenced append on a guarded run and the guard's verdict.
type guardStep struct {
	name      string
	before    func(e *env, run string) // optional: what happens first
	expected  int64
	watermark string
	status    int // 201 or 412
	want      history.GuardCounts
}

// TestCountGuard walks the legacy guard through its verdicts on one run
// per scheme. The run starts with 3 facts, so Redis counts 3.
func TestCountGuard(t *testing.T) {
	steps := []guardStep{
		{name: "current count passes", expected: 3, status: 201,
			want: history.GuardCounts{Evaluated: 1, Passed: 1}},
		{name: "stale count is rejected", expected: 2, status: 412,
			want: history.GuardCounts{Evaluated: 2, Passed: 1, Rejected: 1}},
		{name: "a claim beyond the index is indeterminate", expected: 9, status: 201,
			want: history.GuardCounts{Evaluated: 3, Passed: 1, Rejected: 1, Indeterminate: 1}},
		{name: "expired count is indeterminate",
			before:   func(e *env, _ string) { e.redis.FastForward(25 * time.Hour) },
			expected: 0, status: 201,
			want: history.GuardCounts{Evaluated: 4, Passed: 1, Rejected: 1, Indeterminate: 2}},
		{name: "the count restarts short of the log",
			before: func(e *env, run string) {
				e.mustAppend(run, draft(eventlog.StepCompleted, "after_expiry"))
			},
			// Redis counts 2 (the last fenced write and this fact); the log
			// holds 7. A writer that saw only 1 is stale, and caught.
			expected: 1, status: 412,
			want: history.GuardCounts{Evaluated: 5, Passed: 1, Rejected: 2, Indeterminate: 2}},
		{name: "a stale writer whose watermark left the window is indeterminate",
			before: func(e *env, run string) {
				for i := range 20 {
					e.mustAppend(run, draft(eventlog.StepCompleted, fmt.Sprint("busy_", i)))
				}
			},
			expected: 1, watermark: "wevt_OLDER_THAN_THE_WINDOW", status: 201,
			want: history.GuardCounts{Evaluated: 6, Passed: 1, Rejected: 2, Indeterminate: 3}},
	}
	for _, s := range []eventlog.Scheme{eventlog.SchemeULID, eventlog.SchemeSeq, eventlog.SchemeSlot} {
		t.Run(string(s), func(t *testing.T) {
			e := newEnv(t, "")
			run := e.createRun(s, eventlog.GuardCountIndex)
			e.mustAppend(run, draft(eventlog.RunCreated, ""), draft(eventlog.StepCreated, "a"), draft(eventlog.StepStarted, "a"))
			for i, st := range steps {
				if st.before != nil {
					st.before(e, run)
				}
				wm := st.watermark
				exp := st.expected
				a := e.post("/v1/runs/"+run+"/events/fenced", ingest.FencedRequest{
					ExpectedSeq: &exp, Watermark: wm, Events: []eventlog.Draft{draft(eventlog.StepCreated, fmt.Sprint("g", i))},
				})
				if a.status != st.status {
					t.Fatalf("step %q: HTTP %d %s, want %d", st.name, a.status, a.body, st.status)
				}
				if st.status == http.StatusPreconditionFailed {
					if b := a.errBody(t); b.Code != ingest.CodeFenced || b.Expected == nil || *b.Expected != st.expected {
						t.Fatalf("step %q: 412 body %s", st.name, a.body)
					}
				}
				if got := e.guard(run).Counts; got != st.want {
					t.Fatalf("step %q: guard counts %+v, want %+v", st.name, got, st.want)
				}
			}
			g := e.guard(run)
			if g.Guard != string(eventlog.GuardCountIndex) || len(g.Window) != 16 {
				t.Fatalf("guard answer: guard %q, window of %d ids; want count-index and 16", g.Guard, len(g.Window))
			}
			log := e.log(run)
			if g.Window[0] != log[len(log)-1].ID && s.Positioned() {
				t.Fatalf("window's newest id %s is not the log's last event %s", g.Window[0], log[len(log)-1].ID)
			}
			// A watermark still in the window lets a stale writer be caught.
			exp := int64(1)
			a := e.post("/v1/runs/"+run+"/events/fenced", ingest.FencedRequest{
				ExpectedSeq: &exp, Watermark: g.Window[3], Events: []eventlog.Draft{draft(eventlog.StepCreated, "located")},
			})
			if a.status != http.StatusPreconditionFailed {
				t.Fatalf("stale writer with a watermark in the window: HTTP %d %s, want 412", a.status, a.body)
			}
		})
	}
}

// TestCountGuardTOCTOU: the guard reads the count before the write's
// window, so two writers that saw the same log both pass when their windows
// overlap, and both decisions land: the check-then-write gap of seed gotcha
// 2, which the seq and slot fences close (the same two writers, fenced,
// admit one). The writers are held in their windows until every one that
// gets there has (the slot fence turns the second away at its reservation,
// before the window), so the overlap does not depend on timing.
func TestCountGuardTOCTOU(t *testing.T) {
	hold := worldtest.NewHolder()
	e := newEnvWith(t, hold)
	tests := []struct {
		name     string
		scheme   eventlog.Scheme
		guard    eventlog.Guard
		windows  int // writers that reach their window
		admitted int
	}{
		{"count-index on ulid", eventlog.SchemeULID, eventlog.GuardCountIndex, 2, 2},
		{"count-index on seq", eventlog.SchemeSeq, eventlog.GuardCountIndex, 2, 2},
		{"seq fence", eventlog.SchemeSeq, eventlog.GuardNone, 2, 1},
		{"count-index on slot", eventlog.SchemeSlot, eventlog.GuardCountIndex, 2, 2},
		{"slot fence", eventlog.SchemeSlot, eventlog.GuardNone, 1, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e.t = t
			run := e.createRun(tt.scheme, tt.guard)
			e.mustAppend(run, draft(eventlog.RunCreated, ""))
			hold.Hold(tt.windows)
			var wg sync.WaitGroup
			statuses := make([]int, 2)
			for i := range 2 {
				wg.Go(func() {
					statuses[i] = e.appendFenced(run, 1, draft(eventlog.StepCreated, fmt.Sprint("writer_", i))).status
				})
			}
			held := make([]*worldtest.Held, tt.windows)
			for i := range held {
				held[i] = hold.Next(t, fmt.Sprintf("writer %d of %d in its window", i+1, tt.windows))
			}
			for _, h := range held {
				h.Release()
			}
			wg.Wait()
			admitted := 0
			for _, st := range statuses {
				if st == http.StatusCreated {
					admitted++
				} else if st != http.StatusPreconditionFailed {
					t.Fatalf("statuses %v: want 201 or 412", statuses)
				}
			}
			if admitted != tt.admitted {
				t.Fatalf("%d of 2 writers that saw the same 1-event log were admitted, want %d", admitted, tt.admitted)
			}
			if n := len(e.log(run)); n != 1+admitted {
				t.Fatalf("log holds %d events, want %d", n, 1+admitted)
			}
			if tt.guard != "" {
				if got, want := e.guard(run).Counts, (history.GuardCounts{Evaluated: 2, Passed: 2}); got != want {
					t.Fatalf("guard counts %+v, want %+v: both writers passed a check that could not see the other", got, want)
				}
			}
		})
	}
}
