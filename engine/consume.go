package engine

import (
	"encoding/json"
	"errors"
	"strings"
	"time"

	"github.com/stormctl/stormctl/eventlog"
)

// errStepFailed is the error a failed step's future settles with.
var errStepFailed = errors.New("step failed")

// consume matches one event to the operation it addresses. It returns the
// branches the event woke and the value they resume with, or the divergence
// the engine would raise. Callers hold r.mu.
func (r *replay) consume(e *eventlog.Event) ([]*branch, json.RawMessage, *DivergenceError) {
	typ, corr := string(e.Type), e.CorrelationID
	o := r.ops[corr]
	unconsumed := func() *DivergenceError {
		return diverge("unconsumed", typ, corr, "Replay could not consume event %s for %s", typ, corr)
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
	case eventlog.RunCreated:
		return nil, nil, nil

	case eventlog.StepCreated:
		var p stepCreated
		_ = json.Unmarshal(e.Payload, &p)
		if o == nil {
			return nil, nil, diverge("not_in_queue", typ, corr, "step %q (%s) created but not found in invocation queue", p.Name, corr)
		}
		if err := want(opStep, false); err != nil {
			return nil, nil, err
		}
		if p.Name != o.name {
			return nil, nil, diverge("step_name", typ, corr, "step event %s for %s belongs to %q, but the current step consumer is %q", typ, corr, p.Name, o.name)
		}
		o.created = true
		return nil, nil, nil

	case eventlog.StepStarted:
		return nil, nil, want(opStep, true)

	case eventlog.StepCompleted, eventlog.StepFailed:
		if err := want(opStep, true); err != nil {
			return nil, nil, err
		}
		if e.Type == eventlog.StepFailed {
			return r.settle(o.fut, nil, errStepFailed, 0), nil, nil
		}
		var p stepCompleted
		_ = json.Unmarshal(e.Payload, &p)
		return r.settle(o.fut, p.Result, nil, 0), p.Result, nil

	case eventlog.WaitCreated:
		if err := want(opWait, false); err != nil {
			return nil, nil, err
		}
		var p waitCreated
		_ = json.Unmarshal(e.Payload, &p)
		if time.Duration(p.DurationMs)*time.Millisecond != o.dur.Truncate(time.Millisecond) {
			return nil, nil, diverge("wait_duration", typ, corr, "wait %s resumeAt differs: log slept %dms, the code sleeps %dms", corr, p.DurationMs, o.dur.Milliseconds())
		}
		o.created = true
		return nil, nil, nil

	case eventlog.WaitCompleted:
		if err := want(opWait, true); err != nil {
			return nil, nil, err
		}
		return r.settle(o.fut, nil, nil, 0), nil, nil

	case eventlog.HookCreated:
		if err := want(opHook, false); err != nil {
			return nil, nil, err
		}
		if e.Token != o.token {
			return nil, nil, diverge("hook_token", typ, corr, "hook event for %s has token %q, but the code expects %q", corr, e.Token, o.token)
		}
		o.created = true
		return nil, nil, nil

	case eventlog.HookReceived:
		if err := want(opHook, true); err != nil {
			return nil, nil, err
		}
		if o.disposed {
			return nil, nil, nil
		}
		o.payloads = append(o.payloads, e.Payload)
		var woken []*branch
		for o.next < len(o.payloads) && len(o.pending) > 0 {
			woken = append(woken, r.settle(o.pending[0], o.payloads[o.next], nil, 0)...)
			o.pending = o.pending[1:]
			o.next++
		}
		return woken, e.Payload, nil

	case eventlog.HookDisposed:
		if err := want(opHook, true); err != nil {
			return nil, nil, err
		}
		if !o.disposing {
			return nil, nil, unconsumed()
		}
		o.disposed = true
		return nil, nil, nil

	case eventlog.AttrSet:
		if strings.HasPrefix(e.Dedup, StepAttrDedup) {
			return nil, nil, nil // set by a step worker, out of band: not replayed
		}
		if err := want(opAttr, false); err != nil {
			return nil, nil, err
		}
		var p attrSet
		_ = json.Unmarshal(e.Payload, &p)
		if p.Key != o.name {
			return nil, nil, diverge("attr_key", typ, corr, "attribute event for %s sets %q, but the code sets %q", corr, p.Key, o.name)
		}
		o.created = true
		return nil, nil, nil
	}
	return nil, nil, unconsumed()
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
				Payload: mustJSON(waitCreated{DurationMs: o.dur.Milliseconds(), ResumeAt: r.now.Add(o.dur)})})
		case opHook:
			out = append(out, eventlog.Draft{Type: eventlog.HookCreated, CorrelationID: o.id, Token: o.token,
				Payload: mustJSON(map[string]string{"token": o.token})})
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
	return eventlog.Draft{Type: eventlog.RunFailed, Payload: mustJSON(RunFailure{Code: code, Message: msg})}
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
