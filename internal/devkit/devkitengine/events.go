package devkitengine

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/stormctl/stormctl/forensics"
	"github.com/stormctl/stormctl/internal/devkit/devkitscen"
	"github.com/stormctl/stormctl/internal/devkit/serialized"
	"github.com/stormctl/stormctl/internal/eventlog"
	"github.com/stormctl/stormctl/internal/history"
	"github.com/stormctl/stormctl/worlds/devkitworld"
	"github.com/stormctl/stormctl/worlds/devkitworld/sidecar"
)

// toEvent maps a package event onto stormctl's, for the run whose hook
// tokens carry prefix token. The id is the package's; so is the mint
// time, read off the id where it holds one (a ULID), else the package's
// createdAt; a slot id (evnt_<position>) also gives the event's position
// (Seq). Payloads are what the pipeline and the scenario checks read: a
// run_created's input, a run_completed's {"output"}, a run_failed's
// {"code","message"} (the runtime's errorCode and error message); other
// types keep the package's eventData.
func toEvent(pe devkitworld.PackageEvent, token string) eventlog.Event {
	e := eventlog.Event{RunID: pe.RunID, ID: pe.EventID, Type: eventlog.Type(pe.EventType), CorrelationID: pe.CorrelationID, MintedAt: pe.CreatedAt}
	if pos, ok := serialized.SlotOf(pe.EventID); ok {
		e.Seq = pos // a slot id: its time is the package's createdAt
	} else if at, err := eventlog.MintTime(pe.EventID); err == nil {
		e.MintedAt = at
	}
	var data map[string]json.RawMessage
	if len(pe.EventData) > 0 {
		_ = json.Unmarshal(pe.EventData, &data) // not an object: no fields
	}
	switch e.Type {
	case eventlog.RunCreated:
		e.Payload = runInput(data["input"])
	case eventlog.RunCompleted:
		out, err := serialized.Decode(data["output"])
		if err != nil {
			out, _ = json.Marshal(map[string]string{"undecodable": err.Error()})
		}
		e.Payload, _ = json.Marshal(map[string]json.RawMessage{"output": orNull(out)})
	case eventlog.RunFailed:
		e.Payload, _ = json.Marshal(serialized.RunFailure(pe.EventData))
	case eventlog.HookCreated:
		var tok string
		_ = json.Unmarshal(data["token"], &tok)
		if t, ok := devkitscen.ScenarioToken(token, tok); ok {
			tok = t
		}
		e.Token = tok
		e.Payload = pe.EventData
	default:
		e.Payload = pe.EventData
	}
	return e
}

// runInput is a run's input as the scenario gave it: the runtime keeps the
// workflow's arguments (serialized, an array whose first is the input).
func runInput(raw json.RawMessage) json.RawMessage {
	dec, err := serialized.Decode(raw)
	if err != nil {
		return raw
	}
	var args []json.RawMessage
	if len(dec) > 0 && dec[0] == '[' && json.Unmarshal(dec, &args) == nil && len(args) > 0 {
		return args[0]
	}
	return dec
}

func orNull(raw json.RawMessage) json.RawMessage {
	if len(raw) == 0 {
		return json.RawMessage("null")
	}
	return raw
}

// notice is a line the host writes of its own accord: an operation at the
// world boundary ("op") or a queue delivery ("invocation").
type notice struct {
	Notice string          `json:"notice"`
	Op     string          `json:"op"`
	RunID  string          `json:"runId"`
	Actor  string          `json:"actor"`
	Start  float64         `json:"start"`
	End    float64         `json:"end"`
	Args   json.RawMessage `json:"args"`
	Result json.RawMessage `json:"result"`
	Error  *sidecar.Error  `json:"error"`
	// Snapshot is the log a create's answer carried besides its event
	// (world-local answers run_started with the run's whole log, which
	// the runtime replays instead of listing): a read as much as a list.
	Snapshot *listResult `json:"snapshot"`
	// Run is the run entity a create's answer carried (run_started's):
	// its startedAt seeds the runtime's correlation ids.
	Run *struct {
		StartedAt time.Time `json:"startedAt"`
	} `json:"run"`
	// Kind, MessageID, Attempt and Body are an invocation notice's: the
	// delivery's kind ("flow" or "step"), message id, attempt and body.
	Kind      string `json:"kind"`
	MessageID string `json:"messageId"`
	Attempt   int    `json:"attempt"`
	Body      *struct {
		Data        []byte `json:"data"`
		ContentType string `json:"contentType"`
	} `json:"body"`
	// Skipped says why the host did not hand a delivery to the runtime
	// (a cancelled run's): it made no call.
	Skipped string `json:"skipped"`
	// Batch numbers a createBatch call, unique within its host (and so
	// within a run, which one host carries).
	Batch int `json:"batch"`
	// Implicit are the events the package published in its storage
	// during the call besides the one it returned (5.0: a step_started
	// with no step_created before it writes a synthetic step_created
	// first; a run_started whose run_created is missing writes it), as
	// stored. Each is read on its own (implicitOps), so one the host could
	// not parse does not cost the call's own record.
	Implicit []json.RawMessage `json:"implicit"`
}

// msTime is a host time: milliseconds since the Unix epoch, fractional.
func msTime(ms float64) time.Time {
	if ms <= 0 {
		return time.Time{}
	}
	return time.UnixMicro(int64(ms * 1000))
}

// createArgs are the fields of an events.create the history keeps, and
// the params that say what log its answer's snapshot carries.
type createArgs struct {
	EventType     string       `json:"eventType"`
	CorrelationID string       `json:"correlationId"`
	Params        createParams `json:"params"`
	// EventData and SpecVersion are what the runtime asked to write: kept
	// for a create the world refused, which a counterfactual replay admits.
	EventData   json.RawMessage `json:"eventData"`
	SpecVersion json.RawMessage `json:"specVersion"`
}

// refusedData is what the history keeps of a refused create's event:
// its eventData and specVersion (verdict.RefusedWrite.Data).
func (a createArgs) refusedData() json.RawMessage {
	b, err := json.Marshal(struct {
		EventData   json.RawMessage `json:"eventData,omitempty"`
		SpecVersion json.RawMessage `json:"specVersion,omitempty"`
	}{a.EventData, a.SpecVersion})
	if err != nil {
		return nil
	}
	return b
}

// createParams are a 5.0 create's params that shape its answer's events:
// sinceCursor asks for the delta after the writer's cursor; eventCount is
// the highest slot the writer held (world-local then reports the slots its
// write skipped above it).
type createParams struct {
	SinceCursor *string `json:"sinceCursor"`
	EventCount  *int64  `json:"eventCount"`
}

// listArgs are an events.list's arguments as the host reports them: the
// runtime's pagination ({cursor, limit, sortOrder}).
type listArgs struct {
	Pagination struct {
		Cursor *string `json:"cursor"`
		Limit  int     `json:"limit"`
	} `json:"pagination"`
}

// listResult is a page as the package answered it.
type listResult struct {
	Events []devkitworld.PackageEvent `json:"events"`
	Data   []devkitworld.PackageEvent `json:"data"`
	// IDs are the events' ids, in order, as the host sends a read's
	// result (docs/host-protocol.md): a read's summary needs no more.
	IDs     []string `json:"ids"`
	Cursor  *string  `json:"cursor"`
	HasMore bool     `json:"hasMore"`
}

// toOp turns an op notice into the storm's history: an append of the
// events a create wrote (ids, positions and times the package's), or a
// read of the page a list returned (from the cursor the runtime passed,
// normalised to the event it stands after). err is the notice's error,
// sorted into stormctl's classes.
func toOp(n notice, token string) (history.Op, error) {
	op := history.Op{Actor: n.Actor, RunID: n.RunID, Start: msTime(n.Start), End: msTime(n.End)}
	var err error
	if n.Error != nil {
		n.Error.Op = "events." + n.Op
		err = devkitworld.Classify(n.Op, n.RunID, nil, n.Error)
		op.Err, op.ErrText = eventlog.Classify(err), err.Error()
	}
	switch n.Op {
	case "create", "write": // write: an event the package wrote outside any call, reported by itself
		op.Kind = history.OpAppend
		var a createArgs
		if len(n.Args) > 0 {
			if jerr := json.Unmarshal(n.Args, &a); jerr != nil {
				return op, fmt.Errorf("devkit engine: unreadable create notice: %w", jerr)
			}
		}
		w := history.OpEvent{Type: eventlog.Type(a.EventType), CorrelationID: a.CorrelationID}
		if n.Error != nil && forensics.IsRefusal(op) {
			w.Payload = a.refusedData()
		}
		if n.Error == nil && len(n.Result) > 0 && string(n.Result) != "null" {
			var pe devkitworld.PackageEvent
			if jerr := json.Unmarshal(n.Result, &pe); jerr != nil {
				return op, fmt.Errorf("devkit engine: unreadable create result: %w", jerr)
			}
			e := toEvent(pe, token)
			w.Type, w.CorrelationID = e.Type, e.CorrelationID
			w.ID, w.Seq, w.MintedAt, w.CommittedAt = e.ID, e.Seq, e.MintedAt, op.End
		}
		op.Wrote = []history.OpEvent{w}
		if n.Run != nil {
			op.RunStartedAt = n.Run.StartedAt
		}
	case "createBatch":
		return op, errors.New("devkit engine: a createBatch notice is recorded by batchOps, one append per event")
	case "list":
		op.Kind = history.OpList
		var a listArgs
		if len(n.Args) > 0 && string(n.Args) != "null" {
			if jerr := json.Unmarshal(n.Args, &a); jerr != nil {
				// A cursor read as the start would judge an incremental read as a whole load.
				return op, fmt.Errorf("devkit engine: unreadable list notice: %w", jerr)
			}
		}
		if a.Pagination.Cursor != nil {
			op.After = cursorOf(*a.Pagination.Cursor)
		}
		op.Limit = a.Pagination.Limit
		if n.Error == nil {
			var r listResult
			if jerr := json.Unmarshal(n.Result, &r); jerr != nil {
				return op, fmt.Errorf("devkit engine: unreadable list result: %w", jerr)
			}
			op.Read = summarize(r)
		}
	default:
		return op, fmt.Errorf("devkit engine: unknown op notice %q", n.Op)
	}
	return op, err
}

// batchArgs are a createBatch call's arguments as the host noticed them.
type batchArgs struct {
	Events []struct {
		Event createArgs `json:"event"`
	} `json:"events"`
}

// batchItem is one event's answer in a createBatch result: status 200
// with the committed event, or the status and error code its single
// create would have failed with.
type batchItem struct {
	Status  int                       `json:"status"`
	Error   *string                   `json:"error"`
	Message string                    `json:"message"`
	Event   *devkitworld.PackageEvent `json:"event"`
}

// batchOps records a createBatch call (5.0's events.createBatch): one
// append per event it carried, in request order, each with the call's
// start and end and its own answer, all numbered with the call's Batch.
// A batch's events succeed or are refused one by one (a 409 is the
// conflict its single create would have met, another 4xx a refusal, a
// 5xx the store's failure), so each append carries its own error: errs[i]
// is ops[i]'s, sorted into stormctl's classes as a single create's is. A
// call that failed whole gives every append the call's error. A notice
// it cannot read returns no ops and an error: nothing is recorded as if
// the call wrote nothing.
func batchOps(n notice, token string) (ops []history.Op, errs []error, err error) {
	callFailed := n.Error != nil
	var a batchArgs
	if jerr := json.Unmarshal(n.Args, &a); jerr != nil || len(a.Events) == 0 {
		return nil, nil, fmt.Errorf("devkit engine: unreadable createBatch notice of %s (%s): %v, %d events", n.Actor, n.RunID, jerr, len(a.Events))
	}
	var callErr error
	var res struct {
		Results []batchItem `json:"results"`
	}
	if n.Error != nil {
		n.Error.Op = "events.createBatch"
		callErr = devkitworld.Classify(n.Op, n.RunID, nil, n.Error)
	} else if jerr := json.Unmarshal(n.Result, &res); jerr != nil || len(res.Results) != len(a.Events) {
		return nil, nil, fmt.Errorf("devkit engine: unreadable createBatch result of %s (%s): %v, %d results for %d events",
			n.Actor, n.RunID, jerr, len(res.Results), len(a.Events))
	}
	for i, ev := range a.Events {
		op := history.Op{Kind: history.OpAppend, Actor: n.Actor, RunID: n.RunID, Start: msTime(n.Start), End: msTime(n.End), Batch: n.Batch, BatchFailed: callFailed}
		w := history.OpEvent{Type: eventlog.Type(ev.Event.EventType), CorrelationID: ev.Event.CorrelationID}
		itemErr := callErr
		if callErr == nil {
			item := res.Results[i]
			switch {
			case item.Error != nil:
				se := &sidecar.Error{Op: "events.createBatch", Name: "WorkflowWorldError", Message: *item.Error + ": " + item.Message, Status: item.Status}
				if item.Status == 409 {
					se.Name = "EntityConflictError"
				}
				itemErr = devkitworld.Classify(n.Op, n.RunID, nil, se)
				op.Status = item.Status
			case item.Event == nil:
				return nil, nil, fmt.Errorf("devkit engine: createBatch result %d of %s (%s) is a success without its event", i+1, n.Actor, n.RunID)
			default:
				e := toEvent(*item.Event, token)
				w.Type, w.CorrelationID = e.Type, e.CorrelationID
				w.ID, w.Seq, w.MintedAt, w.CommittedAt = e.ID, e.Seq, e.MintedAt, op.End
			}
		}
		if itemErr != nil {
			op.Err, op.ErrText = eventlog.Classify(itemErr), itemErr.Error()
			if forensics.IsRefusal(op) {
				w.Payload = ev.Event.refusedData()
			}
		}
		op.Wrote = []history.OpEvent{w}
		ops = append(ops, op)
		errs = append(errs, itemErr)
	}
	return ops, errs, nil
}

// summarize is the history's account of a page the package returned.
func summarize(r listResult) *history.ReadSummary {
	p := eventlog.Page{More: r.HasMore}
	ids := r.IDs
	for _, pe := range append(r.Events, r.Data...) {
		ids = append(ids, pe.EventID)
	}
	for _, id := range ids {
		// A read's summary is its events' ids and positions: no payload
		// of them is decoded (the final log's are).
		e := eventlog.Event{ID: id}
		if pos, ok := serialized.SlotOf(id); ok {
			e.Seq = pos
		}
		p.Events = append(p.Events, e)
	}
	return history.Summarize(p)
}

// snapshotOp is the read a create's answer made when it carried events
// besides its own (notice.Snapshot): a load by itself, at the create's
// end, from where the answer's events begin. What they are the create's
// params say, as the package answers them: with sinceCursor, the delta
// after that cursor (what a list from it would return); else, with
// eventCount and no cursor in the answer, the slots the write skipped
// above the highest slot the writer held (world-local's report: a window
// after slot eventCount, below the write); else the log from the start (a
// run_started's preload).
func snapshotOp(n notice, token string) (history.Op, bool) {
	if n.Snapshot == nil || n.Error != nil {
		return history.Op{}, false
	}
	op := history.Op{Kind: history.OpList, Actor: n.Actor, RunID: n.RunID, Start: msTime(n.End), End: msTime(n.End),
		Read: summarize(*n.Snapshot), Snapshot: true}
	var a createArgs
	if len(n.Args) > 0 {
		_ = json.Unmarshal(n.Args, &a) // toOp refused the notice if unreadable
	}
	switch p := a.Params; {
	case p.SinceCursor != nil:
		op.After = cursorOf(*p.SinceCursor)
	case p.EventCount != nil && *p.EventCount > 0 && n.Snapshot.Cursor == nil:
		op.After = eventlog.Cursor{ID: eventlog.SlotID(*p.EventCount), Seq: *p.EventCount}
	}
	return op, true
}

// implicitOps are the appends the package made inside call n besides the
// event it answered with (notice.Implicit): one append per event, by the
// invocation that made the call, with the call's start and end (the
// event committed in between: its CommittedAt is the call's end, as for
// the call's own event), marked Implicit. An event was published in the
// store whether or not the call then failed (world-local links its file,
// world-postgres's INSERT reported its row), so each is an append that
// committed. An entry without an event id (the host could not read the
// event file or the INSERT) is an error naming it, after the others.
func implicitOps(n notice, token string) ([]history.Op, error) {
	var ops []history.Op
	var errs []error
	for k, raw := range n.Implicit {
		var pe devkitworld.PackageEvent
		if err := json.Unmarshal(raw, &pe); err != nil || pe.EventID == "" {
			errs = append(errs, fmt.Errorf("devkit engine: implicit write %d of %s's events.%s (%s) has no readable event: %.200s",
				k+1, n.Actor, n.Op, n.RunID, raw))
			continue
		}
		e := toEvent(pe, token)
		run := e.RunID
		if run == "" {
			run = n.RunID
		}
		ops = append(ops, history.Op{Kind: history.OpAppend, Actor: n.Actor, RunID: run, Start: msTime(n.Start), End: msTime(n.End),
			Implicit: true, Wrote: []history.OpEvent{{Type: e.Type, CorrelationID: e.CorrelationID, ID: e.ID, Seq: e.Seq,
				MintedAt: e.MintedAt, CommittedAt: msTime(n.End)}}})
	}
	return ops, errors.Join(errs...)
}

// cursorOf is the event a package's page cursor stands after: its id
// (cursorID) and, for a slot id, its position, which orders a slot log.
func cursorOf(c string) eventlog.Cursor {
	id := cursorID(c)
	cur := eventlog.Cursor{ID: id}
	if pos, ok := serialized.SlotOf(id); ok {
		cur.Seq = pos
	}
	return cur
}

// cursorID normalises a package's page cursor to the id of the event it
// stands after ("" for the start): the packages' cursors are an event id,
// "key:<id>", "eid:<id>", "<createdAt>|<id>", or one of those in base64.
func cursorID(c string) string {
	if id, ok := plainCursorID(c); ok {
		return id
	}
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawURLEncoding, base64.URLEncoding} {
		if b, err := enc.DecodeString(c); err == nil {
			if id, ok := plainCursorID(string(b)); ok {
				return id
			}
		}
	}
	return c // opaque: kept as it is, so a read from it is still told apart
}

// plainCursorID reads a cursor that is not encoded.
func plainCursorID(c string) (string, bool) {
	switch {
	case c == "":
		return "", true
	case strings.HasPrefix(c, "evnt_"), strings.HasPrefix(c, "wevt_"):
		return c, true
	case strings.HasPrefix(c, "key:"):
		return strings.TrimPrefix(c, "key:"), true
	case strings.HasPrefix(c, "eid:"): // world-vercel 5.0's resume point after a stream cut short
		return strings.TrimPrefix(c, "eid:"), true
	case strings.Contains(c, "|"):
		return c[strings.LastIndexByte(c, '|')+1:], true
	}
	return "", false
}
