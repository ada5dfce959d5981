package engine

import (
	"cmp"
	"context"
	"errors"
	"fmt"

	"golang.org/x/sync/errgroup"

	"github.com/stormctl/stormctl/internal/eventlog"
)

// writePhase is the phase of writes=parallel in which a decision of type t
// is appended, as core 4.8.9's suspension handler issues them: hooks first
// (so a hook exists before anyone can resume it), then hook disposals, then
// steps and waits together. Decisions outside the handler (attr_set,
// run_completed, run_failed) are serialPhase.
func writePhase(t eventlog.Type) int {
	switch t {
	case eventlog.HookCreated:
		return 0
	case eventlog.HookDisposed:
		return 1
	case eventlog.StepCreated, eventlog.WaitCreated:
		return 2
	}
	return serialPhase
}

// serialPhase is the phase of decisions appended one at a time, in call
// order, after the concurrent phases.
const serialPhase = 3

// writeBatches splits a suspension's decisions into the batches
// writeParallel issues in turn: one batch per concurrent phase that has
// decisions, then each serialPhase decision alone. Within a batch the
// decisions keep their call order.
func writeBatches(drafts []eventlog.Draft) [][]eventlog.Draft {
	var batches [][]eventlog.Draft
	for phase := range serialPhase {
		var batch []eventlog.Draft
		for _, d := range drafts {
			if writePhase(d.Type) == phase {
				batch = append(batch, d)
			}
		}
		if len(batch) > 0 {
			batches = append(batches, batch)
		}
	}
	for _, d := range drafts {
		if writePhase(d.Type) == serialPhase {
			batches = append(batches, []eventlog.Draft{d})
		}
	}
	return batches
}

// writeParallel appends an unfenced, unguarded suspension's decisions
// batch by batch (writeBatches): every append of a batch is issued at
// once, each through the world as a serial write issues it, and the next
// batch starts when all of them have answered. The answers are then taken
// in call order, as the serial write takes them: a conflict is counted and
// tolerated, what committed is dispatched, and the first other error (in
// call order) ends the write before the next batch, the batch's other
// appends having landed or not as the store answered them.
func (rt *Runtime) writeParallel(ctx context.Context, s *runState, drafts []eventlog.Draft) error {
	for _, batch := range writeBatches(drafts) {
		answers := rt.appendEach(ctx, s, batch)
		var first error
		for i, a := range answers {
			switch {
			case errors.Is(a.err, eventlog.ErrFenced), errors.Is(a.err, eventlog.ErrSealed):
				first = cmp.Or(first, a.err)
			case errors.Is(a.err, eventlog.ErrConflict):
				s.stats.conflicts.Add(1)
			case a.err != nil:
				first = cmp.Or(first, fmt.Errorf("append %s: %w", batch[i].Type, a.err))
			default:
				rt.dispatch(s, a.evs)
			}
		}
		if first != nil {
			return first
		}
	}
	return nil
}

// answer is the store's answer to one append of a batch.
type answer struct {
	evs []eventlog.Event
	err error
}

// appendEach appends each draft of batch on its own, all at once (as
// Promise.all does), and returns the answers in batch order. The group's
// goroutines end before it returns.
func (rt *Runtime) appendEach(ctx context.Context, s *runState, batch []eventlog.Draft) []answer {
	answers := make([]answer, len(batch))
	var g errgroup.Group
	for i, d := range batch {
		g.Go(func() error {
			answers[i].evs, answers[i].err = rt.append(ctx, s, []eventlog.Draft{d})
			return nil // an append's answer is in answers, never the group's error
		})
	}
	_ = g.Wait()
	return answers
}
