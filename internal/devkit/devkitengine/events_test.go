package devkitengine

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stormctl/stormctl/internal/eventlog"
	"github.com/stormctl/stormctl/internal/history"
	"github.com/stormctl/stormctl/worlds/devkitworld"
	"github.com/stormctl/stormctl/worlds/devkitworld/sidecar"
)

// TestToEvent: the package's ids, positions and times are kept; payloads
// are what the pipeline reads (a run's input, output, failure code and
// message); a hook's token is the scenario's.
func TestToEvent(t *testing.T) {
	t.Parallel()
	created := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name    string
		in      devkitworld.PackageEvent
		wantSeq int64
		payload string
		token   string
		minted  time.Time
	}{
		{name: "run_created carries the input",
			in:      devkitworld.PackageEvent{EventID: "evnt_01KBN3ZP000000000000000000", EventType: "run_created", EventData: json.RawMessage(`{"input":{"n":3},"workflowName":"w"}`), CreatedAt: created},
			payload: `{"n":3}`, minted: time.UnixMilli(1764849000448).UTC()},
		{name: "run_completed wraps the output",
			in:      devkitworld.PackageEvent{EventID: "evnt_x", EventType: "run_completed", EventData: json.RawMessage(`{"output":[1,2]}`), CreatedAt: created},
			payload: `{"output":[1,2]}`, minted: created},
		{name: "a 5.0 slot id is a position",
			in:      devkitworld.PackageEvent{EventID: "evnt_00000000000000000000000007", EventType: "step_started", CreatedAt: created},
			wantSeq: 7, payload: ``, minted: created},
		{name: "run_completed without output",
			in:      devkitworld.PackageEvent{EventID: "evnt_x", EventType: "run_completed", CreatedAt: created},
			payload: `{"output":null}`, minted: created},
		{name: "run_failed takes the runtime's code and message",
			in:      devkitworld.PackageEvent{EventID: "evnt_12", EventType: "run_failed", EventData: json.RawMessage(`{"errorCode":"CORRUPTED_EVENT_LOG","error":{"message":"Unconsumed event in event log: eventId=evnt_9","stack":"..."}}`), CreatedAt: created},
			wantSeq: 12, payload: `{"code":"CORRUPTED_EVENT_LOG","message":"Unconsumed event in event log: eventId=evnt_9"}`, minted: created},
		{name: "run_failed with a string error",
			in:      devkitworld.PackageEvent{EventID: "evnt_x", EventType: "run_failed", EventData: json.RawMessage(`{"error":"boom"}`), CreatedAt: created},
			payload: `{"code":"","message":"boom"}`, minted: created},
		{name: "hook_created's token is the scenario's",
			in:      devkitworld.PackageEvent{EventID: "evnt_x", EventType: "hook_created", CorrelationID: "hook_1", EventData: json.RawMessage(`{"token":"wrun_A:r0-b1"}`), CreatedAt: created},
			payload: `{"token":"wrun_A:r0-b1"}`, token: "r0-b1", minted: created},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.in.RunID = "wrun_A"
			e := toEvent(tc.in, "wrun_A")
			if e.ID != tc.in.EventID || e.RunID != "wrun_A" || string(e.Type) != tc.in.EventType || e.CorrelationID != tc.in.CorrelationID {
				t.Errorf("identity %+v, want the package's", e)
			}
			if e.Seq != tc.wantSeq {
				t.Errorf("seq %d, want %d", e.Seq, tc.wantSeq)
			}
			if string(e.Payload) != tc.payload {
				t.Errorf("payload %s, want %s", e.Payload, tc.payload)
			}
			if e.Token != tc.token {
				t.Errorf("token %q, want %q", e.Token, tc.token)
			}
			if tc.name == "run_created carries the input" {
				if got, err := eventlog.MintTime(tc.in.EventID); err != nil || !e.MintedAt.Equal(got) {
					t.Errorf("minted %v, want the ULID's time %v (%v)", e.MintedAt, got, err)
				}
			} else if !e.MintedAt.Equal(tc.minted) {
				t.Errorf("minted %v, want %v", e.MintedAt, tc.minted)
			}
		})
	}
}

// TestCursorID: every cursor form the packages use names the event it
// stands after.
func TestCursorID(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"":                                    "",
		"evnt_01ABC":                          "evnt_01ABC",
		"key:evnt_01ABC":                      "evnt_01ABC",
		"eid:evnt_00000000000000000000000044": "evnt_00000000000000000000000044",
		"2026-12-04T12:00:00.000Z|evnt_01ABC": "evnt_01ABC",
		"a2V5OmV2bnRfMDFBQkM=":                "evnt_01ABC", // base64 of key:evnt_01ABC
		"opaque":                              "opaque",
	} {
		if got := cursorID(in); got != want {
			t.Errorf("cursorID(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestToOp: a create notice is an append of what the package wrote, with
// its times; a list notice a read of the page it returned; the package's
// errors are sorted into stormctl's classes.
func TestToOp(t *testing.T) {
	t.Parallel()
	start, end := 1764849600000.5, 1764849600012.25
	create := notice{Notice: "op", Op: "create", RunID: "wrun_A", Actor: "inv-3", Start: start, End: end,
		Args:   json.RawMessage(`{"eventType":"step_created","correlationId":"step_1"}`),
		Result: json.RawMessage(`{"eventId":"evnt_01KBN3ZP000000000000000000","runId":"wrun_A","eventType":"step_created","correlationId":"step_1","createdAt":"2026-12-04T12:00:00Z"}`)}
	op, err := toOp(create, "wrun_A")
	if err != nil {
		t.Fatal(err)
	}
	if op.Kind != history.OpAppend || op.Actor != "inv-3" || op.RunID != "wrun_A" || len(op.Wrote) != 1 {
		t.Fatalf("create op %+v", op)
	}
	if w := op.Wrote[0]; w.ID != "evnt_01KBN3ZP000000000000000000" || w.Type != eventlog.StepCreated || w.CorrelationID != "step_1" || !w.CommittedAt.Equal(msTime(end)) {
		t.Errorf("wrote %+v", w)
	}
	if !op.Start.Equal(msTime(start)) || op.End.Sub(op.Start) != 11750*time.Microsecond {
		t.Errorf("times %v .. %v", op.Start, op.End)
	}

	// A run_started's answer carries the run entity: its startedAt (which
	// seeds core's correlation ids) is recorded for a replay to answer.
	started := create
	started.Args = json.RawMessage(`{"eventType":"run_started"}`)
	started.Result = json.RawMessage(`null`)
	if err := json.Unmarshal([]byte(`{"run":{"startedAt":"2026-12-04T12:00:01.234Z"}}`), &started); err != nil {
		t.Fatal(err)
	}
	op, err = toOp(started, "wrun_A")
	if err != nil || op.Wrote[0].ID != "" || !op.RunStartedAt.Equal(time.Date(2026, 12, 4, 12, 0, 1, 234e6, time.UTC)) {
		t.Errorf("a run_started on a running run: op %+v, err %v; want no event and the run's startedAt", op, err)
	}

	conflict := create
	conflict.Result, conflict.Error = nil, &sidecar.Error{Name: "EntityConflictError", Message: "step already exists"}
	op, err = toOp(conflict, "wrun_A")
	if !errors.Is(err, eventlog.ErrConflict) || op.Err != "conflict" || op.Wrote[0].ID != "" || op.Wrote[0].Type != eventlog.StepCreated {
		t.Errorf("a conflict: op %+v, err %v", op, err)
	}
	lost := create
	lost.Result, lost.Error = nil, &sidecar.Error{Name: "Error", Message: "connect ECONNREFUSED", Code: "ECONNREFUSED"}
	if _, err := toOp(lost, "wrun_A"); !errors.Is(err, eventlog.ErrUnavailable) {
		t.Errorf("a refused connection = %v, want unavailable", err)
	}

	// The host reports a list's arguments as the runtime passed them:
	// {pagination: {cursor, limit, sortOrder}, resolveData}.
	list := notice{Notice: "op", Op: "list", RunID: "wrun_A", Actor: "inv-4", Start: start, End: end,
		Args:   json.RawMessage(`{"pagination":{"cursor":"key:evnt_00000000000000000000000044","limit":20,"sortOrder":"asc"},"resolveData":"all"}`),
		Result: json.RawMessage(`{"events":[{"eventId":"evnt_00000000000000000000000045","eventType":"step_started","createdAt":"2026-12-04T12:00:00Z"},{"eventId":"evnt_00000000000000000000000046","eventType":"step_completed","createdAt":"2026-12-04T12:00:00Z"}],"cursor":"key:evnt_00000000000000000000000046","hasMore":true}`)}
	op, err = toOp(list, "wrun_A")
	if err != nil {
		t.Fatal(err)
	}
	if op.Kind != history.OpList || op.After != (eventlog.Cursor{ID: "evnt_00000000000000000000000044", Seq: 44}) || op.Limit != 20 || op.Read == nil || op.Read.N != 2 || !op.Read.More || op.Read.Last.Seq != 46 || op.Snapshot {
		t.Errorf("list op %+v read %+v", op, op.Read)
	}
	first := list
	first.Args = json.RawMessage(`{"pagination":{"sortOrder":"asc"},"resolveData":"all"}`)
	if op, err = toOp(first, "wrun_A"); err != nil || !op.After.IsZero() {
		t.Errorf("a list without a cursor: after %+v, err %v; want the start", op.After, err)
	}
	bad := list
	bad.Args = json.RawMessage(`{"pagination":{"cursor":7}}`)
	if _, err := toOp(bad, "wrun_A"); err == nil {
		t.Error("a list whose cursor cannot be read is recorded as a read from the start")
	}
	if _, err := toOp(notice{Notice: "op", Op: "delete"}, ""); err == nil {
		t.Error("an unknown op is recorded")
	}
}

// TestSnapshotOp: the events a create's answer carried are a read by
// themselves, from where they begin, as world-local 5.0 answers them
// (shapes as the host reported them in a beta step-storm): a run_started's
// preload from the start, a delta after the writer's sinceCursor, the
// slots a write skipped above the writer's eventCount (no cursor in the
// answer); no snapshot, or a failed create, is no read.
func TestSnapshotOp(t *testing.T) {
	t.Parallel()
	ev := func(pos int) string {
		return fmt.Sprintf(`{"eventId":"evnt_%026d","runId":"wrun_A","eventType":"step_created","createdAt":"2026-12-04T12:00:00Z"}`, pos)
	}
	page := func(cursor string, more bool, from, to int) *listResult {
		var r listResult
		var evs []string
		for p := from; p <= to; p++ {
			evs = append(evs, ev(p))
		}
		raw := fmt.Sprintf(`{"events":[%s],"cursor":%s,"hasMore":%t}`, strings.Join(evs, ","), cursor, more)
		if err := json.Unmarshal([]byte(raw), &r); err != nil {
			t.Fatal(err)
		}
		return &r
	}
	for _, tc := range []struct {
		name      string
		args      string
		snap      *listResult
		failed    bool
		wantOK    bool
		wantAfter eventlog.Cursor
		wantN     int
		wantMore  bool
		firstSeq  int64
		lastSeq   int64
	}{
		{name: "run_started preload: the log from the start",
			args: `{"eventType":"run_started","params":{"eventCount":1}}`, snap: page(`"key:evnt_00000000000000000000000030"`, false, 1, 30),
			wantOK: true, wantN: 30, firstSeq: 1, lastSeq: 30},
		{name: "delta after the writer's cursor",
			args: `{"eventType":"step_created","params":{"eventCount":44,"sinceCursor":"key:evnt_00000000000000000000000044"}}`, snap: page(`"key:evnt_00000000000000000000000047"`, false, 45, 47),
			wantOK: true, wantAfter: eventlog.Cursor{ID: "evnt_00000000000000000000000044", Seq: 44}, wantN: 3, firstSeq: 45, lastSeq: 47},
		{name: "skipped slots above the writer's eventCount",
			args: `{"eventType":"step_completed","params":{"eventCount":61}}`, snap: page(`null`, false, 62, 63),
			wantOK: true, wantAfter: eventlog.Cursor{ID: "evnt_00000000000000000000000061", Seq: 61}, wantN: 2, firstSeq: 62, lastSeq: 63},
		{name: "skipped slots, a lower bound (hasMore kept)",
			args: `{"eventType":"step_completed","params":{"eventCount":61}}`, snap: page(`null`, true, 63, 63),
			wantOK: true, wantAfter: eventlog.Cursor{ID: "evnt_00000000000000000000000061", Seq: 61}, wantN: 1, wantMore: true, firstSeq: 63, lastSeq: 63},
		{name: "no snapshot", args: `{"eventType":"step_created","params":{"eventCount":44}}`},
		{name: "a failed create", args: `{"eventType":"step_created","params":{"sinceCursor":"key:evnt_00000000000000000000000044"}}`,
			snap: page(`null`, false, 45, 45), failed: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			n := notice{Notice: "op", Op: "create", RunID: "wrun_A", Actor: "inv-26", Start: 1000, End: 1010, Args: json.RawMessage(tc.args), Snapshot: tc.snap}
			if tc.failed {
				n.Error = &sidecar.Error{Name: "Error", Message: "boom"}
			}
			op, ok := snapshotOp(n, "wrun_A")
			if ok != tc.wantOK {
				t.Fatalf("snapshotOp ok = %v, want %v", ok, tc.wantOK)
			}
			if !ok {
				return
			}
			if op.Kind != history.OpList || !op.Snapshot || op.Actor != "inv-26" || !op.Start.Equal(msTime(1010)) {
				t.Errorf("op %+v", op)
			}
			if op.After != tc.wantAfter {
				t.Errorf("after %+v, want %+v", op.After, tc.wantAfter)
			}
			if r := op.Read; r.N != tc.wantN || r.More != tc.wantMore || r.First.Seq != tc.firstSeq || r.Last.Seq != tc.lastSeq {
				t.Errorf("read %+v, want n=%d more=%v %d..%d", r, tc.wantN, tc.wantMore, tc.firstSeq, tc.lastSeq)
			}
		})
	}
}

// TestBatchOps: a createBatch notice is one append per event, in request
// order, numbered with the call, each with its own answer: a written
// event, a 409 (a conflict) or another refusal; a call that failed whole
// gives every event its error; a notice it cannot read records nothing.
func TestBatchOps(t *testing.T) {
	t.Parallel()
	args := json.RawMessage(`{"events":[
		{"event":{"eventType":"step_created","correlationId":"step_1","eventData":{"stepName":"settle"}}},
		{"event":{"eventType":"step_started","correlationId":"step_1"}},
		{"event":{"eventType":"wait_created","correlationId":"wait_2","eventData":{"resumeAt":"2026-12-06T12:00:00Z"}}}],"params":{}}`)
	n := notice{Notice: "op", Op: "createBatch", Batch: 7, RunID: "wrun_A", Actor: "inv-2", Start: 1764849600000, End: 1764849600040, Args: args,
		Result: json.RawMessage(`{"results":[
			{"status":200,"event":{"eventId":"evnt_00000000000000000000000005","runId":"wrun_A","eventType":"step_created","correlationId":"step_1","createdAt":"2026-12-06T12:00:00Z"}},
			{"status":409,"error":"conflict","message":"step step_1 is running"},
			{"status":400,"error":"invalid_request","message":"resumeAt in the past"}]}`)}
	ops, errs, err := batchOps(n, "")
	if err != nil || len(ops) != 3 || len(errs) != 3 {
		t.Fatalf("batchOps = %d ops, %d errs, %v; want 3, 3, nil", len(ops), len(errs), err)
	}
	for i, op := range ops {
		if op.Kind != history.OpAppend || op.Batch != 7 || op.Actor != "inv-2" || len(op.Wrote) != 1 || !op.End.Equal(msTime(n.End)) {
			t.Errorf("op %d = %+v", i, op)
		}
	}
	if w := ops[0].Wrote[0]; w.ID != "evnt_00000000000000000000000005" || w.Seq != 5 || w.Type != eventlog.StepCreated || errs[0] != nil || ops[0].Err != "" {
		t.Errorf("the written event: %+v, err %v", w, errs[0])
	}
	if !errors.Is(errs[1], eventlog.ErrConflict) || ops[1].Err != "conflict" || ops[1].Status != 409 || ops[1].BatchFailed || ops[1].Wrote[0].ID != "" || ops[1].Wrote[0].Type != eventlog.StepStarted {
		t.Errorf("the 409: op %+v, err %v; want a conflict", ops[1], errs[1])
	}
	if !errors.Is(errs[2], eventlog.ErrRefused) || ops[2].Err != "refused" || len(ops[2].Wrote[0].Payload) == 0 {
		t.Errorf("the 400: op %+v, err %v; want a refusal keeping what was asked", ops[2], errs[2])
	}

	failed := n
	failed.Result, failed.Error = nil, &sidecar.Error{Name: "StreamError", Message: "POST createEventBatch transport failure after 3450ms (UND_ERR_REQ_RETRY)", Code: "STREAM_ERROR"}
	ops, errs, err = batchOps(failed, "")
	if err != nil || len(ops) != 3 {
		t.Fatalf("a failed call: %d ops, %v", len(ops), err)
	}
	for i := range ops {
		if !errors.Is(errs[i], eventlog.ErrUnavailable) || ops[i].Wrote[0].ID != "" || !ops[i].BatchFailed {
			t.Errorf("event %d of a call the transport failed: op %+v, err %v; want unavailable", i, ops[i], errs[i])
		}
	}

	for name, bad := range map[string]notice{
		"results short of the events": {Op: "createBatch", Args: args, Result: json.RawMessage(`{"results":[]}`)},
		"a result that is no object":  {Op: "createBatch", Args: args, Result: json.RawMessage(`[1,2,3]`)},
		"no events":                   {Op: "createBatch", Args: json.RawMessage(`{"events":[]}`), Result: json.RawMessage(`{"results":[]}`)},
		"a success without its event": {Op: "createBatch", Args: args, Result: json.RawMessage(`{"results":[{"status":200},{"status":200},{"status":200}]}`)},
	} {
		if ops, _, err := batchOps(bad, ""); err == nil || len(ops) != 0 {
			t.Errorf("%s: %d ops, err %v; want none and an error", name, len(ops), err)
		}
	}
	if _, err := toOp(n, ""); err == nil {
		t.Error("toOp records a createBatch notice as one op")
	}
}
