package explain

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/stormctl/stormctl/engine"
	"github.com/stormctl/stormctl/eventlog"
	"github.com/stormctl/stormctl/forensics"
	"github.com/stormctl/stormctl/history"
	"github.com/stormctl/stormctl/internal/plural"
)

// Error classes of recorded operations (eventlog.Classify).
const (
	errHole = "hole"
	errGap  = "gap"
	errDup  = "duplicate"
)

// firstGap is the lowest position missing below a present one in the
// final log (a slot log's first hole), or 0.
func (r *run) firstGap() int64 {
	return forensics.ScanPositions(forensics.PositionsOf(r.ordered)).FirstGap
}

// refusal is the load refusal (a list failing with one of errs) that
// failed the run: the last one before its run_failed by the invocation
// that wrote it, else the first by an invocation, else the first by
// anyone (drivers and hook senders refuse too, but fail nothing). It
// returns -1 when no load was refused.
func (r *run) refusal(errs ...string) int {
	refused := func(op history.Op) bool { return op.Kind == history.OpList && slices.Contains(errs, op.Err) }
	if f := slices.IndexFunc(r.ordered, func(e eventlog.Event) bool { return e.Type == eventlog.RunFailed }); f >= 0 {
		if w, ok := r.writer[r.ordered[f].ID]; ok {
			for i := w - 1; i >= 0; i-- {
				if op := r.in.Ops[i]; op.Actor == r.in.Ops[w].Actor && refused(op) {
					return i
				}
			}
		}
	}
	if i := slices.IndexFunc(r.in.Ops, func(op history.Op) bool { return refused(op) && strings.HasPrefix(op.Actor, "inv-") }); i >= 0 {
		return i
	}
	return slices.IndexFunc(r.in.Ops, refused)
}

// hole explains a run the slot scheme's holes stopped: the empty slot, who
// first refused it, and whether and when it was ever filled.
func (r *run) hole(ex *Explanation) {
	ex.Class = Hole
	slot, above := r.firstGap(), int64(0)
	refused := r.refusal(errHole)
	if refused >= 0 {
		op := r.in.Ops[refused]
		slot, above = op.Slot, op.Above
		refusals := 0
		for _, o := range r.in.Ops {
			if o.Kind == history.OpList && o.Err == errHole && o.Slot == slot {
				refusals++
			}
		}
		ex.View = &View{Actor: op.Actor, Pages: []Page{{After: cursorText(op.After), Start: op.Start, End: op.End}}}
		ex.Evidence = append(ex.Evidence, fmt.Sprintf("%s's load at %s refused empty slot %d below committed slot %d (%d refusals of that slot in all)",
			op.Actor, clock(op.Start), slot, above, refusals))
	}
	if slot == 0 {
		ex.Class = Unknown
		ex.MissingEvidence = append(ex.MissingEvidence, "no load refused a hole and the final log has none")
		return
	}
	ex.Offending = &Event{Index: -1, Seq: slot}
	if i := slices.IndexFunc(r.ordered, func(e eventlog.Event) bool { return e.Seq == slot }); i >= 0 {
		ev := r.event(i)
		ex.Offending = &ev
		msg := fmt.Sprintf("slot %d was filled by %s %s", slot, ev.Type, ev.ID)
		if ev.Writer != "" {
			msg += " written by " + ev.Writer
		}
		if !ev.CommittedAt.IsZero() && refused >= 0 {
			msg += fmt.Sprintf(", committed %s after the first refusal", ms(ev.CommittedAt.Sub(r.in.Ops[refused].Start)))
		}
		ex.Evidence = append(ex.Evidence, msg)
	} else {
		ex.Evidence = append(ex.Evidence, fmt.Sprintf("slot %d is still empty in the final log: its writer never committed and nobody sealed it", slot))
	}
	// The writers that failed before the first refusal are the candidates
	// for the reservation that was never committed in time.
	var failed []string
	for _, op := range r.in.Ops {
		if (op.Kind == history.OpAppend || op.Kind == history.OpAppendFenced) && op.Err != "" && op.Err != "conflict" &&
			(refused < 0 || op.Start.Before(r.in.Ops[refused].Start)) && len(failed) < 3 {
			failed = append(failed, fmt.Sprintf("%s (%s at %s: %s)", op.Actor, writtenTypes(op), clock(op.Start), op.Err))
		}
	}
	if len(failed) > 0 {
		ex.Evidence = append(ex.Evidence, "appends that failed before the first refusal (a reservation left empty): "+joinList(failed))
	}
	if ex.Offending.ID == "" && len(failed) == 0 {
		ex.MissingEvidence = append(ex.MissingEvidence, fmt.Sprintf("the history does not say who reserved slot %d", slot))
	}
}

// writtenTypes names the types an append tried to write.
func writtenTypes(op history.Op) string {
	var ts []string
	for _, w := range op.Wrote {
		ts = append(ts, string(w.Type))
	}
	return joinList(ts)
}

// density explains a gap outcome: the load whose density check failed, the
// position it found empty, and when (if ever) that position committed.
func (r *run) density(ex *Explanation) {
	ex.Class = Density
	refused := r.refusal(errGap, errDup)
	if refused < 0 {
		if pos := r.firstGap(); pos > 0 {
			ex.Offending = &Event{Index: -1, Seq: pos}
			ex.Evidence = append(ex.Evidence, fmt.Sprintf("the final log has no event at seq %d below a committed one", pos))
			return
		}
		ex.Class = Unknown
		ex.MissingEvidence = append(ex.MissingEvidence, "no load failed its density check and the final log is dense")
		return
	}
	op := r.in.Ops[refused]
	ex.View = &View{Actor: op.Actor, Pages: []Page{{After: cursorText(op.After), Start: op.Start, End: op.End}}}
	ex.Evidence = append(ex.Evidence, fmt.Sprintf("%s's load at %s after %s failed its density check: %s", op.Actor, clock(op.Start), cursorText(op.After), op.Err))
	// The empty position: the first after the cursor not committed when
	// the load read, below one that was.
	var seen int64
	for _, e := range r.ordered {
		if c, ok := r.commit[e.ID]; ok && e.Seq > op.After.Seq && c.Before(op.Start) {
			seen = max(seen, e.Seq)
		}
	}
	// The first position absent, or certainly not committed when the load
	// started (its earliest commit observation is later); failing that,
	// the first not surely committed (its latest observation is later).
	for _, sure := range []bool{true, false} {
		for s := op.After.Seq + 1; s < seen; s++ {
			i := slices.IndexFunc(r.ordered, func(e eventlog.Event) bool { return e.Seq == s })
			if i < 0 {
				ex.Offending = &Event{Index: -1, Seq: s}
				ex.Evidence = append(ex.Evidence, fmt.Sprintf("seq %d never committed while seq %d had: a position drawn before commit and lost", s, seen))
				return
			}
			id := r.ordered[i].ID
			c, ok := r.commit[id]
			late := !ok || c.After(op.Start)
			if sure {
				late = ok && r.commitLo[id].After(op.Start)
			}
			if late {
				ev := r.event(i)
				ex.Offending = &ev
				msg := fmt.Sprintf("seq %d (%s by %s) was not committed when the load read while seq %d was", s, ev.Type, orNobody(ev.Writer), seen)
				if ok {
					msg += fmt.Sprintf("; it committed %s later", ms(c.Sub(op.Start)))
				}
				ex.Evidence = append(ex.Evidence, msg)
				return
			}
		}
	}
	ex.MissingEvidence = append(ex.MissingEvidence, "the empty position could not be placed from the commit times")
}

// pending is an operation a stuck run's final log created and never
// completed: where it stands, what it is, and when it was due to advance
// (zero: never, on its own: a hook waits on its sender).
type pending struct {
	at   int
	what string
	due  time.Time
	// why says how due was found.
	why string
	// idle is a hook that has received nothing.
	idle bool
}

// stuck explains a run with no terminal event: slow when it was still
// writing or reading through the quiet period before its end; a blocked
// branch when, silent for that period, its final log replays to decisions
// nobody wrote (a lost wake-up) or holds an operation that was due to
// advance and never did; slow again when nothing pending was due yet.
func (r *run) stuck(ex *Explanation) {
	quiet := r.in.Quiet
	if quiet <= 0 {
		quiet = DefaultQuiet
	}
	open := r.pending()
	var last time.Time
	for _, c := range r.commit {
		if c.After(last) {
			last = c
		}
	}
	switch {
	case r.in.Ended.IsZero() || last.IsZero():
		ex.Class = Unknown
		ex.MissingEvidence = append(ex.MissingEvidence, "the run's end or its last commit time is not recorded: the quiet period cannot be measured")
		return
	case r.in.Ended.Sub(last) < quiet:
		ex.Class = Slow
		ex.Evidence = append(ex.Evidence, fmt.Sprintf("the run was still writing: its last commit was %s before its end (quiet period %s), so it was not blocked",
			ms(r.in.Ended.Sub(last)), quiet))
		slowEvidence(ex, r.in.Ops, r.in.Ended, open)
		return
	}
	if op, ok := inFlight(r.in.Ops, r.in.Ended.Add(-quiet), r.in.Ended); ok {
		ex.Class = Slow
		doing := "writing"
		if op.Kind == history.OpList {
			doing = "reading"
		}
		ex.Evidence = append(ex.Evidence, fmt.Sprintf("the run was still %s: %s was in flight through the quiet period (%s) before its end, %s, so it was not blocked",
			doing, opName(op), quiet, opSpan(op)))
		slowEvidence(ex, r.in.Ops, r.in.Ended, open)
		return
	}
	if r.lostWake(ex, last) {
		return
	}
	if len(open) == 0 {
		ex.Class = Unknown
		ex.MissingEvidence = append(ex.MissingEvidence, "the final log has no operation created and left pending, and a replay of it derives nothing new")
		return
	}
	cut := r.in.Ended.Add(-quiet)
	var blocked []pending
	for _, p := range open {
		if !p.due.IsZero() && p.due.Before(cut) {
			blocked = append(blocked, p)
		}
	}
	if len(blocked) == 0 {
		ex.Class = Slow
		ex.Evidence = append(ex.Evidence, fmt.Sprintf("nothing pending was due by %s before the run's end (quiet period): the timeout cut work in progress, so it was not blocked", quiet))
		ex.Evidence = append(ex.Evidence, pendingEvidence(open)...)
		return
	}
	ex.Class = BlockedBranch
	ev := r.event(blocked[0].at)
	ex.Offending = &ev
	ex.Evidence = append(ex.Evidence, blocked[0].what+"; "+blocked[0].why)
	if len(blocked) > 1 {
		ex.Evidence = append(ex.Evidence, plural.Count(len(blocked)-1, "more operation")+" overdue")
	}
	if n := len(open) - len(blocked); n > 0 {
		ex.Evidence = append(ex.Evidence, fmt.Sprintf("%s pending and not yet due", plural.Count(n, "more operation")))
	}
	ex.Evidence = append(ex.Evidence, fmt.Sprintf("nothing committed for %s before the run's end (last commit at %s)", ms(r.in.Ended.Sub(last)), clock(last)))
}

// lostWake classes a stuck run blocked-branch when a reference replay of
// its final log derives decisions nobody wrote: the log held what the
// workflow needed to go on, and no invocation acted on it for the quiet
// period (a wake-up that was lost, or a load that missed the newest fact).
// The offending event is the newest fact of the log. A replay that
// diverges, or derives nothing, says nothing here.
func (r *run) lostWake(ex *Explanation, last time.Time) bool {
	if r.in.Program == nil {
		return false
	}
	out := r.replayFinal()
	if out.Divergence != nil || len(out.Decisions) == 0 {
		return false
	}
	ex.Class = BlockedBranch
	newest := -1
	for i, e := range r.ordered {
		if e.Type.IsDecision() {
			continue
		}
		if newest < 0 || r.commit[e.ID].After(r.commit[r.ordered[newest].ID]) {
			newest = i
		}
	}
	if newest >= 0 {
		ev := r.event(newest)
		ex.Offending = &ev
	}
	var names []string
	for _, d := range out.Decisions {
		names = append(names, decisionOf(d).name())
	}
	ex.Evidence = append(ex.Evidence, fmt.Sprintf("a replay of the final log (%d events, %s wake) derives %s nobody wrote: %s",
		len(r.ordered), r.wake, plural.Count(len(out.Decisions), "decision"), joinList(names)))
	ex.Evidence = append(ex.Evidence, fmt.Sprintf("nothing committed for %s before the run's end (last commit at %s) and no write or load was in flight: no invocation acted on the log as it stood",
		ms(r.in.Ended.Sub(last)), clock(last)))
	return true
}

// pendingEvidence says what each pending operation was waiting for, the
// ones with a due time first (soonest first), hooks that had received
// nothing folded into one line.
func pendingEvidence(open []pending) []string {
	timed := slices.Clone(open)
	timed = slices.DeleteFunc(timed, func(p pending) bool { return p.due.IsZero() })
	slices.SortStableFunc(timed, func(a, b pending) int { return a.due.Compare(b.due) })
	var out []string
	for _, p := range timed {
		out = append(out, p.what+"; "+p.why)
	}
	var idle int
	for _, p := range open {
		switch {
		case !p.due.IsZero():
		case p.idle:
			idle++
		default:
			out = append(out, p.what+"; "+p.why)
		}
	}
	if idle > 0 {
		out = append(out, plural.Count(idle, "hook")+" created and not yet resumed: waiting on their senders")
	}
	return out
}

// pending lists the operations the final log created and never completed,
// in log order, each with when it was due to advance.
func (r *run) pending() []pending {
	done := map[string]bool{}
	started := map[string]time.Time{}
	received := map[string]int{}
	for _, e := range r.ordered {
		switch e.Type {
		case eventlog.StepCompleted, eventlog.StepFailed, eventlog.WaitCompleted, eventlog.HookDisposed:
			done[e.CorrelationID] = true
		case eventlog.StepStarted:
			if _, ok := started[e.CorrelationID]; !ok {
				started[e.CorrelationID] = r.commit[e.ID]
			}
		case eventlog.HookReceived:
			received[e.CorrelationID]++
		}
	}
	var open []pending
	for i, e := range r.ordered {
		if done[e.CorrelationID] {
			continue
		}
		switch e.Type {
		case eventlog.StepCreated:
			name, args := step(e.Type, e.Payload)
			p := pending{at: i, what: fmt.Sprintf("step %q (%s) was created and never completed", name, e.CorrelationID)}
			p.due, p.why = r.stepDue(e, name, args, started)
			open = append(open, p)
		case eventlog.WaitCreated:
			p := pending{at: i, what: fmt.Sprintf("wait %s was created and never completed", e.CorrelationID)}
			p.due, p.why = r.waitDue(e)
			open = append(open, p)
		case eventlog.HookCreated:
			open = append(open, pending{at: i, what: fmt.Sprintf("hook %s (token %q) was created, received %d payloads and was never disposed", e.CorrelationID, e.Token, received[e.CorrelationID]),
				why: "a hook waits on its sender", idle: received[e.CorrelationID] == 0})
		}
	}
	return open
}

// stepDue is when a created step was due to complete: a step worker starts
// it at once (due at its creation's commit when never started), and a
// started one is due when its work, as the scenario's step function says
// for its arguments, is over. A started step whose work is unknown is due
// when it started.
func (r *run) stepDue(created eventlog.Event, name, args string, started map[string]time.Time) (time.Time, string) {
	s, ok := started[created.CorrelationID]
	if !ok {
		c := r.committed(created)
		return c, "never started, although a step worker starts a step once its step_created commits (at " + clock(c) + ")"
	}
	fn, ok := r.in.Steps[name]
	if !ok {
		return s, "started at " + clock(s) + "; how long its work lasts is not known here"
	}
	out, err := fn(json.RawMessage(args))
	if err != nil {
		return s, "started at " + clock(s) + " and fails at once"
	}
	due := s.Add(out.Took)
	return due, fmt.Sprintf("started at %s, its work lasts %s: due to complete at %s", clock(s), ms(out.Took), clock(due))
}

// committed is when e committed, or when it was minted where its commit
// time is not known.
func (r *run) committed(e eventlog.Event) time.Time {
	if c := r.commit[e.ID]; !c.IsZero() {
		return c
	}
	return e.MintedAt
}

// waitDue is when a wait's wake-up was due at the latest: its resumeAt
// plus one timer tick (the runtime rounds the wake-up's delay up to whole
// ticks).
func (r *run) waitDue(created eventlog.Event) (time.Time, string) {
	var p struct {
		ResumeAt time.Time `json:"resumeAt"`
	}
	if json.Unmarshal(created.Payload, &p) != nil || p.ResumeAt.IsZero() {
		return r.committed(created), "its resumeAt is not recorded"
	}
	tick := cmp.Or(r.in.TimerTick, engine.DefaultTimerTick)
	due := p.ResumeAt.Add(tick)
	return due, fmt.Sprintf("its timer (resumeAt %s, woken within a %s tick) was due by %s", clock(p.ResumeAt), tick, clock(due))
}

func orNobody(actor string) string {
	if actor == "" {
		return "an unrecorded writer"
	}
	return actor
}

// slowestAppend is the append (plain or fenced) of ops that took longest
// from its start to its return; one that had not returned by the run's
// end counts until then.
func slowestAppend(ops []history.Op, ended time.Time) (history.Op, bool) {
	return longestAppend(ops, ended, func(history.Op) bool { return true })
}

// longestAppend is the longest append (plain or fenced) of ops that keep
// accepts; one that had not returned counts until ended.
func longestAppend(ops []history.Op, ended time.Time, keep func(history.Op) bool) (history.Op, bool) {
	var best history.Op
	found := false
	took := func(op history.Op) time.Duration {
		if op.End.IsZero() {
			return ended.Sub(op.Start)
		}
		return op.End.Sub(op.Start)
	}
	for _, op := range ops {
		if op.Kind != history.OpAppend && op.Kind != history.OpAppendFenced || !keep(op) {
			continue
		}
		if !found || took(op) > took(best) {
			best, found = op, true
		}
	}
	return best, found
}

// opSpan says when an append or a load started and returned, or that
// it had not returned.
func opSpan(op history.Op) string {
	if op.End.IsZero() {
		return fmt.Sprintf("from %s, not returned by the run's end", clock(op.Start))
	}
	return fmt.Sprintf("from %s to %s", clock(op.Start), clock(op.End))
}

// slowEvidence adds what a slow run was doing: how many operations were
// pending (the first of them) and its slowest append.
func slowEvidence(ex *Explanation, ops []history.Op, ended time.Time, open []pending) {
	if len(open) > 0 {
		ex.Evidence = append(ex.Evidence, fmt.Sprintf("%s still pending at the end: %s", plural.Count(len(open), "operation"), open[0].what))
	} else {
		ex.Evidence = append(ex.Evidence, "no operation pending at the end")
	}
	op, ok := slowestAppend(ops, ended)
	switch {
	case !ok:
	case op.End.IsZero():
		ex.Evidence = append(ex.Evidence, fmt.Sprintf("the slowest append took over %s: %s, %s",
			ms(ended.Sub(op.Start)), opName(op), opSpan(op)))
	default:
		ex.Evidence = append(ex.Evidence, fmt.Sprintf("the slowest append took %s: %s, %s",
			ms(op.End.Sub(op.Start)), opName(op), opSpan(op)))
	}
}

// opName names an append by what it wrote and who wrote it, or a load
// by who read.
func opName(op history.Op) string {
	if op.Kind == history.OpList {
		return "a load of the log by " + orNobody(op.Actor)
	}
	what := "an append"
	if len(op.Wrote) > 0 {
		what = "an append of " + string(op.Wrote[0].Type)
	}
	return what + " by " + orNobody(op.Actor)
}

// inFlight is the longest append, else the earliest-started load, that
// started before from and returned after it (or never): a write or a read
// the run was still waiting on through the window [from, end].
func inFlight(ops []history.Op, from, end time.Time) (history.Op, bool) {
	through := func(op history.Op) bool {
		return op.Start.Before(from) && (op.End.IsZero() || op.End.After(from))
	}
	if op, ok := longestAppend(ops, end, through); ok {
		return op, true
	}
	var best history.Op
	found := false
	for _, op := range ops {
		if op.Kind == history.OpList && through(op) && (!found || op.Start.Before(best.Start)) {
			best, found = op, true
		}
	}
	return best, found
}
