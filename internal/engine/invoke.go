package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/stormctl/stormctl/internal/base/clock"
	"github.com/stormctl/stormctl/internal/eventlog"
	"github.com/stormctl/stormctl/worlds"
)

// message is one queue delivery of "invoke this run"; the counters ride in it
// across invocations.
type message struct {
	recovery int // recovery replays so far (divergences and holes)
	restarts int // re-derivations after fenced rejections so far
	// diverged says this delivery is the recovery of a divergence (not of
	// a hole): a replay of it that does not diverge cleared one.
	diverged bool
}

func (m message) plain() bool { return m.recovery == 0 && m.restarts == 0 }

// enqueue delivers m after delay. A plain delivery that finds another plain
// one already waiting for a slot is coalesced into it: the waiting one loads
// the log when it starts, after this message's cause committed.
func (rt *Runtime) enqueue(s *runState, m message, delay time.Duration) {
	if delay > 0 {
		rt.spawn(s, func() {
			if clock.Sleep(s.ctx, delay) == nil {
				rt.deliver(s, m)
			}
		})
		return
	}
	rt.deliver(s, m)
}

// deliver hands a due message to an invocation slot.
func (rt *Runtime) deliver(s *runState, m message) {
	if m.plain() {
		if s.waiting.Add(1) > 1 {
			s.waiting.Add(-1)
			s.stats.coalesced.Add(1)
			return
		}
	}
	rt.spawn(s, func() {
		acquired := acquire(s)
		if m.plain() {
			s.waiting.Add(-1)
		}
		if !acquired {
			return
		}
		defer func() { <-s.slots }()
		rt.invoke(s, m)
	})
}

// acquire takes one of the run's invocation slots, or gives up with its ctx.
func acquire(s *runState) bool {
	select {
	case s.slots <- struct{}{}:
		return true
	case <-s.ctx.Done():
		return false
	}
}

// InvocationActor prefixes the actor of an invocation's operations in a
// history: the n-th invocation a runtime starts reads and writes as
// "inv-n", once.
const InvocationActor = "inv"

// IsInvocation reports whether a history's actor is an invocation of the
// model engine.
func IsInvocation(actor string) bool { return strings.HasPrefix(actor, InvocationActor+"-") }

// Delivery is what a queue message tells the invocation it starts: the
// counters that ride in it across invocations.
type Delivery struct {
	// Recovery counts the recovery replays before this one (divergences
	// and holes): at Config.MaxRecoveries a divergence fails the run.
	Recovery int
	// Restarts counts the re-derivations after fenced rejections so far.
	Restarts int
	// Diverged says this delivery recovers a divergence (not a hole).
	Diverged bool
}

// Invoke runs one invocation of run runID on the caller's goroutine, as
// the queue delivering d would start it: load the log from the runtime's
// world, complete the waits due, replay, write what the replay derived
// (re-deriving after a fenced rejection within the in-process budget). It
// returns what each of its replays concluded, in order. A run the runtime
// did not start is adopted for the invocation, bound to ctx, and
// forgotten after it (the work it started cancelled). On a Detached
// runtime the work the invocation implies (recoveries, steps, wake-ups)
// is dropped, so that the world sees the invocation's own reads and
// writes only.
func (rt *Runtime) Invoke(ctx context.Context, runID string, d Delivery) []Outcome {
	m := message{recovery: d.Recovery, restarts: d.Restarts, diverged: d.Diverged}
	if s, err := rt.run(runID); err == nil {
		return rt.invoke(s, m)
	}
	s := rt.adopt(ctx, runID)
	defer rt.Finish(runID)
	return rt.invoke(s, m)
}

// invoke is one invocation: load, replay, suspend; re-derive after a fenced
// rejection within the in-process budget. It returns each replay's
// outcome.
func (rt *Runtime) invoke(s *runState, m message) (outs []Outcome) {
	ctx := worlds.WithActor(s.ctx, rt.actor(InvocationActor))
	s.stats.invocations.Add(1)
	var (
		log    []eventlog.Event
		cursor eventlog.Cursor
		drafts []eventlog.Draft // what repost re-sends
		band   inBand           // spec 9: the invocation's in-band count
	)
	for attempt := 0; ; attempt++ {
		more, next, snap, err := rt.load(ctx, s, cursor, rt.cfg.PageSize)
		if err != nil {
			rt.loadFailed(ctx, s, m, err)
			return
		}
		log, cursor = append(log, more...), next
		if rt.cfg.Policy.InBand() {
			// The count comes from the load's first page, never from
			// counting events (a sealed in-band slot still counts); a
			// re-derivation (on-reject=rederive, not spec 9's answer)
			// adopts its fresh read's.
			if snap == nil {
				s.stats.failure(fmt.Errorf("in-band fence: the world's first page of run %s carried no snapshot (a world of spec 9 must give one): %w", s.id, errNoSnapshot))
				return
			}
			band = inBand{count: snap.SeqInBand}
		}
		wrote, err := rt.completeDueWaits(ctx, s, log, &band)
		if err != nil {
			rt.refusedInBand(s, m, err)
			return
		}
		if wrote {
			// Read what was written, and whatever else committed since.
			more, next, _, err := rt.load(ctx, s, cursor, rt.cfg.PageSize)
			if err != nil {
				rt.loadFailed(ctx, s, m, err)
				return
			}
			log, cursor = append(log, more...), next
		}

		rt.startOrphanedSteps(s, log)

		if drafts == nil || rt.cfg.Policy.OnReject == RejectRederive {
			out := Replay(rt.cfg.Program, s.id, log, rt.cfg.Policy.Mode(), rt.cfg.Now())
			outs = append(outs, out)
			s.stats.replays.Add(1)
			if m.diverged && out.Divergence == nil && attempt == 0 {
				s.stats.recovered.Add(1)
			}
			switch {
			case out.Terminal != nil:
				s.markDone()
				return
			case out.Divergence != nil:
				s.stats.divergences.Add(1)
				if m.recovery < rt.cfg.MaxRecoveries {
					s.stats.recoveries.Add(1)
					rt.enqueue(s, message{recovery: m.recovery + 1, restarts: m.restarts, diverged: true}, rt.backoff(m.recovery))
					return
				}
				drafts = []eventlog.Draft{FailureDraft(CodeCorrupted, out.Divergence.Error())}
			default:
				drafts = out.Decisions
				// Wake the run for its earliest wait whether or not this
				// suspension's write lands: a rejected writer must not
				// leave a logged wait without a wake-up.
				rt.scheduleWake(s, out.Waits)
			}
		} else {
			drafts = withoutLogged(drafts, log)
		}
		if len(drafts) == 0 {
			return
		}
		expected := int64(len(log))
		if rt.cfg.Policy.InBand() {
			expected = band.count
		}
		err = rt.write(ctx, s, expected, drafts)
		switch {
		case err == nil:
			band.count += int64(len(drafts))
			return
		case ctx.Err() != nil:
			// The run ended (or the storm stopped) while the write was out;
			// a store that answered with a rejection rejected it all the
			// same, and the history records it: count it, then stop.
			countRefused(s, err)
			return
		case errors.Is(err, eventlog.ErrFenced), errors.Is(err, eventlog.ErrConflict), errors.Is(err, eventlog.ErrSealed):
			if rt.cfg.Policy.OnReject == RejectRedeliver {
				rt.refusedInBand(s, m, err)
				return
			}
			countRefused(s, err)
			if attempt < rt.cfg.RestartsInProcess {
				s.stats.restarts.Add(1)
				continue
			}
			rt.redeliver(s, m)
			return
		case errors.Is(err, eventlog.ErrUnavailable):
			s.stats.infra.Add(1)
			rt.enqueue(s, m, rt.backoff(m.restarts+2))
			return
		case errors.Is(err, eventlog.ErrRefused):
			// The store refused a decision where the log stands (the devkit
			// packages validate each event): this invocation fails, and the
			// queue delivers the run again, within the restart budget.
			s.stats.refusals.Add(1)
			rt.redeliver(s, m)
			return
		default:
			// Not a store answer this handler knows, and not an unreachable
			// store (that case is above): unrecognised, never infra.
			rt.cfg.Logger.Warn("suspension write failed", "run", s.id, "err", err)
			s.stats.failure(err)
			return
		}
	}
}

// inBand is an invocation's in-band count under FenceInBand: adopted from
// its load's first page, moved by each write it lands.
type inBand struct{ count int64 }

// errNoSnapshot is matched by the failure of an invocation whose world
// gave no in-band snapshot on a run fenced in band.
var errNoSnapshot = errors.New("no in-band snapshot")

// refusedInBand ends an invocation whose write the world refused under
// on-reject=redeliver (spec 9): nothing more is written, and the queue
// delivers the same message again after Config.FenceRedelivery, with no
// budget (core returns timeoutSeconds; the redelivery loads the log afresh
// and replays from the top).
func (rt *Runtime) refusedInBand(s *runState, m message, err error) {
	countRefused(s, err)
	rt.cfg.Logger.Debug("orchestrator superseded, redelivering", "run", s.id, "err", err)
	rt.enqueue(s, message{recovery: m.recovery, restarts: m.restarts + 1, diverged: m.diverged}, rt.cfg.FenceRedelivery)
}

// completeDueWaits writes wait_completed for every wait of the log whose
// resumeAt has passed and that has no completion yet, as the invocation that
// loads the log after a wait elapsed does in core (the timer only enqueued a
// wake-up). As in core 4.8.9 (runtime.ts, waitsToComplete) it writes one
// completion per due wait_created event, in log order, each carrying that
// event's resumeAt: when a world created a wait twice, the first creation's
// resumeAt is the one that commits, while the replay's consumer expects the
// last one it consumed. Another writer's completion (or this invocation's,
// for a duplicated creation) is a conflict, and fine. It reports whether it
// wrote or found anything, so the caller reads the log again. Under
// FenceInBand (spec 9) a completion is the orchestrator's own write, in
// band: it carries band's count and moves it; a refusal stops the
// completions and is returned, for the invocation to end on it.
func (rt *Runtime) completeDueWaits(ctx context.Context, s *runState, log []eventlog.Event, band *inBand) (bool, error) {
	completed := map[string]bool{}
	for _, e := range log {
		switch e.Type {
		case eventlog.WaitCompleted:
			completed[e.CorrelationID] = true
		case eventlog.RunCompleted, eventlog.RunFailed:
			return false, nil
		}
	}
	now := rt.cfg.Now()
	wrote := false
	for _, e := range log {
		if e.Type != eventlog.WaitCreated || completed[e.CorrelationID] {
			continue
		}
		var p waitCreated
		if json.Unmarshal(e.Payload, &p) != nil || p.ResumeAt.After(now) {
			continue
		}
		d := eventlog.Draft{Type: eventlog.WaitCompleted, CorrelationID: e.CorrelationID,
			Payload: mustJSON(waitCompleted{ResumeAt: p.ResumeAt})}
		if rt.cfg.Policy.InBand() {
			_, err := rt.appendFenced(ctx, s, band.count, []eventlog.Draft{d})
			switch {
			case err == nil:
				band.count++
				wrote = true
			case errors.Is(err, eventlog.ErrFenced), errors.Is(err, eventlog.ErrSealed), errors.Is(err, eventlog.ErrConflict):
				return wrote, err
			}
			continue
		}
		err := rt.appendFact(ctx, s, d)
		if err == nil || errors.Is(err, eventlog.ErrConflict) {
			wrote = true
		}
	}
	return wrote, nil
}

// startOrphanedSteps starts a worker for every step the log created that has
// not started and that this runtime has not dispatched: a batch that failed
// midway on a store without transactions (local ulid) may have committed a
// step_created whose writer saw an error and dispatched nothing. The step's
// queue message is idempotent, so a dispatched step is never started twice.
func (rt *Runtime) startOrphanedSteps(s *runState, log []eventlog.Event) {
	started := map[string]bool{}
	for _, e := range log {
		if e.Type == eventlog.StepStarted {
			started[e.CorrelationID] = true
		}
	}
	for _, e := range log {
		if e.Type == eventlog.StepCreated && !started[e.CorrelationID] {
			rt.startStep(s, e)
		}
	}
}

// redeliver delivers the run again after a rejected or refused write, as
// the queue redelivers a failed invocation, unless m has spent the run's
// restart budget.
func (rt *Runtime) redeliver(s *runState, m message) {
	if m.restarts+1 > rt.cfg.RestartsTotal {
		s.stats.gaveUp.Add(1)
		return
	}
	rt.enqueue(s, message{recovery: m.recovery, restarts: m.restarts + 1}, rt.backoff(m.restarts+1))
}

// scheduleWake enqueues one delayed invocation for the earliest of the
// waits a suspension left pending, as core's suspension handler does: the
// delay is rounded up to whole timer ticks (core: seconds), at least one,
// and the wake-up is keyed by the wait so suspensions that see the same wait
// do not multiply it.
func (rt *Runtime) scheduleWake(s *runState, waits []PendingWait) {
	if len(waits) == 0 {
		return
	}
	first := waits[0]
	for _, w := range waits[1:] {
		if w.ResumeAt.Before(first.ResumeAt) {
			first = w
		}
	}
	key := first.CorrelationID + "@" + first.ResumeAt.Format(time.RFC3339Nano)
	s.mu.Lock()
	dup := s.wakes[key]
	s.wakes[key] = true
	s.mu.Unlock()
	if dup {
		return
	}
	rt.enqueue(s, message{}, wakeDelay(time.Until(first.ResumeAt), rt.cfg.TimerTick))
}

// wakeDelay is how long the timer of a wait due in until waits: until
// rounded up to whole ticks, at least one.
func wakeDelay(until, tick time.Duration) time.Duration {
	return (max(until, tick) + tick - 1) / tick * tick
}

// withoutLogged drops drafts whose idempotency keys the log already holds.
func withoutLogged(drafts []eventlog.Draft, log []eventlog.Event) []eventlog.Draft {
	have := map[string]bool{}
	for _, e := range log {
		for _, k := range e.Draft().Keys() {
			have[k] = true
		}
	}
	return slices.DeleteFunc(slices.Clone(drafts), func(d eventlog.Draft) bool {
		return slices.ContainsFunc(d.Keys(), func(k string) bool { return have[k] })
	})
}

// load reads the log after cursor to its end, pageSize events a page. Under
// the slot scheme a page that meets a hole is counted; with seals on, the
// reader waits on the hole and seals it (waitOrSeal) and reads on, without
// them the *eventlog.HoleError is returned.
func (rt *Runtime) load(ctx context.Context, s *runState, after eventlog.Cursor, pageSize int) ([]eventlog.Event, eventlog.Cursor, *eventlog.Snapshot, error) {
	var out []eventlog.Event
	var hw holeWait
	var snap *eventlog.Snapshot
	for {
		p, err := rt.cfg.World.List(ctx, s.id, after, pageSize)
		if err == nil && snap == nil {
			snap = p.Snapshot // the first page's: the count a writer adopts
		}
		s.stats.observe(ctx, err)
		var he *eventlog.HoleError
		if errors.As(err, &he) {
			if hw.slot == 0 {
				s.stats.holeRefusals.Add(1)
			}
			if rt.cfg.Policy.Sealing() {
				if err := rt.waitOrSeal(ctx, s, he, &hw); err != nil {
					return out, after, snap, err
				}
				continue
			}
		}
		if err != nil {
			return out, after, snap, err
		}
		out = append(out, p.Events...)
		if len(p.Events) > 0 {
			after = p.Next
		}
		if !p.More || len(p.Events) == 0 {
			return out, after, snap, nil
		}
	}
}

// holeWait is a reader's wait on one empty slot.
type holeWait struct {
	slot  int64
	since time.Time
}

// sealer is what a world (or its recorder) offers to fill a hole.
type sealer interface {
	Seal(ctx context.Context, runID string, slot int64) (eventlog.Event, bool, error)
}

// waitOrSeal is one step of a reader's wait on the hole he names: re-read
// after a short pause until the slot has been empty for SealAfter since
// this reader first saw it, then seal it with a noop. A slot that commits
// (or that another reader seals) meanwhile simply reads as filled.
func (rt *Runtime) waitOrSeal(ctx context.Context, s *runState, he *eventlog.HoleError, hw *holeWait) error {
	now := time.Now()
	if hw.slot != he.Slot {
		*hw = holeWait{slot: he.Slot, since: now}
	}
	if waited := now.Sub(hw.since); waited < rt.cfg.SealAfter {
		poll := min(max(rt.cfg.SealAfter/50, time.Millisecond), rt.cfg.SealAfter-waited)
		return clock.Sleep(ctx, poll)
	}
	sl, ok := rt.cfg.World.(sealer)
	if !ok {
		return fmt.Errorf("seal slot %d of run %s: the world cannot seal: %w", he.Slot, s.id, he)
	}
	_, sealed, err := sl.Seal(ctx, s.id, he.Slot)
	s.stats.observe(ctx, err)
	if err != nil {
		return fmt.Errorf("seal slot %d of run %s: %w", he.Slot, s.id, err)
	}
	if sealed {
		s.stats.seals.Add(1)
	}
	*hw = holeWait{}
	return nil
}

// loadFailed handles a load error: a density violation fails the run loudly;
// a hole (slot scheme, no seals) is retried as a recovery and fails the run
// with CORRUPTED_EVENT_LOG once it outlives the recovery budget, as core
// refuses to replay across one; any other error is retried, and counted as
// infrastructure when the store was unreachable (eventlog.ErrUnavailable),
// as unrecognised otherwise.
func (rt *Runtime) loadFailed(ctx context.Context, s *runState, m message, err error) {
	switch {
	case ctx.Err() != nil:
	case errors.Is(err, eventlog.ErrHole):
		if m.recovery < rt.cfg.MaxRecoveries {
			s.stats.recoveries.Add(1)
			rt.enqueue(s, message{recovery: m.recovery + 1, restarts: m.restarts}, rt.backoff(m.recovery))
			return
		}
		fail := RunFailure{Code: CodeCorrupted, Reason: ReasonHole, Message: err.Error()}
		if _, werr := rt.append(ctx, s, []eventlog.Draft{failureDraft(fail)}); werr == nil {
			s.markDone()
		}
	case errors.Is(err, eventlog.ErrGap), errors.Is(err, eventlog.ErrDuplicate):
		fail := []eventlog.Draft{FailureDraft(CodeGap, err.Error())}
		if _, werr := rt.append(ctx, s, fail); werr == nil {
			s.markDone()
		}
	default:
		// An unreachable store counts as infrastructure; any other error
		// as unrecognised, with its text (never infra). Either way the
		// queue delivers the run again.
		s.stats.failure(err)
		rt.cfg.Logger.Debug("load failed", "run", s.id, "err", err)
		rt.enqueue(s, m, rt.backoff(m.restarts+2))
	}
}

// write appends a suspension's decisions: one fenced batch, or (unfenced)
// one append per decision in order, tolerating decisions another invocation
// already wrote; under the legacy count guard each of those appends carries
// the writer's count and a rejection stops the sequence midway. Under
// writes=parallel the unfenced appends go out phase by phase instead
// (writeParallel). Work for what was written is dispatched.
func (rt *Runtime) write(ctx context.Context, s *runState, expected int64, drafts []eventlog.Draft) error {
	if rt.cfg.Policy.Fenced() {
		evs, err := rt.appendFenced(ctx, s, expected, drafts)
		if err != nil {
			return err
		}
		rt.dispatch(s, evs)
		return nil
	}
	if rt.cfg.Policy.ParallelWrites() {
		return rt.writeParallel(ctx, s, drafts)
	}
	written := int64(0)
	for _, d := range drafts {
		var evs []eventlog.Event
		var err error
		if rt.cfg.Policy.Guard != eventlog.GuardNone {
			// The legacy guard: each decision carries the count of events
			// the writer has seen, its own earlier writes included.
			evs, err = rt.appendFenced(ctx, s, expected+written, []eventlog.Draft{d})
		} else {
			evs, err = rt.append(ctx, s, []eventlog.Draft{d})
		}
		switch {
		case errors.Is(err, eventlog.ErrFenced), errors.Is(err, eventlog.ErrSealed):
			return err // earlier decisions stay written: the legacy hazard
		case errors.Is(err, eventlog.ErrConflict):
			s.stats.conflicts.Add(1)
			continue
		case err != nil:
			return fmt.Errorf("append %s: %w", d.Type, err)
		}
		written++
		rt.dispatch(s, evs)
	}
	return nil
}

// dispatch enqueues the work committed decisions imply.
func (rt *Runtime) dispatch(s *runState, evs []eventlog.Event) {
	for _, e := range evs {
		switch e.Type {
		case eventlog.StepCreated:
			rt.startStep(s, e)
		case eventlog.RunCompleted, eventlog.RunFailed:
			s.markDone()
		case eventlog.HookCreated:
			// Spec 8: the claimer's runtime wakes the run it took the
			// token from, whose log now holds hook_disposed{forceClaimedBy}
			// (the world has no queue to do it).
			if from := eventlog.ForceClaimedFrom(e); from != nil {
				if v, err := rt.run(from.RunID); err == nil {
					rt.enqueue(v, message{}, 0)
				}
			}
		case eventlog.HookConflict:
			// The world wrote the conflict in place of the hook's
			// creation: the run replays at once, so that what awaits the
			// hook learns it.
			rt.enqueue(s, message{}, 0)
		}
	}
}

// countRefused counts a write the store turned down: a conflict on an
// idempotency key, a write into a sealed slot, or a fenced rejection.
// Other errors count nothing here.
func countRefused(s *runState, err error) {
	switch {
	case errors.Is(err, eventlog.ErrConflict):
		s.stats.conflicts.Add(1)
	case errors.Is(err, eventlog.ErrSealed):
		s.stats.sealedWrites.Add(1)
	case errors.Is(err, eventlog.ErrFenced):
		s.stats.rejections.Add(1)
	}
}
