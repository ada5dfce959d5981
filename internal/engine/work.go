package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/stormctl/stormctl/internal/base/clock"
	"github.com/stormctl/stormctl/internal/eventlog"
	"github.com/stormctl/stormctl/worlds"
)

// Hook delivery errors.
var (
	// ErrHookNotFound: no hook with the token is in the log yet.
	ErrHookNotFound = errors.New("engine: hook not found")
	// ErrHookDisposed: the hook was disposed; the payload was dropped.
	ErrHookDisposed = errors.New("engine: hook disposed")
)

// StepAttrDedup prefixes the dedup value of an attr_set a step worker writes
// (then the attribute's key): such events carry the step's correlation id and
// are not consumed by replay.
const StepAttrDedup = "step-attr:"

// outsidePage is the page size of readers outside the engine's replay
// (drivers, hook senders, tail-fenced fact writers): one page holds a whole
// storm run's log, so they do not multiply the store's scans.
const outsidePage = 1000

// startStep runs a step worker for a committed step_created, once per step:
// the step's queue message is idempotent by step.
func (rt *Runtime) startStep(s *runState, created eventlog.Event) {
	s.mu.Lock()
	dup := s.steps[created.CorrelationID]
	s.steps[created.CorrelationID] = true
	s.mu.Unlock()
	if dup {
		return
	}
	rt.spawn(s, func() {
		ctx := worlds.WithActor(s.ctx, rt.actor("step"))
		var p stepCreated
		_ = json.Unmarshal(created.Payload, &p)
		corr := created.CorrelationID
		if err := rt.appendFact(ctx, s, eventlog.Draft{Type: eventlog.StepStarted, CorrelationID: corr}); err != nil {
			unrecognised(ctx, s, err)
			return // another worker owns this step, or the run ended
		}
		done := eventlog.Draft{Type: eventlog.StepCompleted, CorrelationID: corr}
		fn, ok := rt.cfg.Steps[p.Name]
		if !ok {
			done.Type = eventlog.StepFailed
			done.Payload = mustJSON(map[string]string{"error": fmt.Sprintf("unknown step %q", p.Name)})
		} else {
			res, err := fn(p.Args)
			for _, k := range slices.Sorted(maps.Keys(res.Attrs)) {
				attr := eventlog.Draft{Type: eventlog.AttrSet, CorrelationID: corr, Dedup: StepAttrDedup + k,
					Payload: mustJSON(attrSet{Key: k, Value: mustJSON(res.Attrs[k])})}
				werr := rt.appendFact(ctx, s, attr)
				switch {
				case errors.Is(werr, eventlog.ErrRefused):
					// A store without attributes (the devkit packages have
					// no attr_set event): the step runs on without it.
					s.stats.refusals.Add(1)
				case werr != nil && !errors.Is(werr, eventlog.ErrConflict):
					unrecognised(ctx, s, werr)
					return // the run ended, or the store is gone (counted by appendFact)
				}
			}
			if clock.Sleep(ctx, res.Took) != nil {
				return
			}
			if err != nil {
				done.Type = eventlog.StepFailed
				done.Payload = mustJSON(map[string]string{"error": err.Error()})
			} else {
				done.Payload = mustJSON(stepCompleted{Result: mustJSON(res.Result)})
			}
		}
		err := rt.appendFact(ctx, s, done)
		if err == nil {
			rt.enqueue(s, message{}, 0)
		}
		unrecognised(ctx, s, err)
	})
}

// unrecognised counts err, which a step worker met and stops on, as an
// unrecognised error of run s when it is one: not an answer of the store
// (a conflict: another worker wrote it), not an unreachable store (counted
// where it happened), and not the run's end.
func unrecognised(ctx context.Context, s *runState, err error) {
	if err != nil && ctx.Err() == nil && eventlog.Classify(err) == "other" {
		s.stats.failure(err)
	}
}

// ResumeHook delivers payload to the hook with token, as a hook sender does:
// it looks the hook up in the log, writes hook_received (idempotent by
// dedup) and enqueues an invocation. It returns ErrHookNotFound when the hook
// is not created yet and ErrHookDisposed when it is gone.
func (rt *Runtime) ResumeHook(ctx context.Context, runID, token string, payload any, dedup string) error {
	s, err := rt.run(runID)
	if err != nil {
		return err
	}
	ctx = worlds.WithActor(ctx, rt.actor("hook"))
	log, _, _, err := rt.load(ctx, s, eventlog.Cursor{}, outsidePage)
	if errors.Is(err, eventlog.ErrHole) {
		// The sender cannot look past the hole: no hook yet, as far as it
		// can tell; it tries again at its next send.
		return fmt.Errorf("resume hook %s: %w: %w", token, ErrHookNotFound, err)
	}
	if err != nil {
		if errors.Is(err, eventlog.ErrUnavailable) {
			s.stats.infra.Add(1)
		}
		return fmt.Errorf("resume hook %s: %w", token, err)
	}
	corr := ""
	for _, e := range log {
		switch {
		case e.Type == eventlog.HookCreated && e.Token == token:
			corr = e.CorrelationID
		case e.Type == eventlog.HookDisposed && corr != "" && e.CorrelationID == corr:
			return ErrHookDisposed
		case e.Type.IsTerminal():
			return ErrHookDisposed
		}
	}
	if corr == "" {
		return ErrHookNotFound
	}
	d := eventlog.Draft{Type: eventlog.HookReceived, CorrelationID: corr, Dedup: dedup, Payload: mustJSON(payload)}
	if err := rt.appendFact(ctx, s, d); err != nil {
		switch {
		case errors.Is(err, eventlog.ErrConflict):
			return nil // delivered before
		case errors.Is(err, eventlog.ErrRefused):
			// The store no longer knows the hook (the devkit packages
			// refuse a payload for a disposed hook): dropped.
			s.stats.refusals.Add(1)
			return fmt.Errorf("resume hook %s: %w: %w", token, ErrHookDisposed, err)
		}
		return fmt.Errorf("resume hook %s: %w", token, err)
	}
	rt.enqueue(s, message{}, 0)
	return nil
}

// appendFact writes one fact: unfenced, or under a tail fence (fence=all)
// fenced at the log length the writer just read, retried twice in process
// and then from a fresh goroutine with backoff. A conflict means the fact is
// already there; a write voided by a seal (slot scheme) is written again.
//
// An unreachable store (eventlog.ErrUnavailable) is retried with backoff
// until the run's context ends, as a queue redelivers a step's message: a
// fact is never dropped because the store blinked. Such a write's outcome
// is unknown (the connection may have died after the commit), so the retry
// is the same draft, and a conflict on its key after an unknown attempt
// means the attempt landed: the fact is in the log.
func (rt *Runtime) appendFact(ctx context.Context, s *runState, d eventlog.Draft) error {
	unsure := false
	for attempt := 0; ; attempt++ {
		err := rt.appendFactOnce(ctx, s, d)
		switch {
		case errors.Is(err, eventlog.ErrSealed):
			s.stats.sealedWrites.Add(1)
			continue
		case errors.Is(err, eventlog.ErrUnavailable) && ctx.Err() == nil:
			unsure = true
			if clock.Sleep(ctx, rt.backoff(min(attempt, 4)+1)) != nil {
				return err
			}
			continue
		case unsure && errors.Is(err, eventlog.ErrConflict):
			return nil
		}
		return err
	}
}

func (rt *Runtime) appendFactOnce(ctx context.Context, s *runState, d eventlog.Draft) error {
	if rt.cfg.Policy.Fence != FenceAll {
		_, err := rt.append(ctx, s, []eventlog.Draft{d})
		if errors.Is(err, eventlog.ErrUnavailable) {
			s.stats.infra.Add(1)
		}
		return err
	}
	for attempt := 0; ; attempt++ {
		log, _, _, err := rt.load(ctx, s, eventlog.Cursor{}, outsidePage)
		if err != nil {
			return err
		}
		_, err = rt.appendFenced(ctx, s, int64(len(log)), []eventlog.Draft{d})
		if !errors.Is(err, eventlog.ErrFenced) {
			return err
		}
		s.stats.rejections.Add(1)
		if attempt >= rt.cfg.RestartsInProcess {
			if clock.Sleep(ctx, rt.backoff(attempt)) != nil {
				return ctx.Err()
			}
		}
	}
}
