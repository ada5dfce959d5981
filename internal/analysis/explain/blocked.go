package explain

import (
	"cmp"
	"encoding/json"
	"fmt"
	"time"

	"github.com/stormctl/stormctl/internal/base/plural"
	"github.com/stormctl/stormctl/internal/engine"
	"github.com/stormctl/stormctl/internal/eventlog"
)

// This file holds the blocked-branch class's evidence: a lost wake-up, and
// the pending operations with when each was due to advance.

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

// lostWake classes a stuck run blocked-branch when a reference replay of
// its final log derives decisions nobody wrote: the log held what the
// workflow needed to go on, and no invocation acted on it for the quiet
// period (a wake-up that was lost, or a load that missed the newest fact).
// The offending event is the newest fact of the log. A replay that
// diverges, or derives nothing, says nothing here; nor does a run of an
// engine explain has no reference replay of.
func (r *run) lostWake(ex *Explanation, last time.Time) bool {
	if r.in.Program == nil || !r.reference {
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
