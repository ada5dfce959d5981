package worldtest

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/stormctl/stormctl/internal/eventlog"
	"github.com/stormctl/stormctl/worlds"
)

// A world with worlds.Limits (a real implementation run as it is: the
// devkit worlds) is checked on everything it can do. The suite skips, with
// the world's reason, what it declares it cannot do: fenced appends, the
// idempotency keys it does not enforce, the event types it cannot store.
// Where only the shape of the drafts is at stake (Limits.Lifecycle: the
// store validates each event against its entity), the suite writes drafts
// of that shape instead: an event follows its entity's creation (lifecycle
// below), carries a payload only where such stores keep one, and a wait's
// payload is its resumeAt. The checks on what comes back are the same.

// lifecycleResumeAt is the resumeAt of every wait draft in lifecycle mode.
const lifecycleResumeAt = "2026-01-02T03:04:05.678Z"

// bareTypes carry no payload in a lifecycle store.
var bareTypes = map[eventlog.Type]bool{eventlog.StepStarted: true, eventlog.HookDisposed: true}

// lifecycle reports whether the world needs lifecycle-shaped drafts.
func (f *fixture) lifecycle() bool { return f.s.limits.Lifecycle != "" }

// draft is the suite's draft of type t for corr: Draft(t, corr), shaped for
// a lifecycle store when the world is one.
func (f *fixture) draft(t eventlog.Type, corr string) eventlog.Draft {
	d := Draft(t, corr)
	if !f.lifecycle() {
		return d
	}
	switch {
	case bareTypes[t] || f.s.limits.Bare[t] != "":
		d.Payload = nil
	case t == eventlog.WaitCreated || t == eventlog.WaitCompleted:
		d.Payload = json.RawMessage(fmt.Sprintf(`{"resumeAt":%q}`, lifecycleResumeAt))
	}
	return d
}

// mix is mix(tag, n) for the world: for a lifecycle store, the same drafts
// shaped for it, each event after its entity's creation within its group
// of six: step_created, its step_started, hook_created, its hook_received,
// wait_created, the step's step_completed.
func (f *fixture) mix(tag string, n int) []eventlog.Draft {
	out := mix(tag, n)
	if !f.lifecycle() {
		return out
	}
	// back is how far, within its group, each position's entity was
	// created: the step at 0 and the hook at 2.
	back := [6]int{0, 1, 0, 1, 0, 5}
	for i := range out {
		if k := back[i%6]; k > 0 {
			out[i].CorrelationID = fmt.Sprintf("%s_%03d", tag, i-k)
		}
		out[i] = f.shape(out[i])
	}
	return out
}

// creator is the draft that creates the entity an event of type t
// addresses, for a lifecycle store ("" : none needed).
var creator = map[eventlog.Type]eventlog.Type{
	eventlog.StepStarted: eventlog.StepCreated, eventlog.StepCompleted: eventlog.StepCreated, eventlog.StepFailed: eventlog.StepCreated,
	eventlog.HookReceived: eventlog.HookCreated, eventlog.HookDisposed: eventlog.HookCreated,
	eventlog.WaitCompleted: eventlog.WaitCreated,
}

// withCreators returns ds, shaped for the world, with the creation of each
// entity a draft addresses put before its first use when neither ds nor
// have (the log so far) creates it: the writes a lifecycle store needs
// before the ones under test. Other worlds get ds as they are.
func (f *fixture) withCreators(have []eventlog.Event, ds ...eventlog.Draft) []eventlog.Draft {
	if !f.lifecycle() {
		return ds
	}
	made := map[string]bool{}
	for _, e := range have {
		made[string(e.Type)+"/"+e.CorrelationID] = true
	}
	var out []eventlog.Draft
	for _, d := range ds {
		d = f.shape(d)
		if c, ok := creator[d.Type]; ok && !made[string(c)+"/"+d.CorrelationID] {
			cd := f.draft(c, d.CorrelationID)
			if c == eventlog.HookCreated {
				cd.Token = "tok_" + d.CorrelationID
			}
			out = append(out, cd)
			made[string(c)+"/"+d.CorrelationID] = true
		}
		made[string(d.Type)+"/"+d.CorrelationID] = true
		out = append(out, d)
	}
	return out
}

// shape reshapes a draft written by Draft() for the world, keeping its
// token and dedup value.
func (f *fixture) shape(d eventlog.Draft) eventlog.Draft {
	x := f.draft(d.Type, d.CorrelationID)
	x.Token, x.Dedup = d.Token, d.Dedup
	if d.Type == eventlog.RunCreated {
		x.CorrelationID, x.Payload = d.CorrelationID, d.Payload
	}
	return x
}

// skipFence skips t, saying why, when the world has no fenced append.
func (s *suite) skipFence(t testing.TB, what string) {
	t.Helper()
	if s.limits.Fence != "" {
		t.Skipf("%s: the world has no fenced append: %s", what, s.limits.Fence)
	}
}

// appendMaybeFenced is a fenced append at expected, or, on a world without
// fenced appends, a plain one (the fence is not what the caller tests).
func (f *fixture) appendMaybeFenced(expected int64, d ...eventlog.Draft) []eventlog.Event {
	f.t.Helper()
	if f.s.limits.Fence != "" {
		f.t.Logf("appending unfenced: the world has no fenced append: %s", f.s.limits.Fence)
		return f.append(d...)
	}
	return f.appendFenced(expected, d...)
}

// unkeyed returns why a world with limits l does not enforce one of d's
// keys, or "".
func unkeyed(l worlds.Limits, d eventlog.Draft) string {
	for _, k := range d.Keys() {
		kind, _, _ := strings.Cut(k, "/")
		if why := l.Unkeyed[kind]; why != "" {
			return fmt.Sprintf("key %s: %s", k, why)
		}
	}
	return ""
}
