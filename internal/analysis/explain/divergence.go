package explain

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/stormctl/stormctl/internal/base/plural"
	"github.com/stormctl/stormctl/internal/engine"
	"github.com/stormctl/stormctl/internal/eventlog"
	"github.com/stormctl/stormctl/internal/history"
)

// maxCounterfactual bounds the replays that test which missing event was
// decisive.
const maxCounterfactual = 40

// mode is the reference replays' mode: the run's ids and repeats, the
// reference wake.
func (r *run) mode() engine.ReplayMode {
	m := r.in.Mode()
	m.Wake = r.wake
	return m
}

// replayFinal is the reference replay of the run's final log, in scheme
// order, with the reference wake.
func (r *run) replayFinal() engine.Outcome {
	return engine.Replay(r.in.Program, r.in.RunID, r.ordered, r.mode(), refTime)
}

// divergence explains a corrupted or silent run: an entity the world
// created twice, when that is what went wrong (duplicateCreate); else the
// first event a reference replay of the final log disagrees with, its
// writer's view, and what that view lacked.
func (r *run) divergence(ex *Explanation) {
	ref := r.replayFinal()
	if r.duplicateCreate(ex, ref) {
		return
	}
	d, u := ref.Divergence, ref.Unchecked
	switch {
	case d != nil && (u == nil || d.Index <= u.Index):
		r.offend(ex, d.Index, d.Msg)
	case u != nil:
		r.offend(ex, u.Index, u.Msg+" (the engine does not check arguments: the step's recorded result feeds this call)")
	case ref.Terminal != nil && ref.Terminal.Type == eventlog.RunFailed:
		r.failedReader(ex)
	case ref.Terminal != nil:
		i := r.index[ref.Terminal.ID]
		r.offend(ex, i, "the final log replays without a disagreement to this "+string(ref.Terminal.Type))
	default:
		ex.Class = Unknown
		ex.MissingEvidence = append(ex.MissingEvidence, fmt.Sprintf(
			"the final log (%d events) replays with %s wake without a disagreement and has no terminal event", len(r.ordered), r.wake))
	}
}

// offend explains the disagreement at final position j: who wrote that
// event and what its writer had read.
func (r *run) offend(ex *Explanation, j int, msg string) {
	ev := r.event(j)
	ex.Offending, ex.Divergence = &ev, msg
	target := j
	if t := r.ordered[j].Type; !t.IsDecision() {
		// A fact is written by a worker that derived nothing: the
		// decision that created its operation is what a writer derived.
		c := r.creation(j)
		if c < 0 {
			ex.Class = Unknown
			ex.MissingEvidence = append(ex.MissingEvidence, fmt.Sprintf(
				"%s %s is a fact and the final log has no decision creating %s before it", t, ev.CorrelationID, ev.CorrelationID))
			return
		}
		target = c
		ex.Evidence = append(ex.Evidence, fmt.Sprintf("%s is a fact; the decision that created its operation is %s at index %d",
			t, r.ordered[c].Type, c))
	}
	r.classifyWrite(ex, target)
	r.disagreed(ex, j)
}

// creation finds the decision creating the operation the fact at position
// j belongs to, or -1.
func (r *run) creation(j int) int {
	corr := r.ordered[j].CorrelationID
	for i, e := range r.ordered {
		if creates(e.Type) && e.CorrelationID == corr && corr != "" {
			return i
		}
	}
	return -1
}

// creates reports whether events of type t create an operation: a step, a
// hook or a wait.
func creates(t eventlog.Type) bool {
	return t == eventlog.StepCreated || t == eventlog.HookCreated || t == eventlog.WaitCreated
}

// classifyWrite sets the class from the writer of final position j and the
// view it wrote from.
func (r *run) classifyWrite(ex *Explanation, j int) {
	e := r.ordered[j]
	opIdx, ok := r.writer[e.ID]
	if !ok {
		ex.Class = Unknown
		ex.MissingEvidence = append(ex.MissingEvidence, fmt.Sprintf(
			"no recorded append committed %s %s (the history is truncated, or the write's reply was lost)", e.Type, e.ID))
		return
	}
	op := r.in.Ops[opIdx]
	var implicit string
	ex.Writer, implicit = r.writerOf(opIdx)
	if implicit != "" {
		ex.Evidence = append(ex.Evidence, implicit)
	}
	v := r.viewBefore(op.Actor, opIdx)
	if v == nil {
		ex.Class = Unknown
		ex.MissingEvidence = append(ex.MissingEvidence, fmt.Sprintf("no load by %s before its write at %s", op.Actor, clock(op.Start)))
		return
	}
	ex.Writer.Wrote = r.suspension(op.Actor, v.pages[len(v.pages)-1].op, opIdx)
	ex.View = r.describe(v)
	if ex.View.Reconstructed {
		ex.Evidence = append(ex.Evidence, "reconstructed view matches the recorded hash")
	} else {
		ex.Evidence = append(ex.Evidence, "reconstructed view does not match the recorded hash of every page (commit times too coarse or events missing from the final log)")
	}
	own := r.ownWrites(op.Actor, opIdx)
	for _, w := range ex.Writer.Wrote {
		// A decision of the same suspension the final log places before
		// this one (appends in flight at once, the real runtime's) was
		// derived with it, not lacked.
		own[w.ID] = true
	}
	for p := range j {
		if v.visible[p] || own[r.ordered[p].ID] || r.ordered[p].Type == eventlog.Noop {
			continue
		}
		ex.Missing = append(ex.Missing, r.missing(v, p))
	}
	for _, p := range v.positions() {
		if p > j {
			ex.Extra = append(ex.Extra, r.event(p))
		}
	}
	if r.reference {
		ex.Reference = r.replayView(v, j, nil)
		r.decisive(ex, v, j)
	}
	switch {
	case len(ex.Missing) > 0:
		ex.Class = StalePrefix
		if r.skipped(ex.Missing) {
			ex.Class = CursorSkip
		}
		within := 0
		for _, m := range ex.Missing {
			if m.Within {
				within++
			}
		}
		switch {
		case within > 0 && !ex.View.Prefix:
			ex.Evidence = append(ex.Evidence, fmt.Sprintf("the view (%d events) was not a prefix of the final log: %s it lacked %s inside it",
				v.n, plural.Count(within, "event"), sortWord(within)))
		case within == 0:
			ex.Evidence = append(ex.Evidence, fmt.Sprintf("the view (%d events) was a prefix of the final log, but %s minted before the write committed after the load and %s before the write",
				v.n, plural.Count(len(ex.Missing), "event"), sortWord(len(ex.Missing))))
		}
		switch {
		case ex.Reference == nil:
			ex.Evidence = append(ex.Evidence, noReplay)
		case !ex.Reference.Derives:
			ex.Evidence = append(ex.Evidence, "a replay of the view with the reference wake does not derive the write either: the writer's wake drew otherwise too")
		}
	case len(ex.Extra) > 0:
		ex.Class = StalePrefix
		ex.Evidence = append(ex.Evidence, fmt.Sprintf("the view held %d events the final log places after the write (ids minted out of commit order)", len(ex.Extra)))
	case ex.Reference == nil:
		r.unreplayed(ex, v, op.Actor)
	case !ex.Reference.Derives:
		ex.Class = WakeOrder
		ex.Evidence = append(ex.Evidence, fmt.Sprintf("the view was exactly the final log's %d events before the write, and a replay of it with %s wake derives something else than the write", v.n, r.wake))
	default:
		ex.Class = Unknown
		ex.MissingEvidence = append(ex.MissingEvidence, fmt.Sprintf(
			"%s's view was exactly the final log's prefix before its write and a replay of it with %s wake derives the write as written: the disagreement is not in this view", op.Actor, r.wake))
	}
}

// skipped reports whether the missing events that decided the write (all
// of them when none was shown decisive) include a cursor skip.
func (r *run) skipped(ms []Missing) bool {
	decisive := slices.ContainsFunc(ms, func(m Missing) bool { return m.Decisive })
	return slices.ContainsFunc(ms, func(m Missing) bool { return m.Skipped && (m.Decisive || !decisive) })
}

// missing describes final position p, which view v lacked.
func (r *run) missing(v *view, p int) Missing {
	m := Missing{Event: r.event(p), Within: p <= v.last}
	c, known := r.commit[r.ordered[p].ID]
	if known {
		m.AfterLoad = c.Sub(v.start)
	}
	// A cursor skip: the page whose range holds p is not the view's last,
	// and the event had committed before the last page started.
	if k := r.pageOf(v, p); known && k >= 0 && k < len(v.pages)-1 && c.Before(v.lastAt) {
		m.Skipped = true
	}
	return m
}

// ownWrites are the event ids actor committed before op index before.
func (r *run) ownWrites(actor string, before int) map[string]bool {
	own := map[string]bool{}
	for _, op := range r.in.Ops[:before] {
		if op.Actor != actor {
			continue
		}
		for _, w := range op.Wrote {
			if w.ID != "" {
				own[w.ID] = true
			}
		}
	}
	return own
}

// suspension lists what actor committed after its view's last page, up to
// and including op index upto and on until its next read.
func (r *run) suspension(actor string, after, upto int) []Event {
	var out []Event
	for i := after + 1; i < len(r.in.Ops); i++ {
		op := r.in.Ops[i]
		if op.Actor != actor {
			continue
		}
		if op.Kind == history.OpList && i > upto {
			break
		}
		for _, w := range op.Wrote {
			if p, ok := r.index[w.ID]; ok && w.ID != "" {
				out = append(out, r.event(p))
			}
		}
	}
	return out
}

// logAt returns the final log's events at positions ps plus extra, in
// scheme order.
func (r *run) logAt(ps []int, extra ...int) []eventlog.Event {
	all := slices.Concat(ps, extra)
	slices.Sort(all)
	all = slices.Compact(all)
	out := make([]eventlog.Event, len(all))
	for i, p := range all {
		out[i] = r.ordered[p]
	}
	return out
}

// replayView replays view v (plus the positions in extra) with the
// reference wake and says whether it derives final position j as written.
func (r *run) replayView(v *view, j int, extra []int) *Replay {
	log := r.logAt(v.positions(), extra...)
	out := engine.Replay(r.in.Program, r.in.RunID, log, r.mode(), refTime)
	rep := &Replay{Wake: r.wake, N: len(log)}
	if out.Divergence != nil {
		rep.Divergence = out.Divergence.Msg
	}
	want := r.ordered[j]
	for _, d := range out.Decisions {
		rep.Decisions = append(rep.Decisions, decisionOf(d))
		if sameDecision(d, want) {
			rep.Derives = true
		}
	}
	return rep
}

// decisive marks the missing events whose addition to the view makes a
// replay (that does not diverge) stop deriving the write: each alone
// first, and all of them together when none does alone.
func (r *run) decisive(ex *Explanation, v *view, j int) {
	if !ex.Reference.Derives || len(ex.Missing) == 0 {
		return
	}
	found := false
	for k := range ex.Missing {
		if k == maxCounterfactual {
			break
		}
		// A replay the added event alone makes diverge (a step result
		// without its step) shows nothing either way.
		if rep := r.replayView(v, j, []int{ex.Missing[k].Index}); !rep.Derives && rep.Divergence == "" {
			ex.Missing[k].Decisive = true
			found = true
		}
	}
	if found {
		return
	}
	all := make([]int, len(ex.Missing))
	for k, m := range ex.Missing {
		all[k] = m.Index
	}
	if rep := r.replayView(v, j, all); !rep.Derives && rep.Divergence == "" {
		ex.Evidence = append(ex.Evidence, "no missing event alone changes the write, all of them together do")
	}
}

// decisionOf names a derived decision.
func decisionOf(d eventlog.Draft) Decision {
	out := Decision{Type: d.Type, CorrelationID: d.CorrelationID}
	out.Name, out.Args = step(d.Type, d.Payload)
	return out
}

// sameDecision reports whether draft d is the decision e records: same
// type and correlation id, and for a step the same name and arguments, for
// a hook the same token, for a wait the same duration, for an attribute
// the same key and value (a wait's resumeAt and a terminal event's payload
// depend on when it was derived and are not compared, but a run_completed
// output is).
func sameDecision(d eventlog.Draft, e eventlog.Event) bool {
	if d.Type != e.Type || d.CorrelationID != e.CorrelationID {
		return false
	}
	switch d.Type {
	case eventlog.StepCreated, eventlog.AttrSet, eventlog.RunCompleted:
		return sameJSON(d.Payload, e.Payload)
	case eventlog.HookCreated:
		return d.Token == e.Token
	case eventlog.WaitCreated:
		var a, b struct {
			DurationMs int64 `json:"durationMs"`
		}
		_ = json.Unmarshal(d.Payload, &a)
		_ = json.Unmarshal(e.Payload, &b)
		return a.DurationMs == b.DurationMs
	}
	return true
}

// sameJSON compares two JSON values by their decoded form.
func sameJSON(a, b json.RawMessage) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return string(a) == string(b)
	}
	ja, _ := json.Marshal(x)
	jb, _ := json.Marshal(y)
	return string(ja) == string(jb)
}

// failedReader explains a corrupted run whose final log replays cleanly to
// its run_failed: the invocation that failed the run read a view the final
// log disagrees with, and diverged on it.
func (r *run) failedReader(ex *Explanation) {
	var failed = -1
	for i, e := range r.ordered {
		if e.Type == eventlog.RunFailed {
			failed = i
			break
		}
	}
	ev := r.event(failed)
	ex.Offending = &ev
	opIdx, ok := r.writer[ev.ID]
	if !ok {
		ex.Class = Unknown
		ex.MissingEvidence = append(ex.MissingEvidence, "the final log replays cleanly to run_failed, and no recorded append wrote it")
		return
	}
	op := r.in.Ops[opIdx]
	ex.Writer = &Writer{Actor: op.Actor, Start: op.Start, End: op.End, Wrote: []Event{ev}}
	v := r.viewBefore(op.Actor, opIdx)
	if v == nil {
		ex.Class = Unknown
		ex.MissingEvidence = append(ex.MissingEvidence, fmt.Sprintf("the final log replays cleanly to run_failed, and %s, which wrote it, loaded nothing before", op.Actor))
		return
	}
	ex.View = r.describe(v)
	log := r.logAt(v.positions())
	out := engine.Replay(r.in.Program, r.in.RunID, log, r.mode(), refTime)
	ex.Reference = &Replay{Wake: r.wake, N: len(log)}
	if out.Divergence == nil {
		ex.Class = Unknown
		ex.MissingEvidence = append(ex.MissingEvidence, fmt.Sprintf(
			"the final log replays cleanly to run_failed, and so does %s's view of %d events with %s wake", op.Actor, len(log), r.wake))
		return
	}
	ex.Reference.Divergence = out.Divergence.Msg
	at := r.index[log[out.Divergence.Index].ID]
	ex.Divergence = out.Divergence.Msg
	for p := range at {
		if !v.visible[p] && r.ordered[p].Type != eventlog.Noop {
			ex.Missing = append(ex.Missing, r.missing(v, p))
		}
	}
	ex.Evidence = append(ex.Evidence, fmt.Sprintf("the final log replays cleanly to run_failed; %s's view diverges at %s %s (final index %d)",
		op.Actor, r.ordered[at].Type, r.ordered[at].CorrelationID, at))
	if len(ex.Missing) == 0 {
		ex.Class = Unknown
		ex.MissingEvidence = append(ex.MissingEvidence, fmt.Sprintf("%s's view lacked nothing the final log places before index %d", op.Actor, at))
		return
	}
	ex.Class = StalePrefix
	if r.skipped(ex.Missing) {
		ex.Class = CursorSkip
	}
}

// maxReaders bounds the later readers whose views are replayed to find
// the first that disagreed.
const maxReaders = 12

// disagreed finds the first later invocation that read final position j
// and whose replay of its view diverged, and counts the others that read
// it and wrote nothing after (a replay that diverges writes nothing and is
// retried).
func (r *run) disagreed(ex *Explanation, j int) {
	e := r.ordered[j]
	c, known := r.commit[e.ID]
	if !known {
		return
	}
	var failedBy string
	if f := slices.IndexFunc(r.ordered, func(e eventlog.Event) bool { return e.Type == eventlog.RunFailed }); f >= 0 {
		if i, ok := r.writer[r.ordered[f].ID]; ok {
			failedBy = r.in.Ops[i].Actor
		}
	}
	first := map[string]int{} // actor -> op index of its first page holding j
	var order []string
	lastWrite := map[string]int{}
	for i, op := range r.in.Ops {
		if len(op.Wrote) > 0 {
			lastWrite[op.Actor] = i
		}
		if op.Kind != history.OpList || op.Read == nil || op.Read.N == 0 || !strings.HasPrefix(op.Actor, "inv-") || op.Actor == ex.Writer.actor() {
			continue
		}
		if _, seen := first[op.Actor]; seen {
			continue
		}
		if lo, hi := r.upTo(op.After), r.upTo(op.Read.Last); j >= lo && j < hi && c.Before(op.Start) {
			first[op.Actor] = i
			order = append(order, op.Actor)
		}
	}
	rd := &Reader{}
	replayed := 0
	for _, a := range order {
		page := first[a]
		silent := lastWrite[a] <= page || a == failedBy
		if !silent {
			continue
		}
		if rd.Actor != "" || replayed == maxReaders {
			rd.Others++
			continue
		}
		replayed++
		v := r.viewThrough(a, page)
		if v == nil {
			continue
		}
		if !r.reference {
			// No replay to ask: the first silent reader is named, and
			// the runtime's error (the narrative's last step) says what
			// its own replays raised.
			rd.Actor, rd.At, rd.N, rd.Failed = a, r.in.Ops[page].Start, v.n, a == failedBy
			continue
		}
		out := engine.Replay(r.in.Program, r.in.RunID, r.logAt(v.positions()), r.mode(), refTime)
		if out.Divergence == nil {
			continue
		}
		rd.Actor, rd.At, rd.N, rd.Divergence = a, r.in.Ops[page].Start, v.n, out.Divergence.Msg
		rd.Failed = a == failedBy
	}
	if rd.Actor != "" {
		ex.Disagreed = rd
	}
	if failedBy != "" && failedBy != rd.Actor {
		ex.Evidence = append(ex.Evidence, fmt.Sprintf("%s wrote run_failed", failedBy))
	}
}

// actor is the writer's actor, "" for none.
func (w *Writer) actor() string {
	if w == nil {
		return ""
	}
	return w.Actor
}

// sortWord is "sorts" or "sort" for n events.
func sortWord(n int) string {
	if n == 1 {
		return "sorts"
	}
	return "sort"
}
