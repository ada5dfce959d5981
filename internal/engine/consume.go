package engine

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"time"

	"github.com/stormctl/stormctl/internal/eventlog"
)

// errStepFailed is the error a failed step's future settles with.
var errStepFailed = errors.New("step failed")

// ErrHookConflict is the error a hook's payloads fail with when the store
// answered its creation with a hook_conflict: another hook holds its token.
var ErrHookConflict = errors.New("hook token conflict: another hook holds the token")

// HookForceClaimedError is the error a hook's awaiters fail with when
// another run took its token (spec 8's HookForceClaimedError): its
// hook_disposed carries forceClaimedBy.
type HookForceClaimedError struct {
	Token string
	By    eventlog.HookRef
}

func (e *HookForceClaimedError) Error() string {
	return "hook token " + e.Token + " force-claimed by run " + e.By.RunID + " (hook " + e.By.HookID + ")"
}

// deliveryKind is what a delivery resolves, for the delivery barriers.
type deliveryKind int

const (
	deliverStep deliveryKind = iota + 1
	deliverWait
	deliverHook
)

// delivery is an event's effect on the code: the futures it settles. It runs
// under r.mu and returns the branches it woke.
type delivery struct {
	kind deliveryKind
	val  json.RawMessage
	run  func() []*branch
}

// consume matches one event to the operation it addresses. It returns the
// delivery the event makes to the code (nil when it only confirms a
// decision), or the divergence the engine would raise; a divergence leaves
// the replay's state as it was. Callers hold r.mu.
//
// An operation's consumer lives, as in core 4.8.9, from the call until its
// terminal event (step_completed or step_failed, wait_completed,
// hook_disposed). Before it, a repeated creation is consumed again: a second
// step_created is checked by name like the first, a second wait_created
// replaces the resumeAt the completion must carry, a second hook_created is
// checked by token. After it, the consumer is gone, so any later event of
// the id (a creation duplicated by a world whose creations are not unique,
// landing after the completion; a second start or completion) is consumed by
// nobody: "Replay could not consume event". Outcomes follow from where the
// log puts a duplicate, not from the duplicate itself. Under RepeatsInert
// (spec 9) such an event is stepped over instead: "Replay treats any event
// for an entity after its terminal event as inert".
func (r *replay) consume(e *eventlog.Event) (*delivery, *DivergenceError) {
	typ, corr := string(e.Type), e.CorrelationID
	o := r.ops[corr]
	unconsumed := func() *DivergenceError {
		return diverge("unconsumed", typ, corr, "Replay could not consume event %s for %s", typ, corr)
	}
	if e.Type == eventlog.AttrSet && strings.HasPrefix(e.Dedup, StepAttrDedup) {
		return nil, nil // set by a step worker, out of band: not replayed
	}
	if o != nil && o.finished && !(e.Type == eventlog.HookReceived && o.disposed) {
		// A payload after its hook's disposal stays ignored (see below);
		// everything else of a finished operation has no consumer, unless
		// the replay holds it inert (spec 9).
		if r.inert {
			return nil, nil
		}
		return nil, unconsumed()
	}
	want := func(k opKind, created bool) *DivergenceError {
		if o == nil {
			return unconsumed()
		}
		if o.kind != k {
			return diverge("unexpected_type", typ, corr, "unexpected event type %s for %s entity %s", typ, o.kind, corr)
		}
		if created && !o.created {
			return unconsumed()
		}
		return nil
	}
	switch e.Type {
	case eventlog.RunCreated, eventlog.RunStarted, eventlog.Noop:
		// A noop seals a slot whose writer never committed, and run_started
		// (the real runtime's, read back when explain replays its log) marks
		// the run's first invocation: no workflow meaning, stepped over
		// without advancing anything.
		return nil, nil

	case eventlog.StepCreated:
		var p stepCreated
		_ = json.Unmarshal(e.Payload, &p)
		if o == nil {
			return nil, diverge("not_in_queue", typ, corr, "step %q (%s) created but not found in invocation queue", p.Name, corr)
		}
		if err := want(opStep, false); err != nil {
			return nil, err
		}
		if p.Name != o.name {
			return nil, diverge("step_name", typ, corr, "step event %s for %s belongs to %q, but the current step consumer is %q", typ, corr, p.Name, o.name)
		}
		if r.unchecked == nil && !sameJSON(p.Args, o.args) {
			r.unchecked = diverge("step_args", typ, corr, "step %q (%s) was created with arguments %s, but the call has %s", p.Name, corr, p.Args, o.args)
			r.unchecked.Index = -1
		}
		o.created = true
		return nil, nil

	case eventlog.StepStarted:
		return nil, want(opStep, true)

	case eventlog.StepCompleted, eventlog.StepFailed:
		if err := want(opStep, true); err != nil {
			return nil, err
		}
		o.finished = true
		if e.Type == eventlog.StepFailed {
			return &delivery{kind: deliverStep, run: func() []*branch { return r.settle(o.fut, nil, errStepFailed, 0) }}, nil
		}
		var p stepCompleted
		_ = json.Unmarshal(e.Payload, &p)
		return &delivery{kind: deliverStep, val: p.Result, run: func() []*branch { return r.settle(o.fut, p.Result, nil, 0) }}, nil

	case eventlog.WaitCreated:
		if err := want(opWait, false); err != nil {
			return nil, err
		}
		// The log's resumeAt wins over the one the code would compute.
		var p waitCreated
		_ = json.Unmarshal(e.Payload, &p)
		o.resumeAt, o.created = p.ResumeAt, true
		return nil, nil

	case eventlog.WaitCompleted:
		if err := want(opWait, true); err != nil {
			return nil, err
		}
		var p waitCompleted
		_ = json.Unmarshal(e.Payload, &p)
		if !p.ResumeAt.IsZero() && !p.ResumeAt.Equal(o.resumeAt) {
			return nil, diverge("wait_resume_at", typ, corr, "wait %s completed for resumeAt %s, but it was created for %s", corr,
				p.ResumeAt.Format(time.RFC3339Nano), o.resumeAt.Format(time.RFC3339Nano))
		}
		o.finished = true
		return &delivery{kind: deliverWait, run: func() []*branch { return r.settle(o.fut, nil, nil, 0) }}, nil

	case eventlog.HookCreated:
		if err := want(opHook, false); err != nil {
			return nil, err
		}
		if e.Token != o.token {
			return nil, diverge("hook_token", typ, corr, "hook event for %s has token %q, but the code expects %q", corr, e.Token, o.token)
		}
		o.created = true
		return nil, nil

	case eventlog.HookReceived:
		if err := want(opHook, true); err != nil {
			return nil, err
		}
		if o.disposed {
			// Core's consumer is gone here too, but the real worlds refuse
			// a payload for a disposed hook (its entity is deleted); the
			// model's worlds accept it, so it is ignored rather than left
			// unconsumed (engine-model.md: a hook payload after
			// hook_disposed).
			return nil, nil
		}
		if r.wake == WakeEngine {
			// Payloads queue in log order at once; a Next waiting for
			// this one gets it when the delivery runs.
			o.payloads = append(o.payloads, e.Payload)
			if len(o.pending) <= o.held {
				// No Next waits for it: buffered behind an unarmed
				// barrier until a Next claims it or the replay idles.
				o.unarmed++
				r.unarmed++
				return nil, nil
			}
			o.held++
			return &delivery{kind: deliverHook, val: e.Payload, run: func() []*branch {
				o.held--
				return r.hand(o)
			}}, nil
		}
		return &delivery{kind: deliverHook, val: e.Payload, run: func() []*branch { return r.receive(o, e.Payload) }}, nil

	case eventlog.HookConflict:
		// Written by the store in place of the hook's hook_created (the
		// devkit packages, when another hook holds the token). As in core:
		// the hook counts as created, and what awaits its payloads fails.
		if err := want(opHook, false); err != nil {
			return nil, err
		}
		o.created, o.conflict = true, ErrHookConflict
		return &delivery{kind: deliverHook, run: func() []*branch {
			var woken []*branch
			for _, f := range o.pending {
				woken = append(woken, r.settle(f, nil, o.conflict, 0)...)
			}
			o.pending = nil
			return woken
		}}, nil

	case eventlog.HookDisposed:
		// Consumed whatever the code intends, as in core: the hook stops
		// listening; the code's own Dispose then writes nothing.
		if err := want(opHook, true); err != nil {
			if by := eventlog.ForceClaimedBy(*e); by == nil || o == nil || o.kind != opHook {
				return nil, err
			}
			// Core settles a forced disposal whose hook_created the log
			// does not hold yet too: the hook was registered, it just no
			// longer holds the token.
		}
		o.disposed, o.finished = true, true
		if by := eventlog.ForceClaimedBy(*e); by != nil {
			// Spec 8: not this run's disposal. Payloads that landed
			// before it stay valid (buffered or delivered); the awaiters
			// waiting for one that now goes elsewhere fail, here and at
			// every later Next.
			o.claimed = &HookForceClaimedError{Token: o.token, By: *by}
			return &delivery{kind: deliverHook, run: func() []*branch {
				var woken []*branch
				for _, f := range o.pending {
					woken = append(woken, r.settle(f, nil, o.claimed, 0)...)
				}
				o.pending = nil
				return woken
			}}, nil
		}
		return nil, nil

	case eventlog.AttrSet:
		if err := want(opAttr, false); err != nil {
			return nil, err
		}
		var p attrSet
		_ = json.Unmarshal(e.Payload, &p)
		if p.Key != o.name {
			return nil, diverge("attr_key", typ, corr, "attribute event for %s sets %q, but the code sets %q", corr, p.Key, o.name)
		}
		o.created = true
		return nil, nil
	}
	return nil, unconsumed()
}

// sameJSON reports whether two JSON texts are the same value: key order
// and space do not matter (a store may keep payloads as jsonb, which
// reorders keys).
func sameJSON(a, b json.RawMessage) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return bytes.Equal(a, b)
	}
	return reflect.DeepEqual(x, y)
}

// receive delivers a hook payload: to the Next waiting for it, or into the
// hook's buffer, where a later Next claims it. A payload consumed before
// its hook's disposal is still delivered. Callers hold r.mu.
func (r *replay) receive(o *op, payload json.RawMessage) []*branch {
	o.payloads = append(o.payloads, payload)
	return r.hand(o)
}

// hand gives the hook's queued payloads, in order, to the Nexts waiting for
// them. Callers hold r.mu.
func (r *replay) hand(o *op) []*branch {
	var woken []*branch
	for o.next < len(o.payloads) && len(o.pending) > 0 {
		woken = append(woken, r.settle(o.pending[0], o.payloads[o.next], nil, 0)...)
		o.pending = o.pending[1:]
		o.next++
	}
	return woken
}

// decisions lists the decisions the code made that the log does not hold.
// Callers hold r.mu.
func (r *replay) decisions() []eventlog.Draft {
	var out []eventlog.Draft
	for _, in := range r.intents {
		o := in.op
		if in.dispose {
			if !o.disposed {
				out = append(out, eventlog.Draft{Type: eventlog.HookDisposed, CorrelationID: o.id})
			}
			continue
		}
		if o.created {
			continue
		}
		switch o.kind {
		case opStep:
			out = append(out, eventlog.Draft{Type: eventlog.StepCreated, CorrelationID: o.id,
				Payload: mustJSON(stepCreated{Name: o.name, Args: o.args})})
		case opWait:
			out = append(out, eventlog.Draft{Type: eventlog.WaitCreated, CorrelationID: o.id,
				Payload: mustJSON(waitCreated{DurationMs: o.dur.Milliseconds(), ResumeAt: o.resumeAt})})
		case opHook:
			out = append(out, eventlog.Draft{Type: eventlog.HookCreated, CorrelationID: o.id, Token: o.token,
				Payload: mustJSON(map[string]string{"token": o.token}), Force: o.force})
		case opAttr:
			out = append(out, eventlog.Draft{Type: eventlog.AttrSet, CorrelationID: o.id,
				Payload: mustJSON(attrSet{Key: o.name, Value: o.args})})
		}
	}
	if r.mainDone {
		if r.progErr != nil {
			out = append(out, FailureDraft(CodeWorkflow, r.progErr.Error()))
		} else {
			out = append(out, eventlog.Draft{Type: eventlog.RunCompleted, Payload: mustJSON(runCompleted{Output: r.output})})
		}
	}
	return out
}

// FailureDraft is the run_failed decision for a code and message.
func FailureDraft(code, msg string) eventlog.Draft {
	return failureDraft(RunFailure{Code: code, Message: msg})
}

func failureDraft(f RunFailure) eventlog.Draft {
	return eventlog.Draft{Type: eventlog.RunFailed, Payload: mustJSON(f)}
}

// Output returns the output recorded in a run_completed event.
func Output(e eventlog.Event) (json.RawMessage, error) {
	var p runCompleted
	if err := json.Unmarshal(e.Payload, &p); err != nil {
		return nil, err
	}
	return p.Output, nil
}

// Failure returns the code and message recorded in a run_failed event.
func Failure(e eventlog.Event) RunFailure {
	var p RunFailure
	_ = json.Unmarshal(e.Payload, &p)
	return p
}
