package rtshrink

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stormctl/stormctl/internal/engines/rerun"
	"github.com/stormctl/stormctl/internal/tools/replay"
)

// ev is an event as a package lists it.
func ev(id, typ, corr, resumeAt string) json.RawMessage {
	e := map[string]any{"eventId": id, "eventType": typ, "runId": "wrun_T"}
	if corr != "" {
		e["correlationId"] = corr
	}
	if resumeAt != "" {
		e["eventData"] = map[string]any{"resumeAt": resumeAt}
	}
	b, _ := json.Marshal(e)
	return b
}

// fakeCore stands in for the published runtime in the search's own
// tests (the real one is exercised by devkitengine's replay test): it
// reads the log a candidate serves and fails the run when a wait it
// completes was created twice with different resumeAt, as core 4.8.9
// does; fail decides otherwise when set.
type fakeCore struct {
	calls int
	fail  func(inv rerun.RuntimeInvocation, call int) *rerun.RuntimeFailure
}

func (f *fakeCore) Replay(_ context.Context, inv rerun.RuntimeInvocation) (rerun.RuntimeResult, error) {
	f.calls++
	if f.fail != nil {
		return rerun.RuntimeResult{Failed: f.fail(inv, f.calls)}, nil
	}
	return rerun.RuntimeResult{Failed: duplicateWait(served(inv))}, nil
}

type head struct {
	EventID       string `json:"eventId"`
	EventType     string `json:"eventType"`
	CorrelationID string `json:"correlationId"`
	EventData     struct {
		ResumeAt string `json:"resumeAt"`
	} `json:"eventData"`
}

func served(inv rerun.RuntimeInvocation) []head {
	var out []head
	for _, op := range inv.Ops {
		for _, raw := range op.Events {
			var h head
			_ = json.Unmarshal(raw, &h)
			out = append(out, h)
		}
	}
	return out
}

func duplicateWait(log []head) *rerun.RuntimeFailure {
	expects := map[string]string{}
	for _, e := range log {
		switch e.EventType {
		case "wait_created":
			expects[e.CorrelationID] = e.EventData.ResumeAt // the last creation wins
		case "wait_completed":
			if want, ok := expects[e.CorrelationID]; ok && want != e.EventData.ResumeAt {
				return &rerun.RuntimeFailure{Code: CorruptedEventLog, Message: fmt.Sprintf(
					"Workflow replay diverged 4 times after 3 recovery replays; latest divergent event was %s. Last divergence: Replay divergence: wait_completed event for %s has resumeAt %q, but the current wait consumer expects %q\n\nLearn more",
					e.EventID, e.CorrelationID, e.EventData.ResumeAt, want)}
			}
		}
	}
	return nil
}

// brokenCore answers like fakeCore, then fails every replay after the
// first few (a host that went away).
type brokenCore struct {
	fakeCore
	after int
}

func (b *brokenCore) Replay(ctx context.Context, inv rerun.RuntimeInvocation) (rerun.RuntimeResult, error) {
	if b.calls >= b.after {
		return rerun.RuntimeResult{}, errors.New("host gone")
	}
	return b.fakeCore.Replay(ctx, inv)
}

// recorded is a failing invocation: a run_started, then the log in pages
// of 5, the duplicate creation of wait_9 among 40 other events.
func recorded() replay.Failing {
	log := []json.RawMessage{ev("e00", "run_created", "", "")}
	for i := 1; i <= 40; i++ {
		log = append(log, ev(fmt.Sprintf("e%02d", i), "step_created", fmt.Sprintf("step_%d", i), ""))
		if i == 20 {
			log = append(log, ev("w1", "wait_created", "wait_9", "A"), ev("w2", "wait_created", "wait_9", "B"))
		}
	}
	log = append(log, ev("w3", "wait_completed", "wait_9", "A"))
	at := 1.0
	inv := rerun.RuntimeInvocation{RunID: "wrun_T", Created: log[0], Recovery: 3,
		Ops: []rerun.RuntimeOp{{Kind: "create", EventType: "run_started", StartedAt: &at, End: 2}}}
	for i := 0; i < len(log); i += 5 {
		page := log[i:min(i+5, len(log))]
		inv.Ops = append(inv.Ops, rerun.RuntimeOp{Kind: "list", Events: page, HasMore: i+5 < len(log), End: 3})
	}
	inv.Ops = append(inv.Ops, rerun.RuntimeOp{Kind: "create", EventType: "run_failed", End: 4})
	return replay.Failing{Actor: "inv-7", Script: inv, Invocations: 12}
}

// TestShrink: the search keeps what the failure needs and a well-formed
// log around it (the run_created, both creations, the completion of the
// creation it completes), says how much smaller the schedule got, and
// keeps the recorded failure's signature.
func TestShrink(t *testing.T) {
	t.Parallel()
	core := &fakeCore{}
	res, err := Shrink(t.Context(), core, recorded(), Options{Budget: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if res.Case == nil {
		t.Fatalf("no case: %+v", res.Phases)
	}
	var ids []string
	for _, e := range served(res.Case.invocation()) {
		ids = append(ids, e.EventID)
	}
	if got := strings.Join(ids, " "); got != "e00 w1 w2 w3" {
		t.Errorf("shrunk log %q, want the run_created, both creations and the completion", got)
	}
	if res.Before != (Size{Invocations: 12, Pages: 9, Events: 44, Creates: 2}) || res.After != (Size{Invocations: 1, Pages: 1, Events: 4, Creates: 1}) {
		t.Errorf("sizes %+v -> %+v", res.Before, res.After)
	}
	if !res.Minimal || res.Failure.EventType != "wait_completed" || res.Failure.Code != CorruptedEventLog {
		t.Errorf("result %+v", res)
	}
	if res.Tests != core.calls {
		t.Errorf("%d tests reported, %d replays made", res.Tests, core.calls)
	}
}

// TestShrinkRefuses: a recorded failure that does not come back, or comes
// back differently, is not shrunk (and no case is made); one that needs
// the recorded pages keeps them and says so.
func TestShrinkRefuses(t *testing.T) {
	t.Parallel()
	other := &rerun.RuntimeFailure{Code: CorruptedEventLog, Message: "Workflow replay diverged; latest divergent event was w3. Last divergence: Replay could not consume event"}
	tests := []struct {
		name      string
		fail      func(rerun.RuntimeInvocation, int) *rerun.RuntimeFailure
		wantErr   error
		wantPaged bool
	}{
		{name: "never fails", fail: func(rerun.RuntimeInvocation, int) *rerun.RuntimeFailure { return nil }, wantErr: ErrNotReproduced},
		{name: "another code", fail: func(rerun.RuntimeInvocation, int) *rerun.RuntimeFailure {
			return &rerun.RuntimeFailure{Code: "RUNTIME_ERROR", Message: "boom"}
		}, wantErr: ErrNotReproduced},
		{name: "fails differently the second time", fail: func(inv rerun.RuntimeInvocation, call int) *rerun.RuntimeFailure {
			if call == 1 {
				return duplicateWait(served(inv))
			}
			return other
		}, wantErr: ErrNotReproduced},
		{name: "needs the pages", fail: func(inv rerun.RuntimeInvocation, _ int) *rerun.RuntimeFailure {
			if countLists(inv) < 2 {
				return nil
			}
			return duplicateWait(served(inv))
		}, wantPaged: true},
	}
	// The replays must raise the failure the run recorded, not any.
	rec := recorded()
	rec.Recorded = "Workflow replay diverged 4 times after 3 recovery replays; latest divergent event was w3. Last divergence: Replay divergence: step event step_created for step_1 belongs to \"a\", but the current step consumer is \"b\""
	if _, err := Shrink(t.Context(), &fakeCore{}, rec, Options{Budget: time.Minute}); !errors.Is(err, ErrNotReproduced) || !strings.Contains(err.Error(), "the run recorded") {
		t.Errorf("another recorded failure: %v, want ErrNotReproduced naming it", err)
	}
	// A replay the runtime could not make ends the search with its error.
	if _, err := Shrink(t.Context(), &brokenCore{after: 3}, recorded(), Options{Budget: time.Minute}); err == nil || !strings.Contains(err.Error(), "host gone") {
		t.Errorf("a broken runtime: %v, want its error", err)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			res, err := Shrink(t.Context(), &fakeCore{fail: tt.fail}, recorded(), Options{Budget: time.Minute})
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("error %v, want %v", err, tt.wantErr)
			}
			if res.Case != nil {
				t.Errorf("a case was made: %+v", res.Case)
			}
			if tt.wantPaged && (len(res.Phases) < 2 || res.Phases[1].After != 9 || !strings.Contains(res.Phases[1].Note, "what the recorded invocation was served") || res.Minimal) {
				t.Errorf("phases %+v, want the pages kept and said so", res.Phases)
			}
		})
	}
}

// TestWellFormed: which logs a candidate may be.
func TestWellFormed(t *testing.T) {
	t.Parallel()
	c := Case{Log: []json.RawMessage{
		ev("0", "run_created", "", ""),
		ev("1", "wait_created", "wait_1", "A"),
		ev("2", "wait_created", "wait_1", "B"),
		ev("3", "wait_completed", "wait_1", "A"),
		ev("4", "step_created", "step_1", ""),
		ev("5", "step_completed", "step_1", ""),
	}}
	s, err := shapeOf(c)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		keep []int
		want bool
	}{
		{[]int{0, 1, 2, 3, 4, 5}, true},
		{[]int{0, 1, 3}, true},
		{[]int{0, 2, 3}, false}, // completes the creation that is gone
		{[]int{0, 5}, false},    // a result of a step never created
		{[]int{1, 3}, false},    // no run_created
		{[]int{0, 4}, true},
		{[]int{0, 3, 1}, false}, // the completion before its creation
	}
	for _, tt := range tests {
		if got := s.wellFormed(tt.keep); got != tt.want {
			t.Errorf("wellFormed(%v) = %v, want %v", tt.keep, got, tt.want)
		}
	}
}
