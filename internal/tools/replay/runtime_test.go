package replay

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stormctl/stormctl/internal/engines/rerun"
	"github.com/stormctl/stormctl/internal/eventlog"
	"github.com/stormctl/stormctl/internal/history"
)

// fakeRuntime answers every replay with result and keeps what it was asked;
// Run replays invocations concurrently, as it may with a real runtime.
type fakeRuntime struct {
	result rerun.RuntimeResult
	mu     sync.Mutex
	asked  []rerun.RuntimeInvocation
}

func (f *fakeRuntime) Replay(_ context.Context, inv rerun.RuntimeInvocation) (rerun.RuntimeResult, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.asked = append(f.asked, inv)
	return f.result, nil
}

// devkitRun is a recorded devkit run of one invocation, inv-1: its
// run_started (answered with the log from the start), a list after the
// log's end (empty), a step_created; then, when failing, its run_failed
// (core's CORRUPTED_EVENT_LOG).
func devkitRun(failing bool) Input {
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	pkg := func(id, typ, corr, data string) json.RawMessage {
		s := `{"eventId":"` + id + `","runId":"wrun_dk","eventType":"` + typ + `","createdAt":"2026-01-01T00:00:00.001Z"`
		if corr != "" {
			s += `,"correlationId":"` + corr + `"`
		}
		if data != "" {
			s += `,"eventData":` + data
		}
		return json.RawMessage(s + "}")
	}
	final := []eventlog.Event{
		{RunID: "wrun_dk", ID: "evnt_1", Type: eventlog.RunCreated, Package: pkg("evnt_1", "run_created", "", `{"input":{"__type":"Uint8Array","data":"AA=="}}`)},
		{RunID: "wrun_dk", ID: "evnt_2", Type: runStarted, Package: pkg("evnt_2", "run_started", "", "")},
		{RunID: "wrun_dk", ID: "evnt_3", Type: eventlog.StepCreated, CorrelationID: "step_1", Package: pkg("evnt_3", "step_created", "step_1", `{"stepName":"step//./w//settle","input":{"__type":"Uint8Array","data":"AQ=="}}`)},
	}
	ops := []history.Op{
		{Kind: history.OpAppend, Actor: "inv-1", Start: at(1), End: at(2), RunStartedAt: at(2), Wrote: []history.OpEvent{{Type: runStarted, ID: "evnt_2"}}},
		{Kind: history.OpList, Actor: "inv-1", Start: at(2), End: at(2), Snapshot: true, Read: &history.ReadSummary{N: 2}},
		{Kind: history.OpList, Actor: "inv-1", Start: at(3), End: at(4), After: eventlog.Cursor{ID: "evnt_2"}, Read: &history.ReadSummary{N: 0}},
		{Kind: history.OpAppend, Actor: "inv-1", Start: at(5), End: at(6), Wrote: []history.OpEvent{{Type: eventlog.StepCreated, CorrelationID: "step_1", ID: "evnt_3"}}},
	}
	if failing {
		final = append(final, eventlog.Event{RunID: "wrun_dk", ID: "evnt_4", Type: eventlog.RunFailed,
			Payload: json.RawMessage(`{"code":"CORRUPTED_EVENT_LOG","message":"Workflow replay diverged 4 times after 3 recovery replays; latest divergent event was evnt_2. Last divergence: x"}`),
			Package: pkg("evnt_4", "run_failed", "", `{"errorCode":"CORRUPTED_EVENT_LOG","error":{"message":"Workflow replay diverged 4 times after 3 recovery replays; latest divergent event was evnt_2. Last divergence: x","stack":"at host.mjs"}}`)})
		ops = append(ops, history.Op{Kind: history.OpAppend, Actor: "inv-1", Start: at(7), End: at(8), Wrote: []history.OpEvent{{Type: eventlog.RunFailed, ID: "evnt_4"}}})
	}
	pages := map[int][]eventlog.Event{1: final[:2], 2: nil}
	return Input{RunID: "wrun_dk", Engine: "devkit", Outcome: history.Corrupted, Ops: ops, Final: final,
		Reads: func(i int) ([]eventlog.Event, bool) { return pages[i], true }}
}

// TestRuntimeReplay: a devkit run's invocation is served to the runtime
// as recorded (a create's snapshot folded into it, its run_started's
// startedAt, the recovery budget for the invocation that wrote the
// run_failed), and the runtime's answer is judged with the model's
// verdicts: the same calls and payloads every time, a payload or call
// the record does not hold, a record the replay went past or stopped
// short of.
func TestRuntimeReplay(t *testing.T) {
	same := []rerun.RuntimeCall{{Op: "create", At: 0, EventType: "run_started"}, {Op: "list"},
		{Op: "create", At: 2, EventType: "step_created", CorrelationID: "step_1", EventData: json.RawMessage(`{"input":{"__type":"Uint8Array","data":"AQ=="},"stepName":"step//./w//settle"}`)}}
	failed := append(append([]rerun.RuntimeCall(nil), same...), rerun.RuntimeCall{Op: "create", At: 3, EventType: "run_failed",
		EventData: json.RawMessage(`{"errorCode":"CORRUPTED_EVENT_LOG","error":{"message":"Workflow replay diverged 4 times after 3 recovery replays; latest divergent event was evnt_2. Last divergence: x","stack":"at replay"}}`)})
	corrupted := "Workflow replay diverged 4 times after 3 recovery replays; latest divergent event was evnt_2. Last divergence: x"
	for _, tt := range []struct {
		name     string
		failing  bool
		result   rerun.RuntimeResult
		verdict  string
		run      string // the run's verdict, "" when it has no recorded divergence
		deviates string // a substring of the deviation, "" for none
	}{
		{name: "does again what it recorded", result: rerun.RuntimeResult{Status: 200, Done: same}, verdict: Every},
		{name: "another step input", result: rerun.RuntimeResult{Status: 200, Done: []rerun.RuntimeCall{same[0], same[1],
			{Op: "create", At: 2, EventType: "step_created", CorrelationID: "step_1", EventData: json.RawMessage(`{"input":{"__type":"Uint8Array","data":"Ag=="},"stepName":"step//./w//settle"}`)}}},
			verdict: Never, deviates: "operation 4: recorded append step_created step_1"},
		{name: "a call the record does not hold", result: rerun.RuntimeResult{Status: 500, Done: same[:2],
			Deviation: &rerun.RuntimeDeviation{Op: 2, Recorded: "create step_created step_1", Replayed: "create wait_created wait_1"}}, verdict: Never, deviates: "replayed create wait_created wait_1"},
		{name: "went on past its record", result: rerun.RuntimeResult{Status: 500, Done: same, Deviation: &rerun.RuntimeDeviation{Op: 3, Replayed: "list after evnt_3"}}, verdict: Cut},
		{name: "stopped short of its record", result: rerun.RuntimeResult{Status: 200, Done: same[:2]}, verdict: Never, deviates: "stopped before its operation 4"},
		{name: "the recorded CORRUPTED_EVENT_LOG again", failing: true,
			result:  rerun.RuntimeResult{Status: 200, Done: failed, Divergence: &rerun.RuntimeDivergence{Message: corrupted, Terminal: true}, Failed: &rerun.RuntimeFailure{Code: "CORRUPTED_EVENT_LOG", Message: corrupted}},
			verdict: Every, run: Every},
		{name: "no divergence this time", failing: true, result: rerun.RuntimeResult{Status: 200, Done: same}, verdict: Never, run: Never, deviates: "stopped before its operation 5"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			in := devkitRun(tt.failing)
			f := &fakeRuntime{result: tt.result}
			in.Runtime = f
			if err := Servable(in); err != nil {
				t.Fatal(err)
			}
			rep, err := Run(t.Context(), in, Options{Repeat: 2})
			if err != nil {
				t.Fatal(err)
			}
			asked := f.asked[0]
			want := map[bool]int{false: 3, true: 4}[tt.failing]
			if len(asked.Ops) != want || asked.Ops[0].Snapshot == nil || len(asked.Ops[0].Snapshot.Events) != 2 || asked.Ops[0].StartedAt == nil ||
				asked.Ops[1].After != "evnt_2" || string(asked.Ops[2].Event) != string(in.Final[2].Package) {
				t.Errorf("served %d ops, want %d: the run_started with its snapshot and startedAt, the list after evnt_2, the step_created with its recorded event", len(asked.Ops), want)
			}
			if want := map[bool]int{false: 0, true: rerun.RuntimeRecoveries}[tt.failing]; asked.Recovery != want {
				t.Errorf("delivered with recovery %d, want %d", asked.Recovery, want)
			}
			inv := rep.Invocations[0]
			if inv.Verdict != tt.verdict || rep.Verdict != tt.run {
				t.Errorf("verdicts %q (run %q), want %q (run %q): %+v", inv.Verdict, rep.Verdict, tt.verdict, tt.run, inv.Behaviours)
			}
			dev := inv.Behaviours[0].Deviation
			switch {
			case tt.deviates == "" && dev != nil && tt.verdict != Cut:
				t.Errorf("deviation %s, want none", dev)
			case tt.deviates != "" && (dev == nil || !strings.Contains(dev.String(), tt.deviates)):
				t.Errorf("deviation %v, want one with %q", dev, tt.deviates)
			}
			if tt.run == Every {
				if d := inv.Behaviours[0].Divergence; d == nil || d.Kind != "corrupted_event_log" || d.ID != "evnt_2" || d.Index != 1 || d.Error != rep.Recorded.Error {
					t.Errorf("divergence %+v, want core's at evnt_2 (event 1 of what it read)", d)
				}
			}
		})
	}
}

// TestServable: a devkit run whose final log lacks the package's own
// events, or whose run_started answer's startedAt is unknown (several
// run_started and none recorded), is refused before any runtime starts.
func TestServable(t *testing.T) {
	noPkg := devkitRun(false)
	noPkg.Final = append([]eventlog.Event(nil), noPkg.Final...)
	noPkg.Final[2].Package = nil
	noStart := devkitRun(false)
	noStart.Ops = append([]history.Op(nil), noStart.Ops...)
	noStart.Ops[0].RunStartedAt = time.Time{}
	noStart.Ops[0].Wrote = []history.OpEvent{{Type: runStarted}} // answered with no event: the run was running
	noStart.Final = append(noStart.Final, eventlog.Event{ID: "evnt_9", Type: runStarted, Package: noStart.Final[1].Package})
	for _, tt := range []struct {
		name string
		in   Input
		want string
	}{
		{"no package copy", noPkg, "without the package's own copy"},
		{"startedAt unknown", noStart, "does not record the startedAt"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if err := Servable(tt.in); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Servable = %v; want a refusal with %q", err, tt.want)
			}
		})
	}
}

// TestSamePackageData: a replayed run_failed is the recorded one when its
// code and message are, whatever its stack, in 4.x's shape and in 5.0's
// (the error serialized: a message that differs there is a deviation, not
// two empty messages that agree).
func TestSamePackageData(t *testing.T) {
	t.Parallel()
	errorValue := func(msg, stack string) string {
		return `[["Error",1],{"name":2,"message":3,"stack":4},"Error","` + msg + `","` + stack + `"]`
	}
	stored := func(data string) eventlog.Event {
		return eventlog.Event{Type: eventlog.RunFailed, Package: json.RawMessage(`{"eventId":"evnt_4","eventType":"run_failed","eventData":` + data + `}`)}
	}
	for _, tt := range []struct {
		name, recorded, replayed string
		same                     bool
	}{
		{"4.x: another stack", `{"errorCode":"CORRUPTED_EVENT_LOG","error":{"message":"m","stack":"at host.mjs"}}`,
			`{"errorCode":"CORRUPTED_EVENT_LOG","error":{"message":"m","stack":"at replay"}}`, true},
		{"4.x: another message", `{"errorCode":"CORRUPTED_EVENT_LOG","error":{"message":"m","stack":"s"}}`,
			`{"errorCode":"CORRUPTED_EVENT_LOG","error":{"message":"n","stack":"s"}}`, false},
		{"5.0: another stack", `{"errorCode":"CORRUPTED_EVENT_LOG","error":` + storedValue(t, errorValue("m", "at host.mjs"), true) + `}`,
			`{"errorCode":"CORRUPTED_EVENT_LOG","error":` + storedValue(t, errorValue("m", "at replay"), true) + `}`, true},
		{"5.0: another message", `{"errorCode":"CORRUPTED_EVENT_LOG","error":` + storedValue(t, errorValue("m", "s"), true) + `}`,
			`{"errorCode":"CORRUPTED_EVENT_LOG","error":` + storedValue(t, errorValue("n", "s"), true) + `}`, false},
		{"another code", `{"errorCode":"CORRUPTED_EVENT_LOG","error":{"message":"m"}}`, `{"errorCode":"USER_ERROR","error":{"message":"m"}}`, false},
	} {
		if got := samePackageData(stored(tt.recorded), json.RawMessage(tt.replayed)); (got == "") != tt.same {
			t.Errorf("%s: samePackageData = %q, want same %v", tt.name, got, tt.same)
		}
	}
	// What a replay cannot write again or the store did not keep: a
	// step_started's ownerMessageId, a key the stored eventData lacks (5.0
	// frame metadata), an eventData the store kept none of. A stored key
	// the replay lacks, or holds otherwise, still differs.
	step := func(data string) eventlog.Event {
		return eventlog.Event{Type: eventlog.StepStarted, Package: json.RawMessage(`{"eventId":"evnt_5","eventType":"step_started","eventData":` + data + `}`)}
	}
	for _, tt := range []struct {
		name, recorded, replayed string
		same                     bool
	}{
		{"another owner message (the delivery is sent again with its id)", `{"stepName":"s","ownerMessageId":"msg_1"}`, `{"stepName":"s","ownerMessageId":"msg_replay_1"}`, false},
		{"frame metadata the store does not list", `{"ownerMessageId":"msg_1"}`, `{"ownerMessageId":"msg_1","workflowName":"w","stepName":"s"}`, true},
		{"another key the store does not hold", `{"stepName":"s"}`, `{"stepName":"s","error":"boom"}`, false},
		{"durations on the writer's clock", `{"stso":47,"stepCount":50,"finalSchedulingReplay":5}`, `{"stso":49.4,"stepCount":50,"finalSchedulingReplay":0}`, true},
		{"a stored count otherwise", `{"stso":47,"stepCount":50}`, `{"stso":47,"stepCount":51}`, false},
		{"no eventData kept of a step event", `null`, `{"input":1}`, false},
		{"a stored key missing", `{"stepName":"s","input":1}`, `{"stepName":"s"}`, false},
		{"a stored key otherwise", `{"stepName":"s"}`, `{"stepName":"t","workflowName":"w"}`, false},
	} {
		if got := samePackageData(step(tt.recorded), json.RawMessage(tt.replayed)); (got == "") != tt.same {
			t.Errorf("%s: samePackageData = %q, want same %v", tt.name, got, tt.same)
		}
	}
	started := eventlog.Event{Type: runStarted, Package: json.RawMessage(`{"eventId":"evnt_2","eventType":"run_started"}`)}
	if got := samePackageData(started, json.RawMessage(`{"input":{"__type":"Uint8Array","data":"AA=="}}`)); got != "" {
		t.Errorf("a 5.0 run_started whose runInput the store did not keep: %q, want the same", got)
	}
	completed := eventlog.Event{Type: eventlog.RunCompleted, Package: json.RawMessage(`{"eventId":"evnt_9","eventType":"run_completed"}`)}
	if got := samePackageData(completed, json.RawMessage(`{"output":1}`)); got == "" {
		t.Error("a run_completed whose stored event holds no output compares the same as one with an output")
	}
}

// TestRuntimeScriptBatch: the events of one createBatch call are served
// as one batch op holding each event's answer (a written event with its
// step's step_created, a conflict); a call whose every event failed by
// the transport is the call's failure; the recorded delivery is sent
// again; events of a call recorded apart are refused.
func TestRuntimeScriptBatch(t *testing.T) {
	t.Parallel()
	in := devkitRun(false)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	in.Final = append(in.Final, eventlog.Event{RunID: "wrun_dk", ID: "evnt_4", Type: eventlog.StepStarted, CorrelationID: "step_1",
		Package: json.RawMessage(`{"eventId":"evnt_4","runId":"wrun_dk","eventType":"step_started","correlationId":"step_1","createdAt":"2026-01-01T00:00:00.001Z"}`)})
	delivery := &history.Delivery{Body: []byte(`{"runId":"wrun_dk","stepId":"step_1"}`), ContentType: "application/json", MessageID: "msg_7", Attempt: 2}
	batch := func(ms, n int, corr string, typ eventlog.Type, id, err string) history.Op {
		status := map[string]int{"conflict": 409}[err]
		return history.Op{Kind: history.OpAppend, Actor: "inv-1", Start: at(ms), End: at(ms + 1), Batch: n, Err: err, Status: status, BatchFailed: err == "other",
			ErrText: map[string]string{"": "", "conflict": "run wrun_dk: conflict on step_1 (the package: step_1 exists)", "other": "transport failure"}[err],
			Wrote:   []history.OpEvent{{Type: typ, CorrelationID: corr, ID: id}}}
	}
	in.Ops = append(in.Ops[:3:3],
		batch(5, 1, "step_1", eventlog.StepCreated, "evnt_3", ""), batch(5, 1, "step_1", eventlog.StepStarted, "evnt_4", ""), batch(5, 1, "step_2", eventlog.StepCreated, "", "conflict"),
		batch(7, 2, "wait_1", eventlog.WaitCreated, "", "other"), batch(7, 2, "wait_2", eventlog.WaitCreated, "", "other"),
		history.Op{Kind: history.OpDeliver, Actor: "inv-1", Start: at(0), End: at(9), Delivery: delivery},
		// A delivery the host skipped before any call (older recordings):
		// no invocation.
		history.Op{Kind: history.OpDeliver, Actor: "inv-2", Start: at(9), End: at(9), Delivery: delivery})
	invs := invocations(in.Ops)
	if len(invs) != 1 {
		t.Fatalf("%d invocations, want 1: a delivery that made no call is none", len(invs))
	}
	ri, back, err := runtimeScript(in, invs[0], servedReads(in, invs), finalByID(in.Final))
	if err != nil {
		t.Fatal(err)
	}
	if len(ri.Ops) != 4 || ri.Ops[2].Kind != "batch" || ri.Ops[3].Kind != "batch" || back[2] != 3 || back[3] != 6 {
		t.Fatalf("ops %+v back %v; want the run_started, the list, two batches at operations 3 and 6", ri.Ops, back)
	}
	b := ri.Ops[2]
	if len(b.Items) != 3 || b.Error != nil || string(b.Items[0].Event) != string(in.Final[2].Package) || string(b.Items[1].StepCreated) != string(in.Final[2].Package) ||
		b.Items[2].Error == nil || b.Items[2].Error.Name != "EntityConflictError" || b.Items[2].Error.Status != 409 {
		t.Errorf("the first batch %+v; want its written events, the step's step_created, a conflict", b)
	}
	if f := ri.Ops[3]; len(f.Items) != 2 || f.Error == nil || f.Items[0].Error != nil {
		t.Errorf("the failed call %+v; want the call's error, none on its events", f)
	}
	if ri.Delivery != delivery || ri.Started.IsZero() {
		t.Errorf("delivery %+v, started %v; want the recorded message and the run's start", ri.Delivery, ri.Started)
	}
	apart := in
	apart.Ops = append(append([]history.Op(nil), in.Ops[:4]...), in.Ops[2], in.Ops[4])
	if _, _, err := runtimeScript(apart, invocations(apart.Ops)[0], servedReads(apart, invocations(apart.Ops)), finalByID(apart.Final)); err == nil || !strings.Contains(err.Error(), "apart") {
		t.Errorf("a batch recorded apart: %v; want it refused", err)
	}
}
