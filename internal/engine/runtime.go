package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/stormctl/stormctl/internal/base/crash"
	"github.com/stormctl/stormctl/internal/eventlog"
	"github.com/stormctl/stormctl/internal/history"
	"github.com/stormctl/stormctl/worlds"
)

// StepOutcome is what one execution of a step did.
type StepOutcome struct {
	// Result is the step's return value (recorded in step_completed).
	Result any
	// Took is how long the step's work lasts before it completes.
	Took time.Duration
	// Attrs are run attributes the step sets before its work, out of band:
	// the step worker writes them as attr_set events carrying the step's own
	// correlation id (no id is drawn), which replay does not consume, as a
	// step calling setAttributes does in the real engine.
	Attrs map[string]string
}

// StepFunc executes a step: a pure function of its arguments. An error fails
// the step (step_failed).
type StepFunc func(args json.RawMessage) (StepOutcome, error)

// TimerTickAt is DefaultTimerTick at a storm's time scale, scaled as every
// scenario duration is: a storm's runtimes round wait wake-ups up to it,
// and the explainer reads when a stuck run's waits were due with it.
func TimerTickAt(timeScale float64) time.Duration {
	return time.Duration(float64(DefaultTimerTick) * timeScale)
}

// DefaultFenceRedelivery is spec 9's delay before a superseded
// orchestrator's message is delivered again: core's
// FENCE_REDELIVERY_DELAY_SECONDS, 5 s, a constant (no backoff).
const DefaultFenceRedelivery = 5 * time.Second

// DefaultTimerTick is the unit wait wake-ups are rounded up to, as in
// core: one second.
const DefaultTimerTick = time.Second

// Config configures a Runtime.
type Config struct {
	// World is the store; wrap it with worlds.Record to keep a history.
	World   worlds.World
	Program Program
	// Workflow names Program (the scenario's name): stamped on every run
	// this runtime starts (eventlog.Run.Workflow).
	Workflow string
	// SharedTokens says the program's hook tokens are shared across the
	// runs of the world (the scenario's): every run this runtime starts is
	// stamped with the condition's hook-claim mode (Policy.Stamp).
	SharedTokens bool
	Steps        map[string]StepFunc
	// Knobs are the condition's: its Scheme is stamped on every run this
	// runtime starts, its Policy is how the runtime behaves.
	Knobs
	// Concurrency bounds the invocations of one run that replay at once.
	Concurrency int
	// PageSize is the limit of each List while loading a log; a condition's
	// page knob (Policy.Page), when set, overrides it.
	PageSize int
	// MaxRecoveries is how many recovery replays a divergence gets before
	// the run fails with CORRUPTED_EVENT_LOG (the engine's 3).
	MaxRecoveries int
	// RestartsInProcess bounds re-derivations after fenced rejections inside
	// one invocation; RestartsTotal bounds them across invocations (the
	// count rides the queue message).
	RestartsInProcess int
	RestartsTotal     int
	// Backoff is the first delay of a re-enqueued message; it doubles.
	Backoff time.Duration
	// TimerTick is the unit wait wake-ups are rounded up to
	// (DefaultTimerTick when zero); a storm scales it with its time scale.
	TimerTick time.Duration
	// SealAfter is how long a reader waits on a hole before sealing it under
	// Policy.Seal noop (a storm scales Policy.SealAfter, or DefaultSealAfter,
	// with its time scale).
	SealAfter time.Duration
	// FenceRedelivery is how long the queue holds a message whose
	// invocation a fence refused under on-reject=redeliver before it
	// delivers it again (DefaultFenceRedelivery when zero; a storm scales
	// it with its time scale).
	FenceRedelivery time.Duration
	Logger          *slog.Logger
	// Now is the runtime's clock (time.Now when nil): what an invocation
	// compares a wait's resumeAt with to complete it, and stamps the
	// resumeAt of the waits it creates with. A replay of a recorded
	// invocation sets the time the invocation ran at.
	Now func() time.Time
	// Detached makes a runtime that starts no work of its own: no queue
	// delivery, step worker, timer or wake-up ever runs; only Invoke runs
	// an invocation, on its caller's goroutine, and the work that
	// invocation implies (a recovery, a step, a wake-up) is dropped. A
	// replay re-executes recorded invocations one at a time with it.
	Detached bool
}

// Defaults fills unset fields with the engine's values.
func (c Config) Defaults() Config {
	if c.Concurrency <= 0 {
		c.Concurrency = 20
	}
	if c.Policy.Page > 0 {
		c.PageSize = c.Policy.Page
	}
	if c.PageSize <= 0 {
		c.PageSize = 100
	}
	if c.MaxRecoveries <= 0 {
		c.MaxRecoveries = 3
	}
	if c.RestartsInProcess <= 0 {
		c.RestartsInProcess = 2
	}
	if c.RestartsTotal <= 0 {
		c.RestartsTotal = 6
	}
	if c.TimerTick <= 0 {
		c.TimerTick = DefaultTimerTick
	}
	if c.Backoff <= 0 {
		c.Backoff = 25 * time.Millisecond
	}
	if c.SealAfter <= 0 {
		c.SealAfter = c.Policy.SealAfter
	}
	if c.SealAfter <= 0 {
		c.SealAfter = DefaultSealAfter
	}
	if c.FenceRedelivery <= 0 {
		c.FenceRedelivery = DefaultFenceRedelivery
	}
	if c.Scheme == "" {
		c.Scheme = eventlog.SchemeULID
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return c
}

type runStats struct {
	invocations, replays, divergences, recoveries, rejections, conflicts,
	restarts, gaveUp, infra, coalesced, recovered, holeRefusals, seals, sealedWrites, refusals, unrecognised atomic.Int64

	// mu guards the store evidence below (observe, unrecognisedErr).
	mu                 sync.Mutex
	unrecognisedErr    string
	lastOK, lastUnavl  time.Time
	lastUnavailableErr string
}

// observe records what the store's answer to one of the run's operations
// says about the store: err nil or any answer the store gave (a conflict,
// a fence, a hole, a refusal) is the store answering; ErrUnavailable is
// the store not answering. An operation whose ctx ended is not evidence:
// the run ended, not the store.
func (s *runStats) observe(ctx context.Context, err error) {
	if ctx.Err() != nil {
		return
	}
	now := time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	switch eventlog.Classify(err) {
	case "unavailable":
		s.lastUnavl, s.lastUnavailableErr = now, err.Error()
	case "other":
		// Neither an answer nor the store down: noted where it is handled
		// (unrecognised).
	default:
		s.lastOK = now
	}
}

// failure counts an error a load or a write met that the handler has no
// case for: infra when it is eventlog.ErrUnavailable, unrecognised
// otherwise (its text kept, the first one's).
func (s *runStats) failure(err error) {
	if errors.Is(err, eventlog.ErrUnavailable) {
		s.infra.Add(1)
		return
	}
	s.unrecognised.Add(1)
	s.mu.Lock()
	if s.unrecognisedErr == "" {
		s.unrecognisedErr = err.Error()
	}
	s.mu.Unlock()
}

func (s *runStats) snapshot() history.RunStats {
	st := history.RunStats{
		Invocations: s.invocations.Load(), Replays: s.replays.Load(), Divergences: s.divergences.Load(),
		Recoveries: s.recoveries.Load(), Rejections: s.rejections.Load(), Conflicts: s.conflicts.Load(),
		Restarts: s.restarts.Load(), GaveUp: s.gaveUp.Load(), InfraErrors: s.infra.Load(), Coalesced: s.coalesced.Load(), Recovered: s.recovered.Load(),
		HoleRefusals: s.holeRefusals.Load(), Seals: s.seals.Load(), SealedWrites: s.sealedWrites.Load(),
		Refusals: s.refusals.Load(), Unrecognised: s.unrecognised.Load(),
	}
	s.mu.Lock()
	st.UnrecognisedErr, st.LastStoreOK, st.LastUnavailable, st.LastUnavailableErr = s.unrecognisedErr, s.lastOK, s.lastUnavl, s.lastUnavailableErr
	s.mu.Unlock()
	return st
}

type runState struct {
	id       string
	ctx      context.Context
	cancel   context.CancelFunc
	slots    chan struct{}
	waiting  atomic.Int32
	done     chan struct{}
	doneOnce sync.Once
	stats    runStats
	mu       sync.Mutex
	wakes    map[string]bool // timer wake-ups enqueued, by wait and resumeAt
	steps    map[string]bool // step workers started, by correlation id
	// wg counts the run's goroutines so Finish can wait for them.
	wg sync.WaitGroup
}

func (s *runState) markDone() { s.doneOnce.Do(func() { close(s.done) }) }

// Runtime runs the invocations, step workers and timers of many runs over one
// world. Every goroutine it starts belongs to its errgroup.
type Runtime struct {
	cfg    Config
	ctx    context.Context
	cancel context.CancelFunc
	g      errgroup.Group
	actors atomic.Int64

	mu   sync.Mutex
	runs map[string]*runState
	// panicked is the first panic of a goroutine of the runtime (a bug in
	// the engine or a world): Panicked reports it.
	panicked atomic.Pointer[crash.Error]
}

// ErrUnknownRun is returned for a run this runtime did not start.
var ErrUnknownRun = errors.New("engine: unknown run")

// New returns a runtime whose work stops when ctx ends.
//
// Close stops it.
func New(ctx context.Context, cfg Config) *Runtime {
	ctx, cancel := context.WithCancel(ctx)
	return &Runtime{cfg: cfg.Defaults(), ctx: ctx, cancel: cancel, runs: map[string]*runState{}}
}

// Close stops every run's work and waits until every goroutine of the
// runtime has returned.
func (rt *Runtime) Close() {
	rt.cancel()
	rt.Wait()
}

// Wait blocks until every goroutine of the runtime has returned. Cancel the
// runtime's context or Finish every run first.
func (rt *Runtime) Wait() { _ = rt.g.Wait() }

func (rt *Runtime) run(id string) (*runState, error) {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	s, ok := rt.runs[id]
	if !ok {
		return nil, fmt.Errorf("%w %s", ErrUnknownRun, id)
	}
	return s, nil
}

// Start creates run runID with input, writes run_created and enqueues its
// first invocation. It returns runID: the model's run ids are its caller's
// (a storm's are minted from its seed, so that a resumed storm gives a run
// the id, and the seeds, it had).
func (rt *Runtime) Start(ctx context.Context, runID string, input any) (string, error) {
	return runID, rt.start(ctx, runID, input)
}

func (rt *Runtime) start(ctx context.Context, runID string, input any) error {
	s := rt.adopt(rt.ctx, runID)

	basis := eventlog.FenceOnLog
	switch rt.cfg.Policy.Fence {
	case FenceDecisionsOnly:
		basis = eventlog.FenceOnDecisions
	case FenceInBand:
		basis = eventlog.FenceInBand
	}
	ctx = worlds.WithActor(ctx, "starter")
	err := rt.cfg.World.CreateRun(ctx, eventlog.Run{ID: runID, Scheme: rt.cfg.Scheme, FenceBasis: basis, Guard: rt.cfg.Policy.Guard, Workflow: rt.cfg.Workflow,
		HookClaim: rt.cfg.Policy.Stamp(rt.cfg.SharedTokens)})
	s.stats.observe(ctx, err)
	if err != nil {
		return fmt.Errorf("create run %s: %w", runID, err)
	}
	created := []eventlog.Draft{{Type: eventlog.RunCreated, Payload: mustJSON(input)}}
	if rt.cfg.Policy.Fenced() {
		_, err = rt.appendFenced(ctx, s, 0, created)
	} else {
		_, err = rt.append(ctx, s, created)
	}
	if err != nil {
		return fmt.Errorf("write run_created for %s: %w", runID, err)
	}
	rt.enqueue(s, message{}, 0)
	return nil
}

// adopt registers run runID, its work bound to parent, and returns its
// state.
func (rt *Runtime) adopt(parent context.Context, runID string) *runState {
	conc := rt.cfg.Concurrency
	if rt.cfg.Policy.Admission == AdmitSingleRunner {
		conc = 1
	}
	rctx, cancel := context.WithCancel(parent)
	s := &runState{id: runID, ctx: rctx, cancel: cancel, slots: make(chan struct{}, conc), done: make(chan struct{}), wakes: map[string]bool{}, steps: map[string]bool{}}
	rt.mu.Lock()
	rt.runs[runID] = s
	rt.mu.Unlock()
	return s
}

// Done returns a channel closed once the runtime has seen the run end.
func (rt *Runtime) Done(runID string) <-chan struct{} {
	s, err := rt.run(runID)
	if err != nil {
		c := make(chan struct{})
		close(c)
		return c
	}
	return s.done
}

// Stats returns what the runtime has done for a run so far.
func (rt *Runtime) Stats(runID string) history.RunStats {
	s, err := rt.run(runID)
	if err != nil {
		return history.RunStats{}
	}
	return s.stats.snapshot()
}

// Finish stops all work of a run, waits for it (pending invocations, step
// workers and timers return), forgets the run and returns its final stats.
func (rt *Runtime) Finish(runID string) history.RunStats {
	rt.mu.Lock()
	s, ok := rt.runs[runID]
	delete(rt.runs, runID)
	rt.mu.Unlock()
	if !ok {
		return history.RunStats{}
	}
	s.cancel()
	s.wg.Wait()
	return s.stats.snapshot()
}

// spawn runs fn for run s in the runtime's errgroup; a Detached runtime
// drops it.
func (rt *Runtime) spawn(s *runState, fn func()) {
	if s.ctx.Err() != nil || rt.cfg.Detached {
		return
	}
	s.wg.Add(1)
	rt.g.Go(func() error {
		defer s.wg.Done()
		defer rt.recoverPanic(s)
		fn()
		return nil
	})
}

// recoverPanic, deferred by each goroutine of a run, keeps the runtime's
// first panic and ends the run, instead of letting the panic end the
// process (which would exit 2, stormctl's code for bad usage).
func (rt *Runtime) recoverPanic(s *runState) {
	if p := recover(); p != nil {
		rt.panicked.CompareAndSwap(nil, &crash.Error{Value: p, Stack: debug.Stack()})
		s.cancel()
		s.markDone()
	}
}

// Panicked returns the first panic recovered on a goroutine of the runtime
// as a *crash.Error, or nil. A storm must stop on it: it is a bug, and the
// run it happened in measured nothing.
func (rt *Runtime) Panicked() error {
	if e := rt.panicked.Load(); e != nil {
		return e
	}
	return nil
}

// Log reads a run's whole log, as a driver or hook sender does.
func (rt *Runtime) Log(ctx context.Context, runID string) ([]eventlog.Event, error) {
	s, err := rt.run(runID)
	if err != nil {
		s = &runState{id: runID} // a finished run: read it, count nothing
	}
	evs, _, _, err := rt.load(worlds.WithActor(ctx, "driver"), s, eventlog.Cursor{}, outsidePage)
	return evs, err
}

func (rt *Runtime) backoff(n int) time.Duration {
	return rt.cfg.Backoff << min(n, 8)
}

func (rt *Runtime) actor(kind string) string {
	return fmt.Sprintf("%s-%d", kind, rt.actors.Add(1))
}

// writeGrace bounds a write that outlives its run's cancellation.
const writeGrace = 30 * time.Second

// writeCtx is the context of one world write. Under the slot scheme a write
// reserves its slots before its window and commits after it, so a writer
// cancelled in the window leaves a hole: a real writer is not killed when
// its run ends, so the write outlives the run's own cancellation (Finish)
// and ends only with the runtime (an interrupted storm) or writeGrace.
// Under the other schemes a cancelled write leaves nothing and ctx is used
// as is.
func (rt *Runtime) writeCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	if rt.cfg.Scheme != eventlog.SchemeSlot {
		return ctx, func() {}
	}
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), writeGrace)
	stop := context.AfterFunc(rt.ctx, cancel)
	return wctx, func() { stop(); cancel() }
}

// append writes facts (or one decision) of run s unfenced through
// writeCtx, and observes the store's answer.
func (rt *Runtime) append(ctx context.Context, s *runState, d []eventlog.Draft) ([]eventlog.Event, error) {
	wctx, done := rt.writeCtx(ctx)
	defer done()
	evs, err := rt.cfg.World.Append(wctx, s.id, d)
	s.stats.observe(ctx, err)
	return evs, err
}

// appendFenced writes a fenced batch of run s through writeCtx, and
// observes the store's answer.
func (rt *Runtime) appendFenced(ctx context.Context, s *runState, expected int64, d []eventlog.Draft) ([]eventlog.Event, error) {
	wctx, done := rt.writeCtx(ctx)
	defer done()
	evs, err := rt.cfg.World.AppendFenced(wctx, s.id, expected, d)
	s.stats.observe(ctx, err)
	return evs, err
}
