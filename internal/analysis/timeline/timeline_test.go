package timeline

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stormctl/stormctl/internal/analysis/explain"
	"github.com/stormctl/stormctl/internal/eventlog"
	"github.com/stormctl/stormctl/internal/history"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// bigRun is a run of n invocations, each reading twice and writing twice,
// and n step workers writing a fact each: about 5n marks. The
// explanation marks inv-1's reads stale and its first write offending.
func bigRun(n int) (explain.Input, explain.Explanation) {
	in := explain.Input{RunID: "run-big", Outcome: "corrupted"}
	ms := func(i int) time.Time { return t0.Add(time.Duration(i) * time.Millisecond) }
	ex := explain.Explanation{Run: in.RunID, Cell: "local/step-storm/main", Outcome: "corrupted", Class: explain.StalePrefix,
		Summary: "stale-prefix: a test", Steps: []string{"1. let inv-1 load", "2. then inv-1 wrote"}}
	for i := range n {
		inv := fmt.Sprintf("inv-%d", i+1)
		for p := range 2 {
			in.Ops = append(in.Ops, history.Op{Kind: history.OpList, Actor: inv, Start: ms(10 * i), End: ms(10*i + 1),
				Read: &history.ReadSummary{N: 100, More: p == 0}})
		}
		for w := range 2 {
			id := fmt.Sprintf("evnt_%06d_%d", i, w)
			in.Ops = append(in.Ops, history.Op{Kind: history.OpAppend, Actor: inv, Start: ms(10*i + 2), End: ms(10*i + 40),
				Wrote: []history.OpEvent{{Type: eventlog.StepCreated, CorrelationID: "step_" + id, ID: id, MintedAt: ms(10*i + 2), CommittedAt: ms(10*i + 40)}}})
		}
		in.Ops = append(in.Ops, history.Op{Kind: history.OpAppend, Actor: fmt.Sprintf("step-%d", i+1), Start: ms(10*i + 50), End: ms(10*i + 60),
			Wrote: []history.OpEvent{{Type: eventlog.StepCompleted, CorrelationID: "step_x", ID: fmt.Sprintf("evnt_f%06d", i), MintedAt: ms(10*i + 50), CommittedAt: ms(10*i + 60)}}})
	}
	ex.View = &explain.View{Actor: "inv-1", Pages: []explain.Page{{Start: ms(0)}, {Start: ms(0)}}}
	ex.Offending = &explain.Event{ID: "evnt_000000_0", Type: eventlog.StepCreated, MintedAt: ms(2), CommittedAt: ms(40)}
	ex.Missing = []explain.Missing{{Event: explain.Event{ID: "evnt_f000001", Type: eventlog.StepCompleted, MintedAt: ms(60), CommittedAt: ms(70)}, Decisive: true}}
	return in, ex
}

// TestWriteFitsTheBudget: a page is self-contained and never exceeds its
// budget; past it, it thins itself in steps and says so; a budget too
// small for even the highlighted marks is an error, with nothing written.
func TestWriteFitsTheBudget(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		runs   int
		budget int
		// note is text the page must hold ("" for none: a full page).
		note     string
		tooSmall bool
	}{
		{"a small run is drawn in full", 20, MaxBytes, "", false},
		{"a thousand invocations fit the cap", 1000, MaxBytes, "", false},
		{"a tight budget drops tooltips", 1000, 900 << 10, "tooltips are kept only on highlighted marks", false},
		{"a tighter one merges reads", 1000, 480 << 10, "reads merged", false},
		{"tighter still: highlighted marks only", 1000, 200 << 10, "only the highlighted marks", false},
		{"too small", 1000, 4 << 10, "", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			in, ex := bigRun(tc.runs)
			var b bytes.Buffer
			err := Write(&b, in, ex, tc.budget)
			if tc.tooSmall {
				if !errors.Is(err, ErrTooSmall) || b.Len() != 0 {
					t.Fatalf("err %v, %d bytes written; want ErrTooSmall and nothing", err, b.Len())
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			page := b.String()
			t.Logf("%d bytes", len(page))
			if len(page) > tc.budget {
				t.Errorf("%d bytes, over the budget of %d", len(page), tc.budget)
			}
			for _, banned := range []string{"<script", "<link", "<img", "src=", "@import", "url("} {
				if strings.Contains(page, banned) {
					t.Errorf("page is not self-contained: it has %q", banned)
				}
			}
			if !strings.Contains(page, "<svg") || !strings.Contains(page, `class="hw"`) || !strings.Contains(page, `class="hot"`) || !strings.Contains(page, `class="m"`) {
				t.Errorf("the offending write, the stale view or the decisive missing event is not drawn")
			}
			if tc.note == "" && strings.Contains(page, "thinned") || tc.note != "" && !strings.Contains(page, tc.note) {
				t.Errorf("page should say %q about thinning", tc.note)
			}
		})
	}
}
