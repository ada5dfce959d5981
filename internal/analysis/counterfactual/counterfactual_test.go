package counterfactual

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stormctl/stormctl/internal/analysis/verdict"
	"github.com/stormctl/stormctl/internal/engines/rerun"
	"github.com/stormctl/stormctl/internal/eventlog"
)

var t0 = time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)

// event is a final-log event with the package's copy, created at t0+ms.
func event(id string, typ eventlog.Type, corr string, ms int, data string) eventlog.Event {
	pe := map[string]any{"eventId": id, "eventType": string(typ), "runId": "wrun_1",
		"createdAt": t0.Add(time.Duration(ms) * time.Millisecond).Format(time.RFC3339Nano)}
	if corr != "" {
		pe["correlationId"] = corr
	}
	if data != "" {
		pe["eventData"] = json.RawMessage(data)
	}
	b, _ := json.Marshal(pe)
	return eventlog.Event{ID: id, Type: typ, CorrelationID: corr, Package: b}
}

// refused is a pending judgement of a write refused at t0+ms.
func refused(typ eventlog.Type, corr string, ms int, data string) verdict.Judgement {
	d := `{"eventData":` + data + `,"specVersion":3}`
	if data == "" {
		d = `{"specVersion":3}`
	}
	return verdict.Judgement{Actor: "inv-1", At: t0.Add(time.Duration(ms) * time.Millisecond), Verdict: verdict.Unknown, Pending: true,
		Write: &verdict.RefusedWrite{Type: typ, CorrelationID: corr, Data: json.RawMessage(d), Err: "conflict"}}
}

// logRuntime stands for the runtime in these unit tests (the published
// one judges in internal/devkit/devkitengine's tests): it reads the log
// it is served as a replay would, and diverges on a second event of a
// type and correlation id it already read, else creates step_created
// for the next step ("step_N" after N steps).
type logRuntime struct {
	mu    sync.Mutex
	calls int
	seen  [][]string // the event ids each replay read
}

func (r *logRuntime) Replay(_ context.Context, inv rerun.RuntimeInvocation) (rerun.RuntimeResult, error) {
	r.mu.Lock()
	r.calls++
	r.mu.Unlock()
	if len(inv.Ops) != 2 || inv.Ops[0].EventType != "run_started" || inv.Ops[1].Kind != "list" || !inv.Scratch || inv.Recovery != rerun.RuntimeRecoveries {
		return rerun.RuntimeResult{}, fmt.Errorf("not a log's replay: %+v", inv.Ops)
	}
	seen := map[string]bool{}
	var ids []string
	steps := 0
	for _, raw := range inv.Ops[1].Events {
		var pe struct {
			EventID       string `json:"eventId"`
			EventType     string `json:"eventType"`
			CorrelationID string `json:"correlationId"`
			CreatedAt     string `json:"createdAt"`
		}
		if err := json.Unmarshal(raw, &pe); err != nil || pe.EventID == "" || pe.CreatedAt == "" {
			return rerun.RuntimeResult{}, fmt.Errorf("an event without its package fields: %s", raw)
		}
		ids = append(ids, pe.EventID)
		key := pe.EventType + " " + pe.CorrelationID
		if seen[key] && pe.CorrelationID != "" {
			return rerun.RuntimeResult{Status: 200, Divergence: &rerun.RuntimeDivergence{Message: "Workflow replay diverged; latest divergent event was " + pe.EventID + ".", EventID: pe.EventID, Terminal: true}}, nil
		}
		seen[key] = true
		if pe.EventType == "step_completed" {
			steps++
		}
	}
	r.mu.Lock()
	r.seen = append(r.seen, ids)
	r.mu.Unlock()
	return rerun.RuntimeResult{Status: 200, Done: []rerun.RuntimeCall{
		{Op: "create", At: 0, EventType: "run_started"},
		{Op: "list"},
		{Op: "create", At: -1, EventType: "step_created", CorrelationID: fmt.Sprintf("step_%d", steps+1)},
	}}, nil
}

func TestJudge(t *testing.T) {
	final := []eventlog.Event{
		event("evnt_01", eventlog.RunCreated, "", 0, `{"input":1}`),
		event("evnt_02", eventlog.RunStarted, "", 10, ""),
		event("evnt_03", eventlog.StepCreated, "step_1", 20, `{"stepName":"a"}`),
		event("evnt_04", eventlog.StepCompleted, "step_1", 30, `{"result":1}`),
		event("evnt_05", eventlog.StepCreated, "step_2", 40, `{"stepName":"a"}`),
		event("evnt_06", eventlog.RunCompleted, "", 60, `{"output":2}`),
	}
	tests := []struct {
		name    string
		j       verdict.Judgement
		want    verdict.Verdict
		because string
	}{
		{"a duplicate creation diverges the replay", refused(eventlog.StepCreated, "step_1", 25, `{"stepName":"a"}`), verdict.TruePositive, "diverges at the admitted event"},
		{"a write the replay consumes alike", refused(eventlog.StepStarted, "step_2", 45, `{}`), verdict.Benign, "does exactly what it does without it"},
		{"a write that changes what the replay does next", refused(eventlog.StepCompleted, "step_2", 45, `{"result":2}`), verdict.TruePositive, "writes step_created step_3"},
		{"an event after the end", refused(eventlog.StepCreated, "step_3", 70, `{}`), verdict.Benign, "the run had ended (run_completed evnt_06)"},
		{"the same end again", refused(eventlog.RunCompleted, "", 70, `{"output":2}`), verdict.Benign, "an identical retry"},
		{"another end", refused(eventlog.RunFailed, "", 70, `{"errorCode":"X","error":"boom"}`), verdict.TruePositive, "ended the run a second time"},
		{"no data kept", func() verdict.Judgement {
			j := refused(eventlog.StepCreated, "step_1", 25, "")
			j.Write.Data = nil
			return j
		}(), verdict.Unknown, "did not keep"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rt := &logRuntime{}
			got, err := Judge(t.Context(), rt, Run{ID: "wrun_1", Final: final, Verdicts: []verdict.Judgement{tt.j}}, Options{Workers: 2})
			if err != nil {
				t.Fatal(err)
			}
			j := got[0]
			if j.Pending || j.Verdict != tt.want || !strings.Contains(j.Reason, tt.because) || !strings.HasPrefix(j.Reason, "the world refused "+string(tt.j.Write.Type)) {
				t.Errorf("verdict %s (pending %v): %s\nwant %s because %q", j.Verdict, j.Pending, j.Reason, tt.want, tt.because)
			}
		})
	}
}

// TestJudgeReplaysTheLogAsItStood checks which events each replay reads:
// those the package created by the refusal's end, then the admitted
// write, and that alike refusals of the same log share their replays.
func TestJudgeReplaysTheLogAsItStood(t *testing.T) {
	// Ids of the legacy contract (not positions): the log as it stood is
	// every event created by the refusal, in list order.
	final := []eventlog.Event{
		event("evnt_01Z", eventlog.RunCreated, "", 0, `{}`),         // Z: not a slot id (serialized.SlotOf)
		event("evnt_03Z", eventlog.StepCreated, "step_1", 30, `{}`), // listed before evnt_02Z, created after it
		event("evnt_02Z", eventlog.RunStarted, "", 10, ""),
		event("evnt_04Z", eventlog.StepCompleted, "step_1", 50, `{}`),
	}
	js := []verdict.Judgement{
		refused(eventlog.StepStarted, "step_1", 20, `{}`),
		refused(eventlog.StepStarted, "step_1", 25, `{}`), // the same write, later, on the same log: no new replay
		{Actor: "inv-2", Verdict: verdict.Benign, Reason: "judged before"},
	}
	rt := &logRuntime{}
	got, err := Judge(t.Context(), rt, Run{ID: "wrun_1", Final: final, Verdicts: js}, Options{Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	if rt.calls != 2 {
		t.Errorf("%d replays, want 2 (without and with the write, shared by the two alike refusals)", rt.calls)
	}
	for _, ids := range rt.seen {
		if len(ids) < 2 || ids[0] != "evnt_01Z" || ids[1] != "evnt_02Z" || (len(ids) == 3 && !strings.HasPrefix(ids[2], "evnt_")) || len(ids) > 3 {
			t.Errorf("a replay read %v; want evnt_01Z evnt_02Z (created by the refusal) and, admitted, one minted id", ids)
		}
	}
	if got[2].Reason != "judged before" || got[2].Pending {
		t.Errorf("a judgement made before was changed: %+v", got[2])
	}
	if got[0].Pending || got[1].Pending || got[0].Verdict != got[1].Verdict {
		t.Errorf("alike refusals judged %s and %s", got[0].Verdict, got[1].Verdict)
	}
}

// TestJudgeReplaysASlotLogAsAPrefix: on a log ided by position (5.0's
// slots) the log as it stood is its leading slots written by the refusal
// (a reader then met the empty slot below a written one and read no
// further), and the admitted write takes the position after them, not
// after the final log's last.
func TestJudgeReplaysASlotLogAsAPrefix(t *testing.T) {
	final := []eventlog.Event{
		event("evnt_01", eventlog.RunCreated, "", 0, `{}`),
		event("evnt_02", eventlog.RunStarted, "", 30, ""), // reserved first, written after evnt_03
		event("evnt_03", eventlog.StepCreated, "step_1", 10, `{}`),
		event("evnt_04", eventlog.StepCompleted, "step_1", 50, `{}`),
	}
	rt := &logRuntime{}
	if _, err := Judge(t.Context(), rt, Run{ID: "wrun_1", Final: final, Verdicts: []verdict.Judgement{refused(eventlog.StepStarted, "step_1", 20, `{}`)}}, Options{Workers: 1}); err != nil {
		t.Fatal(err)
	}
	if len(rt.seen) != 2 {
		t.Fatalf("%d replays, want 2", len(rt.seen))
	}
	for _, ids := range rt.seen {
		if ids[0] != "evnt_01" || (len(ids) == 2 && ids[1] != "evnt_02") || len(ids) > 2 {
			t.Errorf("a replay read %v; want evnt_01 and, admitted, evnt_02 (the slot after the log as it stood)", ids)
		}
	}
}

func TestJudgeWithoutEvidence(t *testing.T) {
	noPackage := []eventlog.Event{{ID: "evnt_01", Type: eventlog.RunCreated}}
	noCreated := []eventlog.Event{event("evnt_02", eventlog.RunStarted, "", 10, "")}
	for name, final := range map[string][]eventlog.Event{"no package copy": noPackage, "no run_created": noCreated, "no event": nil} {
		t.Run(name, func(t *testing.T) {
			got, err := Judge(t.Context(), &logRuntime{}, Run{ID: "wrun_1", Final: final, Verdicts: []verdict.Judgement{refused(eventlog.StepCreated, "step_1", 20, `{}`)}}, Options{})
			if err != nil {
				t.Fatal(err)
			}
			if got[0].Verdict != verdict.Unknown || got[0].Pending || !strings.Contains(got[0].Reason, "not judged") {
				t.Errorf("%+v; want unknown, not judged, no longer pending", got[0])
			}
		})
	}
}

// brokenRuntime fails every replay, as a replay host that died does.
type brokenRuntime struct{}

func (brokenRuntime) Replay(context.Context, rerun.RuntimeInvocation) (rerun.RuntimeResult, error) {
	return rerun.RuntimeResult{}, fmt.Errorf("devkit replay host: the host exited")
}

func TestJudgeInterrupted(t *testing.T) {
	final := []eventlog.Event{event("evnt_01", eventlog.RunCreated, "", 0, `{}`)}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	got, err := Judge(ctx, &logRuntime{}, Run{ID: "wrun_1", Final: final, Verdicts: []verdict.Judgement{refused(eventlog.StepCreated, "step_1", 20, `{}`)}}, Options{})
	if err == nil || !got[0].Pending {
		t.Errorf("interrupted: err %v, %+v; want ctx's error and the judgement still pending", err, got[0])
	}
}

func TestCompare(t *testing.T) {
	clean := outcome{writes: []string{"step_created step_2 null"}}
	div := func(at string) outcome { return outcome{diverged: "diverged at " + at, divergedAt: at} }
	failed := func(msg string) outcome { return outcome{diverged: "run_failed " + msg} }
	tests := []struct {
		name          string
		without, with outcome
		want          verdict.Verdict
	}{
		{"both clean, alike", clean, clean, verdict.Benign},
		{"admitted, it diverges", clean, div("evnt_x"), verdict.TruePositive},
		{"admitted, it writes more", clean, outcome{writes: append(clean.writes, "queue q s")}, verdict.TruePositive},
		{"admitted, it writes less", clean, outcome{}, verdict.TruePositive},
		{"diverged before it, alike", div("evnt_1"), div("evnt_1"), verdict.Benign},
		{"diverged before it, elsewhere with it", div("evnt_1"), div("evnt_2"), verdict.TruePositive},
		{"admitted, the divergence goes", div("evnt_1"), clean, verdict.TruePositive},
		{"the same failure, with or without it", failed("USER_ERROR: a"), failed("USER_ERROR: a"), verdict.Benign},
		{"another failure with it", failed("USER_ERROR: a"), failed("USER_ERROR: b"), verdict.TruePositive},
		{"divergences naming no event, told apart by their words", outcome{diverged: "x"}, outcome{diverged: "y"}, verdict.TruePositive},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got, why := compare(5, "evnt_x", tt.without, tt.with); got != tt.want || why == "" {
				t.Errorf("compare = %s (%q), want %s", got, why, tt.want)
			}
		})
	}
}

func TestSameEnd(t *testing.T) {
	tests := []struct {
		t    eventlog.Type
		a, b string
		want bool
	}{
		{eventlog.RunCompleted, `{"output":1,"x":2}`, `{"x":2,"output":1}`, true},
		{eventlog.RunCompleted, `{"output":1}`, `{"output":2}`, false},
		{eventlog.RunFailed, `{"errorCode":"C","error":{"message":"m","stack":"a"}}`, `{"errorCode":"C","error":{"message":"m","stack":"b"}}`, true},
		{eventlog.RunFailed, `{"errorCode":"C","error":"m"}`, `{"errorCode":"D","error":"m"}`, false},
		// 5.0 serializes the thrown value (devalue bytes): told apart by it.
		{eventlog.RunFailed, `{"errorCode":"U","error":` + bytesOf(`devl["boom"]`) + `}`, `{"errorCode":"U","error":` + bytesOf(`devl["bang"]`) + `}`, false},
		{eventlog.RunFailed, `{"errorCode":"U","error":` + bytesOf(`devl["boom"]`) + `}`, `{"errorCode":"U","error":` + bytesOf(`devl["boom"]`) + `}`, true},
	}
	for _, tt := range tests {
		if got := sameEnd(tt.t, json.RawMessage(tt.a), json.RawMessage(tt.b)); got != tt.want {
			t.Errorf("sameEnd(%s, %s, %s) = %v, want %v", tt.t, tt.a, tt.b, got, tt.want)
		}
	}
}

// bytesOf is s as the runtime's JSON carries bytes.
func bytesOf(s string) string {
	b, _ := json.Marshal(map[string]string{"__type": "Uint8Array", "data": base64.StdEncoding.EncodeToString([]byte(s))})
	return string(b)
}

// TestJudgeLeavesPendingWhenTheRuntimeFails: a replay the runtime could
// not make is no evidence: the judgement stays pending (storm --resume
// judges it), and Judge says so.
func TestJudgeLeavesPendingWhenTheRuntimeFails(t *testing.T) {
	final := []eventlog.Event{event("evnt_01", eventlog.RunCreated, "", 0, `{}`)}
	got, err := Judge(t.Context(), brokenRuntime{}, Run{ID: "wrun_1", Final: final, Verdicts: []verdict.Judgement{refused(eventlog.StepCreated, "step_1", 20, `{}`)}}, Options{})
	if !errors.Is(err, ErrReplayFailed) || !strings.Contains(err.Error(), "the host exited") {
		t.Errorf("err = %v, want ErrReplayFailed naming the host's error", err)
	}
	if !got[0].Pending || got[0].Verdict != verdict.Unknown {
		t.Errorf("%+v; want still pending", got[0])
	}
}

// TestJudgeLateRefusalOfALiveRun: a write refused after the final log was
// read, on a run that had not ended, is not judged on that log.
func TestJudgeLateRefusalOfALiveRun(t *testing.T) {
	final := []eventlog.Event{event("evnt_01", eventlog.RunCreated, "", 0, `{}`), event("evnt_02", eventlog.RunStarted, "", 10, "")}
	got, err := Judge(t.Context(), &logRuntime{}, Run{ID: "wrun_1", Final: final, FinalAt: t0.Add(50 * time.Millisecond),
		Verdicts: []verdict.Judgement{refused(eventlog.StepCreated, "step_1", 60, `{}`)}}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got[0].Verdict != verdict.Unknown || got[0].Pending || !strings.Contains(got[0].Reason, "after the run's final log was read") {
		t.Errorf("%+v; want unknown, refused after the final log was read", got[0])
	}
}

// TestAdmittedIDs: the admitted write is ided as the log's package ids
// its events: the next position where they are positions (5.0's slots),
// else a ULID of its time.
func TestAdmittedIDs(t *testing.T) {
	slots := &log{events: []eventlog.Event{{ID: "evnt_1"}, {ID: "evnt_3"}, {ID: "evnt_2"}}}
	if id, err := slots.nextID(3, nil, t0); err != nil || id != "evnt_4" {
		t.Errorf("slots: %q, %v; want evnt_4", id, err)
	}
	padded := &log{events: []eventlog.Event{{ID: "evnt_00000000000000000000000007"}}}
	if id, _ := padded.nextID(1, nil, t0); id != "evnt_00000000000000000000000008" {
		t.Errorf("padded slots: %q; want evnt_00000000000000000000000008", id)
	}
	ulids := &log{events: []eventlog.Event{{ID: "evnt_01M95N7KDRWCESS9JJFD5RES1X"}}}
	id, err := ulids.nextID(1, []byte("w"), t0)
	if err != nil || len(id) != 31 || !strings.HasPrefix(id, "evnt_01") {
		t.Errorf("ulids: %q, %v; want evnt_ and a ULID of 2026", id, err)
	}
	if again, _ := ulids.nextID(1, []byte("w"), t0); again != id {
		t.Errorf("the same write on the same log admitted as %s and %s", id, again)
	}
}
