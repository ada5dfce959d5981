package explain

import (
	"fmt"
	"slices"
	"time"

	"github.com/stormctl/stormctl/internal/base/plural"
	"github.com/stormctl/stormctl/internal/history"
)

// This file holds the slow class's evidence: what was in flight, the slowest
// append, and what each pending operation awaited.

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
