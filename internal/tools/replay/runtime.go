package replay

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/stormctl/stormctl/internal/devkit/serialized"
	"github.com/stormctl/stormctl/internal/engines/rerun"
	"github.com/stormctl/stormctl/internal/eventlog"
	"github.com/stormctl/stormctl/internal/history"
)

// runtimeScript turns invocation inv's recorded operations into what the
// runtime's replay world serves, and maps each of its operations back to
// its index among inv.ops. A run whose record cannot be served (an event
// the final log holds without the package's own copy) gives an
// *UnreplayableError. The events of one events.createBatch call are one
// operation ("batch") whose Items are its events, each answered as
// recorded; back maps it to its first event's index (its others follow).
func runtimeScript(in Input, inv invocation, reads map[int]read, final map[string]eventlog.Event) (rerun.RuntimeInvocation, []int, error) {
	refuse := func(format string, a ...any) error {
		return &UnreplayableError{RunID: in.RunID, Reason: fmt.Sprintf(format, a...)}
	}
	// The message the invocation handled (if recorded): delivered again.
	ri := rerun.RuntimeInvocation{RunID: in.RunID, Delivery: inv.delivery}
	var back []int
	var batchOf []int // each of ri.Ops's createBatch call number (0: none)
	raw := func(e eventlog.Event) (json.RawMessage, error) {
		if len(e.Package) == 0 {
			return nil, refuse("its final log holds its events without the package's own copy of them (recorded before stormctl kept them): storm it again with this build to replay it through the runtime")
		}
		return e.Package, nil
	}
	page := func(evs []eventlog.Event) ([]json.RawMessage, error) {
		out := make([]json.RawMessage, 0, len(evs))
		for _, e := range evs {
			r, err := raw(e)
			if err != nil {
				return nil, err
			}
			out = append(out, r)
		}
		return out, nil
	}
	stepCreated := map[string]json.RawMessage{}
	for _, e := range in.Final {
		if e.Type == runStarted && ri.Started.IsZero() {
			ri.Started = packageTime(e)
		}
		if e.Type == eventlog.StepCreated && len(e.Package) > 0 && stepCreated[e.CorrelationID] == nil {
			stepCreated[e.CorrelationID] = e.Package
		}
	}
	for k, i := range inv.ops {
		op := in.Ops[i]
		if op.Implicit {
			// The package wrote it inside another call of the invocation's
			// (5.0's synthetic step_created, run_created): the runtime makes
			// no call for it, and the call's own answer is recorded.
			continue
		}
		if len(ri.Ops) == 0 {
			ri.Clock = op.Start
		}
		ro := rerun.RuntimeOp{Start: ms(op.Start), End: ms(op.End), Error: runtimeError(op)}
		switch op.Kind {
		case history.OpList:
			evs, err := page(reads[i].events)
			if err != nil {
				return ri, nil, err
			}
			if op.Snapshot {
				n := len(ri.Ops)
				if n == 0 || ri.Ops[n-1].Kind != "create" || ri.Ops[n-1].Snapshot != nil {
					return ri, nil, refuse("%s's history records a snapshot read no create answered", inv.actor)
				}
				ri.Ops[n-1].Snapshot = &rerun.RuntimeSnapshot{Events: evs, HasMore: op.Read != nil && op.Read.More}
				continue
			}
			ro.Kind, ro.After, ro.Events = "list", op.After.ID, evs
			ro.HasMore = op.Read != nil && op.Read.More
		case history.OpAppend:
			if len(op.Wrote) != 1 {
				return ri, nil, refuse("%s's history records %d events in one append (the devkit engine records one a call, and one per event of a batch)", inv.actor, len(op.Wrote))
			}
			item, err := createOp(in, op, final, raw, stepCreated)
			if err != nil {
				return ri, nil, err
			}
			if op.Batch != 0 {
				// One event of an events.createBatch call: its items are
				// recorded one after another, so they stand together in
				// ri.Ops as they stood in the call.
				n := len(ri.Ops)
				if n > 0 && ri.Ops[n-1].Kind == "batch" && batchOf[n-1] == op.Batch && back[n-1]+len(ri.Ops[n-1].Items) == k {
					ri.Ops[n-1].Items = append(ri.Ops[n-1].Items, item)
					if ro.End > ri.Ops[n-1].End {
						ri.Ops[n-1].End = ro.End
					}
					continue
				}
				if slices.Contains(batchOf, op.Batch) {
					return ri, nil, refuse("%s's history records the events of createBatch call %d apart from one another", inv.actor, op.Batch)
				}
				ro.Kind, ro.Error, ro.Items = "batch", nil, []rerun.RuntimeOp{item}
				break
			}
			ro = item
			if op.Wrote[0].Type == runStarted && op.Err == "" {
				at, err := startedAt(in, op, final)
				if err != nil {
					return ri, nil, err
				}
				v := ms(at)
				ro.StartedAt = &v
			}
		default:
			return ri, nil, refuse("%s made a %s, which the runtime's replay world does not serve", inv.actor, op.Kind)
		}
		ri.Ops = append(ri.Ops, ro)
		back = append(back, k)
		batchOf = append(batchOf, op.Batch)
	}
	invOps := opsOf(in, inv)
	for j := range ri.Ops {
		callFailed(&ri.Ops[j], invOps, back[j])
	}
	for _, e := range in.Final {
		if e.Type == eventlog.RunCreated {
			r, err := raw(e)
			if err != nil {
				return ri, nil, err
			}
			ri.Created = r
			break
		}
	}
	if ri.Created == nil {
		return ri, nil, refuse("its final log holds no run_created: the run entity a run_started answers cannot be rebuilt")
	}
	if wroteFailure(opsOf(in, inv)) {
		ri.Recovery = rerun.RuntimeRecoveries
	}
	return ri, back, nil
}

// startedAt is the run's startedAt a run_started op was answered with:
// recorded with it (run_started_at), else the one its written event says
// (world-local sets startedAt when it writes run_started), else the one
// run_started event of the log; several (racing starts) and no record
// leave it unknown.
func startedAt(in Input, op history.Op, final map[string]eventlog.Event) (time.Time, error) {
	if !op.RunStartedAt.IsZero() {
		return op.RunStartedAt, nil
	}
	created := func(e eventlog.Event) (time.Time, bool) {
		var pe struct {
			CreatedAt time.Time `json:"createdAt"`
		}
		if json.Unmarshal(e.Package, &pe) != nil || pe.CreatedAt.IsZero() {
			return time.Time{}, false
		}
		return pe.CreatedAt, true
	}
	if id := op.Wrote[0].ID; id != "" {
		if t, ok := created(final[id]); ok {
			return t, nil
		}
	}
	var starts []eventlog.Event
	for _, e := range in.Final {
		if e.Type == runStarted {
			starts = append(starts, e)
		}
	}
	if len(starts) == 1 {
		if t, ok := created(starts[0]); ok {
			return t, nil
		}
	}
	return time.Time{}, &UnreplayableError{RunID: in.RunID, Reason: fmt.Sprintf(
		"its history does not record the startedAt %s's run_started was answered with, and the log holds %d run_started events: storm it again with this build to replay it through the runtime",
		op.Actor, len(starts))}
}

// callFailed makes a batch whose call failed whole (its events' appends
// say BatchFailed: the package threw) the call's failure, as the package
// threw it, and not each event's. ops are the invocation's, first the
// batch's first event's index there.
func callFailed(ro *rerun.RuntimeOp, ops []history.Op, first int) {
	if ro.Kind != "batch" || !ops[first].BatchFailed {
		return
	}
	ro.Error = ro.Items[0].Error
	for k := range ro.Items {
		ro.Items[k].Error = nil
	}
}

// createOp is a recorded append as the runtime's replay world answers its
// create (or a batch's event): its type and correlation id, the event the
// store wrote (the final log's copy) or the error it answered, and a step
// event's step_created (stepCreated, by correlation id).
func createOp(in Input, op history.Op, final map[string]eventlog.Event, raw func(eventlog.Event) (json.RawMessage, error), stepCreated map[string]json.RawMessage) (rerun.RuntimeOp, error) {
	w := op.Wrote[0]
	ro := rerun.RuntimeOp{Kind: "create", EventType: string(w.Type), CorrelationID: w.CorrelationID, Start: ms(op.Start), End: ms(op.End), Error: runtimeError(op)}
	if ro.Error != nil {
		ro.Error.Status = op.Status
	}
	if strings.HasPrefix(ro.EventType, "step_") {
		ro.StepCreated = stepCreated[w.CorrelationID]
	}
	if w.ID == "" || op.Err != "" {
		return ro, nil
	}
	e, ok := final[w.ID]
	if !ok {
		return ro, &UnreplayableError{RunID: in.RunID, Reason: fmt.Sprintf("%s wrote event %s, which the final log does not hold", op.Actor, w.ID)}
	}
	r, err := raw(e)
	if err != nil {
		return ro, err
	}
	ro.Event = r
	return ro, nil
}

// runtimeError is the error a recorded op's store answered, named as the
// package named it.
func runtimeError(op history.Op) *rerun.RuntimeError {
	switch op.Err {
	case "":
		return nil
	case "conflict":
		return &rerun.RuntimeError{Name: "EntityConflictError", Message: op.ErrText}
	case "refused":
		// "run R: T refused by the store: NAME: message"
		if _, rest, ok := strings.Cut(op.ErrText, "refused by the store: "); ok {
			if name, msg, ok := strings.Cut(rest, ": "); ok {
				return &rerun.RuntimeError{Name: name, Message: msg}
			}
		}
	}
	return &rerun.RuntimeError{Name: "Error", Message: op.ErrText}
}

// ms is t in milliseconds since the epoch, fractional.
func ms(t time.Time) float64 { return float64(t.UnixMicro()) / 1000 }

// opsOf is invocation inv's recorded operations.
func opsOf(in Input, inv invocation) []history.Op {
	out := make([]history.Op, len(inv.ops))
	for k, i := range inv.ops {
		out[k] = in.Ops[i]
	}
	return out
}

// replayRuntime re-executes invocation inv once through in.Runtime.
func replayRuntime(ctx context.Context, in Input, inv invocation, reads map[int]read, final map[string]eventlog.Event) (attempt, error) {
	ri, back, err := runtimeScript(in, inv, reads, final)
	if err != nil {
		return attempt{}, err
	}
	res, err := in.Runtime.Replay(ctx, ri)
	if err != nil {
		return attempt{}, fmt.Errorf("replay %s through the runtime: %w", inv.actor, err)
	}
	ops := opsOf(in, inv)
	// The log the invocation replayed: every event served, in order.
	var read []eventlog.Event
	served := make([]bool, len(ri.Ops))
	for _, c := range res.Done {
		if c.Op == "create" && c.At >= 0 && c.At < len(served) {
			served[c.At] = true
		}
	}
	listed := 0
	for j, ro := range ri.Ops {
		if ro.Kind == "list" && listed < countLists(res.Done) {
			listed++
			served[j] = true
		}
		if served[j] {
			read = append(read, servedEvents(reads, in.Ops, inv.ops, back[j])...)
		}
	}
	a := attempt{b: runtimeBehaviour(res, read)}
	if res.Divergence != nil {
		a.diverged = 1
	}
	a.b.Deviation = runtimeDeviation(ri, back, ops, res, served, final)
	return a, nil
}

// countLists counts the lists among calls served.
func countLists(done []rerun.RuntimeCall) int {
	n := 0
	for _, c := range done {
		if c.Op == "list" {
			n++
		}
	}
	return n
}

// servedEvents are the events recorded op k of an invocation served: a
// list's page, or the snapshot read recorded right after a create.
func servedEvents(reads map[int]read, ops []history.Op, invOps []int, k int) []eventlog.Event {
	i := invOps[k]
	if ops[i].Kind == history.OpList {
		return reads[i].events
	}
	if k+1 < len(invOps) && ops[invOps[k+1]].Kind == history.OpList && ops[invOps[k+1]].Snapshot {
		return reads[invOps[k+1]].events
	}
	return nil
}

// runtimeDeviation is where a runtime's replay first left its record: a
// call the record does not hold next (the runtime's world refused it), a
// create whose payload differs from the recorded event's, or a recorded
// operation the replay never made.
func runtimeDeviation(ri rerun.RuntimeInvocation, back []int, ops []history.Op, res rerun.RuntimeResult, served []bool, final map[string]eventlog.Event) *Deviation {
	at := func(j int) int {
		if j < len(back) {
			return back[j]
		}
		return len(ops)
	}
	var dev *Deviation
	if d := res.Deviation; d != nil {
		dev = &Deviation{Op: at(d.Op), Recorded: d.Recorded, Replayed: d.Replayed}
	}
	for _, c := range res.Done {
		if c.Op != "create" || c.At < 0 || c.At >= len(ri.Ops) {
			continue
		}
		k := at(c.At) + c.Item // a batch's events follow its first
		if dev != nil && dev.Op <= k {
			break
		}
		w := ops[k].Wrote[0]
		e, ok := final[w.ID]
		if !ok || w.ID == "" {
			continue
		}
		if why := samePackageData(e, c.EventData); why != "" {
			dev = &Deviation{Op: k, Recorded: describeOp(ops[k]), Replayed: "create " + c.EventType + " " + c.CorrelationID + " (" + why + ")"}
		}
	}
	if dev != nil {
		return dev
	}
	if j := slices.Index(served, false); j >= 0 {
		return &Deviation{Op: at(j), Recorded: describeOp(ops[at(j)])}
	}
	return nil
}

// samePackageData says how a create's eventData differs from the
// recorded event's, as the package stored it ("" when it does not): as
// JSON values, timestamps to the millisecond, a wait's resumeAt not at all
// (the writer's clock); of a run_failed only its code and message (its
// stack names the host's frames).
func samePackageData(e eventlog.Event, data json.RawMessage) string {
	rec, got := packageData(e), data
	if e.Type == eventlog.RunFailed {
		rec, got = failureFields(rec), failureFields(got)
	}
	rec, got = withoutUnstoredKeys(e.Type, rec, got)
	return samePayload(eventlog.Event{Type: e.Type, Payload: rec}, eventlog.Draft{Type: e.Type, Payload: got})
}

// unstoredKeys are the keys of a 5.0 write's eventData a store may not
// list back: world-vercel 5.0 sends workflowName, deploymentId and
// stepName as frame metadata, and a step_completed's latency telemetry
// (step-latency.js) is the server's to keep.
var unstoredKeys = []string{"workflowName", "deploymentId", "stepName", "stepCount", "eventCount", "optimizations"}

// clockKeys are durations a 5.0 step's terminal event carries, measured on
// the writer's clock (step-latency.js: ttfs, stso, rsfs and the final
// scheduling replay's ms), which no replay measures again: never compared,
// as a wait's resumeAt is not.
var clockKeys = []string{"ttfs", "stso", "rsfs", "finalSchedulingReplay"}

// unstoredKeysOf are, by event type, more such keys: a lazy step_started's
// input (5.0: the start that creates its step carries the step's input,
// which world-vercel's store keeps on the step, not on the event).
var unstoredKeysOf = map[eventlog.Type][]string{eventlog.StepStarted: {"input"}}

// withoutUnstoredKeys drops from a replayed eventData what the store did
// not keep of the recorded write: a key of unstoredKeys the stored event
// does not hold, and a run_started's eventData when the store kept none
// of it (5.0's runInput rides on it); and from both, the clockKeys. Every
// other key is compared.
func withoutUnstoredKeys(typ eventlog.Type, rec, got json.RawMessage) (json.RawMessage, json.RawMessage) {
	empty := func(raw json.RawMessage) bool {
		t := bytes.TrimSpace(raw)
		return len(t) == 0 || string(t) == "null" || string(t) == "{}"
	}
	if typ == runStarted && empty(rec) {
		return nil, nil
	}
	var r, g map[string]json.RawMessage
	if json.Unmarshal(rec, &r) != nil || json.Unmarshal(got, &g) != nil || r == nil || g == nil {
		return rec, got
	}
	changed := false
	for _, k := range clockKeys {
		_, inRec := r[k]
		_, inGot := g[k]
		if inRec || inGot {
			delete(r, k)
			delete(g, k)
			changed = true
		}
	}
	for _, k := range append(unstoredKeysOf[typ], unstoredKeys...) {
		_, stored := r[k]
		if _, sent := g[k]; sent && !stored {
			delete(g, k)
			changed = true
		}
	}
	if !changed {
		return rec, got
	}
	rb, err1 := json.Marshal(r)
	gb, err2 := json.Marshal(g)
	if err1 != nil || err2 != nil {
		return rec, got
	}
	return rb, gb
}

// packageData is the eventData of an event as the package stored it.
func packageData(e eventlog.Event) json.RawMessage {
	var pe struct {
		EventData json.RawMessage `json:"eventData"`
	}
	_ = json.Unmarshal(e.Package, &pe)
	return pe.EventData
}

// failureFields keeps a run_failed's code and message, as the runtime
// stored them (its error serialized in 5.0).
func failureFields(eventData json.RawMessage) json.RawMessage {
	out, _ := json.Marshal(serialized.RunFailure(eventData))
	return out
}

// runtimeBehaviour describes what one runtime replay concluded, having
// read the events read.
func runtimeBehaviour(res rerun.RuntimeResult, read []eventlog.Event) Behaviour {
	b := Behaviour{Times: 1}
	var parts []string
	if d := res.Divergence; d != nil {
		id := d.EventID
		if id == "" {
			id = rerun.DivergentEvent(d.Message)
		}
		kind := "replay_divergence"
		if d.Terminal {
			kind = "corrupted_event_log"
		}
		div := &Divergence{Kind: kind, Error: d.Message, Index: -1, ID: id}
		if i := slices.IndexFunc(read, func(e eventlog.Event) bool { return e.ID == id }); i >= 0 {
			div.Index, div.Type, div.CorrelationID = i, read[i].Type, read[i].CorrelationID
		}
		b.Divergence = div
		// The runtime's messages end with "Learn more: <url>" lines: the
		// first line says what diverged (Error keeps them all).
		parts = append(parts, fmt.Sprintf("diverged at event %d (%s): %s", div.Index, strings.TrimSpace(string(div.Type)+" "+id), firstLine(d.Message)))
	}
	var made []string
	for _, c := range res.Done {
		if c.Op != "create" || c.EventType == string(runStarted) {
			continue
		}
		s := strings.TrimSpace(c.EventType + " " + c.CorrelationID)
		var d struct {
			StepName string `json:"stepName"`
		}
		if c.EventType == string(eventlog.StepCreated) && json.Unmarshal(c.EventData, &d) == nil && d.StepName != "" {
			s += " (" + shortStep(d.StepName) + ")"
		}
		made = append(made, s)
	}
	switch {
	case res.Failed != nil && res.Divergence == nil:
		parts = append(parts, fmt.Sprintf("failed the run (%s: %s)", res.Failed.Code, res.Failed.Message))
	case len(made) > 0 && res.Divergence == nil:
		parts = append(parts, "derived "+strings.Join(made, ", "))
	case res.Divergence == nil && res.Status >= 200 && res.Status < 300:
		parts = append(parts, "derived nothing new")
	}
	if res.Status < 200 || res.Status >= 300 {
		parts = append(parts, fmt.Sprintf("its delivery answered %d (%s)", res.Status, firstLine(res.Body)))
	}
	b.What = strings.Join(parts, "; then ")
	return b
}

// shortStep is a step's name without its module path
// ("step//./workflows/step-storm//settle" is "settle").
func shortStep(name string) string {
	if i := strings.LastIndex(name, "//"); i >= 0 {
		return name[i+2:]
	}
	return name
}

// firstLine is s's first line.
func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	return s
}

// runStarted is the published runtime's event that starts an invocation's
// run (the model writes none).
const runStarted eventlog.Type = "run_started"
