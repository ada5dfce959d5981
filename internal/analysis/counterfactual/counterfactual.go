// Package counterfactual judges the writes a world refused a run of the
// published runtime (the devkit engine's rejections) through that same
// runtime: the log as it stood when the world refused the write is
// replayed twice by the runtime's own replay (core's, in a replay host),
// once as it was and once with the refused write admitted at its end. A
// write whose admission changes what the replay does (it diverges, fails
// the run, or writes other events) is a true positive: the world's
// refusal stopped real damage. One whose admission changes nothing is
// benign, and so is one the log could not have been consumed with: it
// came after the run's end (no replay reads past a run's end: the
// runtime's run_started is refused on an ended run), or after a
// divergence every replay of the log stops at. A write whose
// judgement the evidence does not decide is unknown, saying why.
//
// Rules, each named in its verdict's reason:
//   - after the run's end, a terminal event that repeats the run's first
//     one (its type, and its error code and message or its output) is
//     benign, an identical retry; any other terminal event is a true
//     positive, a second end of the run that readers of its status would
//     take; any other event is benign, never consumed;
//   - before the end, the replays decide, the log as it stood being the
//     final log's events the package created at or before the refusal
//     returned, in the order the package lists them. Both replays run at
//     the time that log was last written (its latest createdAt), and the
//     admitted write is created then: a reader of that log would see the
//     same, and alike refusals of one log share their replays (a wait
//     due between that time and the refusal is not due in either).
package counterfactual

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"strings"
	"sync"
	"time"

	"github.com/oklog/ulid/v2"
	"golang.org/x/sync/errgroup"

	"github.com/stormctl/stormctl/internal/analysis/verdict"
	"github.com/stormctl/stormctl/internal/devkit/serialized"
	"github.com/stormctl/stormctl/internal/engines/rerun"
	"github.com/stormctl/stormctl/internal/eventlog"
)

// Run is one run whose refused writes are judged.
type Run struct {
	ID string
	// Final is the run's final log, each event with the package's own
	// copy of it (Package).
	Final []eventlog.Event
	// Verdicts are the run's judgements; the pending ones are judged.
	Verdicts []verdict.Judgement
	// FinalAt is when the final log was read (the run's record's end): a
	// run that had not ended by then may have written more after it, so a
	// write refused later is not judged on it.
	FinalAt time.Time
}

// Options tune Judge.
type Options struct {
	// Workers bounds the replays in flight (1 when 0).
	Workers int
	// ReplayTimeout bounds each replay (DefaultReplayTimeout when 0): a
	// replay that does not answer in it leaves its judgements pending.
	ReplayTimeout time.Duration
	// Judged, when set, is told after each pending judgement is made;
	// called from several goroutines, one call at a time.
	Judged func()
}

// DefaultReplayTimeout bounds one replay: core replays a log of a few
// hundred events in well under a second on this project's 2 cores.
const DefaultReplayTimeout = time.Minute

// ErrReplayFailed is matched by Judge's error when replays could not be
// made (the runtime's host failed or did not answer): the judgements that
// needed them stay pending, for storm --resume to judge.
var ErrReplayFailed = errors.New("the runtime did not replay")

// Pending counts the judgements of vs not made yet.
func Pending(vs []verdict.Judgement) int {
	n := 0
	for _, j := range vs {
		if j.Pending {
			n++
		}
	}
	return n
}

// Judge returns run's verdicts with every pending one judged through rt
// (the others as they were). A judgement whose replay the runtime could
// not make stays pending, and the error wraps ErrReplayFailed; ctx's end
// stops it, with the judgements made so far and ctx's error (the rest
// stay pending).
func Judge(ctx context.Context, rt rerun.Runtime, run Run, opts Options) ([]verdict.Judgement, error) {
	out := append([]verdict.Judgement(nil), run.Verdicts...)
	lg, why := readLog(run)
	j := &judge{rt: rt, log: lg, runID: run.ID, finalAt: run.FinalAt, timeout: cmp.Or(opts.ReplayTimeout, DefaultReplayTimeout), replays: map[string]*replayed{}}
	var failed error // the first replay the runtime could not make
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(max(opts.Workers, 1))
	var mu sync.Mutex
	for i := range out {
		if !out[i].Pending {
			continue
		}
		if gctx.Err() != nil {
			break
		}
		g.Go(func() error {
			v, reason, err := verdict.Unknown, why, error(nil)
			if why == "" {
				v, reason, err = j.judge(gctx, i, out[i])
			}
			if gctx.Err() != nil {
				return gctx.Err() // an interrupted replay decides nothing: it stays pending
			}
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				// The runtime failed, not the log: it stays pending.
				if failed == nil {
					failed = err
				}
				return nil
			}
			out[i].Verdict, out[i].Reason, out[i].Pending = v, refusedPrefix(out[i])+reason, false
			if opts.Judged != nil {
				opts.Judged()
			}
			return nil
		})
	}
	err := g.Wait()
	if err == nil {
		err = ctx.Err()
	}
	if err == nil && failed != nil {
		err = fmt.Errorf("%w: %v", ErrReplayFailed, failed)
	}
	return out, err
}

// refusedPrefix says what the world refused, as a judgement's reason
// starts.
func refusedPrefix(jd verdict.Judgement) string {
	w := jd.Write
	if w == nil {
		return "the world refused an append: "
	}
	s := string(w.Type)
	if w.CorrelationID != "" {
		s += " " + w.CorrelationID
	}
	return fmt.Sprintf("the world refused %s (%s): ", s, w.Err)
}

// log is a run's final log as the judge reads it.
type log struct {
	events     []eventlog.Event
	created    []time.Time // each event's createdAt (the package's)
	runCreated json.RawMessage
	started    time.Time
	// end is the run's first terminal event, if any (index into events).
	end int
}

// readLog reads run's final log, or says why its refusals cannot be
// judged.
func readLog(run Run) (*log, string) {
	l := &log{events: run.Final, end: -1}
	var started time.Time
	if len(run.Final) == 0 {
		return nil, "not judged: the run's final log holds no event"
	}
	for i, e := range run.Final {
		if len(e.Package) == 0 {
			return nil, fmt.Sprintf("not judged: the final log holds event %s without the package's own copy of it, which the runtime would be served (storm again with this build)", e.ID)
		}
		var pe struct {
			CreatedAt time.Time `json:"createdAt"`
		}
		if err := json.Unmarshal(e.Package, &pe); err != nil || pe.CreatedAt.IsZero() {
			return nil, fmt.Sprintf("not judged: event %s of the final log has no createdAt to place it by", e.ID)
		}
		l.created = append(l.created, pe.CreatedAt)
		switch {
		case e.Type == eventlog.RunCreated && l.runCreated == nil:
			l.runCreated = e.Package
		case e.Type == eventlog.RunStarted && started.IsZero():
			started = pe.CreatedAt // world-local and world-postgres start a run when its first run_started is written
		}
		if l.end < 0 && terminal(e.Type) {
			l.end = i
		}
	}
	if l.runCreated == nil {
		return nil, "not judged: the final log holds no run_created, whose run a replay starts from"
	}
	// A run that never started, started when it was created.
	l.started = cmp.Or(started, l.created[indexOf(run.Final, eventlog.RunCreated)])
	return l, ""
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

func indexOf(evs []eventlog.Event, t eventlog.Type) int {
	for i, e := range evs {
		if e.Type == t {
			return i
		}
	}
	return -1
}

// terminal says whether events of type t end a run on the published
// runtime (run_cancelled too: the devkit engine cancels a run its timeout
// cut).
func terminal(t eventlog.Type) bool { return t.IsTerminal() || t == "run_cancelled" }

// judge holds one run's replays, each made once.
type judge struct {
	rt      rerun.Runtime
	log     *log
	runID   string
	finalAt time.Time
	timeout time.Duration

	mu      sync.Mutex
	replays map[string]*replayed
}

// replayed is one replay's result, made once (done closes when it is).
type replayed struct {
	done chan struct{}
	out  outcome
}

// outcome is what one replay did.
type outcome struct {
	// failed is the runtime's own failure to replay (its host failed, or
	// did not answer in time): no evidence either way.
	failed error
	// unusable says why the replay says nothing of the log ("" when it
	// does).
	unusable string
	// diverged is the divergence (or run_failed) it ended with, "" when
	// none.
	diverged string
	// divergedAt is the event a divergence names ("" for a run_failed, or
	// a divergence that names none).
	divergedAt string
	// writes are the events it asked to create and the messages it
	// queued, in order, each as a line.
	writes []string
}

func (j *judge) judge(ctx context.Context, i int, jd verdict.Judgement) (verdict.Verdict, string, error) {
	w := jd.Write
	if w == nil || w.Data == nil {
		return verdict.Unknown, "not judged: the history did not keep the event it asked to write (a batch create recorded before 2026-12-06, or a storm recorded before stormctl kept refused writes)", nil
	}
	l := j.log
	if l.end >= 0 && !jd.At.Before(l.created[l.end]) {
		v, why := afterEnd(l, w)
		return v, why, nil
	}
	if l.end < 0 && !j.finalAt.IsZero() && jd.At.After(j.finalAt) {
		return verdict.Unknown, "not judged: refused after the run's final log was read, on a run that had not ended: the log as it stood then is not known", nil
	}
	var prefix []json.RawMessage
	var clock time.Time
	_, _, slotted := l.slots(len(l.events))
	for k, e := range l.events {
		if l.created[k].After(jd.At) {
			if slotted {
				// A log ided by position is read as a dense prefix: it
				// stood up to its first slot written after the refusal.
				break
			}
			continue
		}
		prefix = append(prefix, e.Package)
		clock = maxTime(clock, l.created[k])
	}
	if len(prefix) == 0 {
		return verdict.Unknown, "not judged: the final log holds no event created before the refusal", nil
	}
	n, wk := len(prefix), writeKey(w)
	id, err := l.nextID(n, wk, clock)
	if err != nil {
		return verdict.Unknown, "not judged: " + err.Error(), nil
	}
	admitted, err := admit(j.runID, id, clock, w)
	if err != nil {
		return verdict.Unknown, "not judged: " + err.Error(), nil
	}
	without := j.replay(ctx, fmt.Sprint(n), prefix, clock)
	if without.failed != nil {
		return verdict.Unknown, "", without.failed
	}
	if without.unusable != "" {
		return verdict.Unknown, fmt.Sprintf("not judged: the log as it stood (%d events) does not replay through the runtime: %s", n, without.unusable), nil
	}
	with := j.replay(ctx, fmt.Sprintf("%d+%x", n, wk), append(prefix[:n:n], admitted), clock)
	if with.failed != nil {
		return verdict.Unknown, "", with.failed
	}
	if with.unusable != "" {
		return verdict.Unknown, fmt.Sprintf("not judged: admitted at the end of the log as it stood (%d events), the replay through the runtime says nothing: %s", n, with.unusable), nil
	}
	v, why := compare(n, id, without, with)
	return v, why, nil
}

// compare judges by the two replays of the log as it stood (n events):
// without the refused write and with it admitted (as event id).
func compare(n int, id string, without, with outcome) (verdict.Verdict, string) {
	sameDivergence := with.diverged == without.diverged || without.divergedAt != "" && with.divergedAt == without.divergedAt
	switch {
	case without.diverged != "" && with.diverged != "" && sameDivergence:
		return verdict.Benign, fmt.Sprintf("could not be consumed: the log as it stood (%d events) had already diverged (%s), and every replay stops there, with or without it", n, without.diverged)
	case without.diverged != "" && with.diverged != "":
		return verdict.TruePositive, fmt.Sprintf("admitted, the runtime's replay of the log as it stood (%d events) diverges otherwise (%s) than without it (%s)", n, with.diverged, without.diverged)
	case without.diverged != "":
		return verdict.TruePositive, fmt.Sprintf("admitted, the runtime's replay of the log as it stood (%d events) no longer diverges (without it: %s)", n, without.diverged)
	case with.diverged != "":
		at := ""
		if with.divergedAt == id {
			at = " at the admitted event"
		}
		return verdict.TruePositive, fmt.Sprintf("admitted, the runtime's replay of the log as it stood (%d events) diverges%s: %s (without it the replay is clean)", n, at, with.diverged)
	}
	if d := firstDifference(without.writes, with.writes); d != "" {
		return verdict.TruePositive, fmt.Sprintf("admitted, the runtime's replay of the log as it stood (%d events) acts otherwise: %s", n, d)
	}
	return verdict.Benign, fmt.Sprintf("admitted, the runtime's replay of the log as it stood (%d events) does exactly what it does without it (%d writes, the same): nothing it consumes changes", n, len(with.writes))
}

// firstDifference says where two replays' writes part ("" when they do
// not).
func firstDifference(a, b []string) string {
	for k := 0; k < max(len(a), len(b)); k++ {
		switch {
		case k >= len(a):
			return fmt.Sprintf("it also writes %s", short(b[k]))
		case k >= len(b):
			return fmt.Sprintf("it no longer writes %s", short(a[k]))
		case a[k] != b[k]:
			with, without := around(b[k], a[k])
			return fmt.Sprintf("it writes %s where without it the replay writes %s", with, without)
		}
	}
	return ""
}

// around shortens two writes that differ to where they first differ: a
// long one is cut around that byte (so a reason never hides the
// difference behind a shared prefix), each beginning with its type and
// correlation id.
func around(a, b string) (string, string) {
	i := 0
	for i < len(a) && i < len(b) && a[i] == b[i] {
		i++
	}
	const before = 60
	if i <= before || len(a) <= 160 && len(b) <= 160 {
		return short(a), short(b)
	}
	head := func(s string) string {
		fields := strings.SplitN(s, " ", 3)
		return strings.Join(fields[:min(2, len(fields))], " ")
	}
	cut := func(s string) string { return head(s) + " …" + short(s[i-before:]) }
	return cut(a), cut(b)
}

func short(s string) string {
	const n = 160
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

// afterEnd judges a write refused once the run had ended (its first
// terminal event created no later than the refusal returned).
func afterEnd(l *log, w *verdict.RefusedWrite) (verdict.Verdict, string) {
	first := l.events[l.end]
	if !terminal(w.Type) {
		return verdict.Benign, fmt.Sprintf("could not be consumed: the run had ended (%s %s) when the world refused it, and no replay reads past a run's end (the runtime's run_started is refused on an ended run)", first.Type, first.ID)
	}
	var data struct {
		EventData json.RawMessage `json:"eventData"`
	}
	_ = json.Unmarshal(w.Data, &data)
	var firstData struct {
		EventData json.RawMessage `json:"eventData"`
	}
	_ = json.Unmarshal(first.Package, &firstData)
	if w.Type == first.Type && sameEnd(w.Type, data.EventData, firstData.EventData) {
		return verdict.Benign, fmt.Sprintf("an identical retry: the run had ended with the same %s (%s)", first.Type, first.ID)
	}
	return verdict.TruePositive, fmt.Sprintf("admitted, it would have ended the run a second time (%s after %s %s, not the same end): a reader of the run's status or result takes either", w.Type, first.Type, first.ID)
}

// sameEnd says whether two terminal events' data end a run alike: a
// run_failed's error code and message (serialized.RunFailure decodes
// 4.x's and 5.0's errors alike; the stack differs by invocation), a
// run_completed's output, as the runtime serialised them.
func sameEnd(t eventlog.Type, a, b json.RawMessage) bool {
	if t != eventlog.RunFailed {
		return canonical(a) == canonical(b)
	}
	return serialized.RunFailure(a) == serialized.RunFailure(b)
}

// canonical is raw re-encoded with its keys sorted.
// hostIDs are eventData fields whose values the replay host mints, not the
// log: core 5.0 stamps an inline step's step_started with the id of the
// delivery that owns it (ownerMessageId), which the host numbers as it
// queues messages. Two replays of one log that differ only there decided
// alike.
var hostIDs = []string{"ownerMessageId"}

// withoutHostIDs is raw with the hostIDs fields of a JSON object taken
// out (raw as it is when it is no object).
func withoutHostIDs(raw json.RawMessage) json.RawMessage {
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) != nil || m == nil {
		return raw
	}
	for _, k := range hostIDs {
		delete(m, k)
	}
	b, err := json.Marshal(m)
	if err != nil {
		return raw
	}
	return b
}

func canonical(raw json.RawMessage) string {
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return string(raw)
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// nextID is the id the package would have given the refused write, had
// it been admitted after the n events of the log as it stood, last written
// at: the next position after the log's highest where the package ids
// events by position (5.0's slots, "evnt_" and digits, as wide as the
// log's), else a ULID minted then, as world-local and world-postgres mint
// them, its random part derived from the run, n and the write (wk), so
// alike refusals admit the same event.
func (l *log) nextID(n int, wk []byte, at time.Time) (string, error) {
	if width, top, ok := l.slots(n); ok {
		return fmt.Sprintf("evnt_%0*d", width, top+1), nil
	}
	h := fnv.New128a()
	fmt.Fprintf(h, "%d/", n)
	h.Write(wk)
	id, err := ulid.New(ulid.Timestamp(at), bytes.NewReader(h.Sum(nil)))
	if err != nil {
		return "", fmt.Errorf("mint an id for the admitted write: %v", err)
	}
	return "evnt_" + id.String(), nil
}

// slots says whether the log's first n events are ided by position
// (serialized.SlotOf), how wide the ids' digits are and the highest
// position among them (a slot log's first n events are the log as it
// stood: the position after them is the one the refused write would have
// taken, not the one after the final log's).
func (l *log) slots(n int) (width int, top int64, ok bool) {
	for _, e := range l.events[:n] {
		p, isSlot := serialized.SlotOf(e.ID)
		if !isSlot {
			return 0, 0, false
		}
		width, top = max(width, len(e.ID)-len("evnt_")), max(top, p)
	}
	return width, top, n > 0
}

// admit is the refused write as the package would have listed it, had it
// been admitted as eventID at (when the log as it stood was last written).
func admit(runID, eventID string, at time.Time, w *verdict.RefusedWrite) (json.RawMessage, error) {
	var data struct {
		EventData   json.RawMessage `json:"eventData,omitempty"`
		SpecVersion json.RawMessage `json:"specVersion,omitempty"`
	}
	if err := json.Unmarshal(w.Data, &data); err != nil {
		return nil, fmt.Errorf("the refused write's data is unreadable: %v", err)
	}
	ev := map[string]any{
		"runId": runID, "eventId": eventID, "eventType": string(w.Type),
		"createdAt": at.UTC().Format("2006-01-02T15:04:05.000Z07:00"),
	}
	if w.CorrelationID != "" {
		ev["correlationId"] = w.CorrelationID
	}
	if len(data.EventData) > 0 && string(data.EventData) != "null" {
		ev["eventData"] = data.EventData
	}
	if len(data.SpecVersion) > 0 && string(data.SpecVersion) != "null" {
		ev["specVersion"] = data.SpecVersion
	}
	return json.Marshal(ev)
}

// writeKey tells refused writes apart: two alike replay alike.
func writeKey(w *verdict.RefusedWrite) []byte {
	h := fnv.New64a()
	fmt.Fprintf(h, "%s\x00%s\x00", w.Type, w.CorrelationID)
	h.Write(w.Data)
	return h.Sum(nil)
}

// replay replays events through the runtime at clock, once per key.
func (j *judge) replay(ctx context.Context, key string, events []json.RawMessage, clock time.Time) outcome {
	j.mu.Lock()
	r, ok := j.replays[key]
	if !ok {
		r = &replayed{done: make(chan struct{})}
		j.replays[key] = r
	}
	j.mu.Unlock()
	if ok {
		select {
		case <-r.done:
			return r.out
		case <-ctx.Done():
			return outcome{unusable: ctx.Err().Error()}
		}
	}
	defer close(r.done)
	inv := rerun.LogInvocation(j.runID, j.log.runCreated, j.log.started, clock, events)
	rctx, cancel := context.WithTimeout(ctx, j.timeout)
	defer cancel()
	res, err := j.rt.Replay(rctx, inv)
	switch {
	case err != nil && ctx.Err() == nil:
		if rctx.Err() != nil {
			err = fmt.Errorf("no answer in %s", j.timeout)
		}
		r.out = outcome{failed: err}
	default:
		r.out = outcomeOf(res, err)
	}
	return r.out
}

// outcomeOf reads a replay's result.
func outcomeOf(res rerun.RuntimeResult, err error) outcome {
	if err != nil {
		return outcome{unusable: err.Error()}
	}
	var o outcome
	if d := res.Deviation; d != nil {
		return outcome{unusable: fmt.Sprintf("it made a call the replay cannot serve (%s)", d.Replayed)}
	}
	switch {
	case res.Divergence != nil:
		o.diverged, o.divergedAt = res.Divergence.Message, res.Divergence.EventID
		if o.divergedAt == "" {
			o.divergedAt = rerun.DivergentEvent(res.Divergence.Message)
		}
	case res.Failed != nil:
		o.diverged = "run_failed " + res.Failed.Code + ": " + res.Failed.Message
	case res.Status < 200 || res.Status >= 300:
		return outcome{unusable: fmt.Sprintf("its delivery answered %d: %s", res.Status, short(res.Body))}
	}
	for _, c := range res.Done {
		if c.Op != "create" || c.EventType == string(eventlog.RunStarted) {
			continue
		}
		if c.At < 0 && (c.EventType == "step_retrying" || c.EventType == string(eventlog.StepFailed)) && o.unusable == "" {
			// Core 5.0 runs steps inline; a body run in the replay host
			// that fails there fails on what the host does not serve.
			o.unusable = fmt.Sprintf("it ran step %s's body inline and the body failed in the replay host (%s): a verdict would rest on the harness, not on the log", c.CorrelationID, c.EventType)
		}
		o.writes = append(o.writes, fmt.Sprintf("%s %s %s", c.EventType, c.CorrelationID, canonical(withoutHostIDs(c.EventData))))
	}
	for _, m := range res.Queued {
		o.writes = append(o.writes, fmt.Sprintf("queue %s %s", m.Queue, m.StepID))
	}
	return o
}
