package explain

import (
	"fmt"
	"time"

	"github.com/stormctl/stormctl/internal/base/plural"
	"github.com/stormctl/stormctl/internal/history"
)

// This file explains a stuck run: blocked-branch, slow or unknown.

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

// starved explains an infra run the harness starved: the host process
// that ran it was saturated for most of its life, so what it did (or did
// not) is no evidence about the runtime.
func starved(h *history.Harness, ex *Explanation) {
	ex.Class = Starved
	machine := "not read"
	if h.MachineBusy >= 0 {
		machine = fmt.Sprintf("%.0f%% busy", 100*h.MachineBusy)
	}
	ex.Evidence = append(ex.Evidence,
		fmt.Sprintf("its host (%d) reported its event loop at %.0f%% busy or more for %.0f%% of the run's life (%s; median %.0f%%, p99 %.0f%%; loop delay p99 up to %.0f ms)",
			h.Host, 100*history.SaturatedELU, 100*h.Saturated, plural.Count(h.Samples, "report"), 100*h.ELUP50, 100*h.ELUP99, h.DelayP99Ms),
		"the machine's CPU over the run's life: "+machine,
		fmt.Sprintf("the run's share of its host's CPU: %.1f s, of stormctl's: %.2f s", h.HostCPUMs/1000, h.StormctlCPUMs/1000))
}
