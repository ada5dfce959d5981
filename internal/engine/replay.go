package engine

import (
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/stormctl/stormctl/internal/eventlog"
)

// replay is one execution of a program over one loaded log.
type replay struct {
	mu      sync.Mutex
	quiet   *sync.Cond
	running int
	settles int
	abort   chan struct{}
	g       errgroup.Group

	ids  idSource
	wake WakePolicy
	// inert steps over an event of a finished operation (RepeatsInert)
	// instead of failing to consume it.
	inert bool
	// Delivery barriers of wake=engine: buffered payloads not yet claimed
	// nor retired, and the deliveries parked behind them, in log order.
	unarmed int
	parked  []*delivery
	// unchecked is the first consumed event that disagrees with its call
	// in a way the engine does not check.
	unchecked *DivergenceError
	// window holds wake=engine's deliveries consumed in the current drain
	// window, delivered when it ends.
	window  []*delivery
	input   json.RawMessage
	now     time.Time
	ops     map[string]*op
	intents []intent

	mainDone bool
	output   json.RawMessage
	progErr  error
}

// Payloads of the events the engine writes.
type (
	stepCreated struct {
		Name string          `json:"name"`
		Args json.RawMessage `json:"args"`
	}
	stepCompleted struct {
		Result json.RawMessage `json:"result"`
	}
	waitCreated struct {
		DurationMs int64     `json:"durationMs"`
		ResumeAt   time.Time `json:"resumeAt"`
	}
	waitCompleted struct {
		ResumeAt time.Time `json:"resumeAt"`
	}
	attrSet struct {
		Key   string          `json:"key"`
		Value json.RawMessage `json:"value"`
	}
	runCompleted struct {
		Output json.RawMessage `json:"output"`
	}
	// RunFailure is the payload of run_failed.
	RunFailure struct {
		Code    string `json:"code"`
		Message string `json:"message"`
		// Reason says what caused a CORRUPTED_EVENT_LOG when it was not a
		// replay divergence (ReasonHole); empty otherwise.
		Reason string `json:"reason,omitempty"`
	}
)

// Outcome is what one replay of a log concluded.
type Outcome struct {
	// Decisions the replay derived that the log does not hold yet, in call
	// order; a finished program's run_completed or run_failed comes last.
	Decisions []eventlog.Draft
	// Terminal is the log's terminal event, when the run already ended.
	Terminal *eventlog.Event
	// Divergence is set when the replay disagreed with the log.
	Divergence *DivergenceError
	// Unchecked is the first event the replay consumed although it
	// disagrees with the call it was matched to in a way the engine does
	// not check (Kind "step_args": a step_created whose arguments differ
	// from the call's): how a positional id feeds one branch another's
	// result without a divergence. Nil when there is none.
	Unchecked *DivergenceError
	// Waits are the waits the code is blocked on at suspension, logged or
	// new, with their resumeAt: the suspension schedules a wake-up for the
	// earliest.
	Waits []PendingWait
}

// PendingWait is a wait not completed at suspension.
type PendingWait struct {
	CorrelationID string
	ResumeAt      time.Time
}

// Replay runs prog over log (in the scheme's order) in the given mode (its
// id, wake and repeat policies) and returns what it derived. now stamps new
// waits' resumeAt.
func Replay(prog Program, runID string, log []eventlog.Event, m ReplayMode, now time.Time) Outcome {
	r := &replay{
		abort: make(chan struct{}),
		ids:   newIDSource(m.IDs, runID),
		wake:  m.Wake,
		inert: m.Repeats == RepeatsInert,
		now:   now,
		ops:   map[string]*op{},
	}
	r.quiet = sync.NewCond(&r.mu)
	for _, e := range log {
		if e.Type == eventlog.RunCreated {
			r.input = e.Payload
			break
		}
	}
	out := r.run(prog, log)
	close(r.abort)
	_ = r.g.Wait()
	return out
}

func (r *replay) run(prog Program, log []eventlog.Event) Outcome {
	main := newBranch()
	r.running = 1
	r.g.Go(func() error {
		r.runBranch(main, prog, func(v json.RawMessage, err error) []*branch {
			r.mainDone, r.output, r.progErr = true, v, err
			return nil
		})
		return nil
	})
	r.waitQuiet()
	for i := range log {
		e := &log[i]
		if e.Type.IsTerminal() {
			return Outcome{Terminal: e, Unchecked: r.uncheckedAt()}
		}
		var err *DivergenceError
		switch {
		case r.wake.Shuffled():
			err = r.consumeShuffled(e)
		case r.wake == WakeEngine:
			err = r.consumeEngine(e)
		default:
			err = r.consumeInOrder(e)
		}
		r.mu.Lock()
		if u := r.unchecked; u != nil && u.Index < 0 {
			u.Index = i
		}
		r.mu.Unlock()
		if err != nil {
			err.Index = i
			return Outcome{Divergence: err, Unchecked: r.uncheckedAt()}
		}
	}
	r.endWindow()
	r.waitQuiet()
	r.mu.Lock()
	defer r.mu.Unlock()
	return Outcome{Decisions: r.decisions(), Waits: r.pendingWaits(), Unchecked: r.unchecked}
}

// uncheckedAt returns the first unchecked disagreement, if any.
func (r *replay) uncheckedAt() *DivergenceError {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.unchecked
}

// consumeInOrder consumes one event under wake=ordered: each delivery's
// woken branches run until they block before the next event is consumed.
func (r *replay) consumeInOrder(e *eventlog.Event) *DivergenceError {
	r.waitQuiet()
	r.mu.Lock()
	d, err := r.consume(e)
	r.mu.Unlock()
	if err != nil || d == nil {
		return err
	}
	r.deliver(d)
	return nil
}

// consumeEngine consumes one event under wake=engine, the shipped engine's
// delivery. Consecutive events the code can take are consumed in one drain
// window, their deliveries held; an event it cannot take yet ends the
// window: the held deliveries reach the code in log order, each woken branch
// running until it blocks, then the replay idles (the idle safety net
// retires the barriers of unclaimed payloads and delivers what was parked
// behind them), and the event is tried again. Barriers park a wait
// completion consumed behind an unclaimed payload of the same window (and a
// hook payload behind a parked wait); a step result skips them, so it
// reaches the code first (GapBufferedHook).
func (r *replay) consumeEngine(e *eventlog.Event) *DivergenceError {
	r.mu.Lock()
	d, err := r.consume(e)
	r.mu.Unlock()
	if err != nil && (err.Kind == "not_in_queue" || err.Kind == "unconsumed") && r.endWindow() {
		r.mu.Lock()
		d, err = r.consume(e)
		r.mu.Unlock()
	}
	if err != nil || d == nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.parks(d) {
		r.parked = append(r.parked, d)
	} else {
		r.window = append(r.window, d)
	}
	return nil
}

// parks reports whether wake=engine's barriers hold delivery d back: a wait
// defers behind an unretired buffered payload and behind what is parked; a
// hook payload behind a parked wait; a step result skips both. Callers hold
// r.mu.
func (r *replay) parks(d *delivery) bool {
	switch d.kind {
	case deliverWait:
		return r.unarmed > 0 || len(r.parked) > 0
	case deliverHook:
		return len(r.parked) > 0
	}
	return false
}

// deliver runs d and lets the branches it woke run, one at a time in the
// order they were woken, each until it blocks.
func (r *replay) deliver(d *delivery) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, b := range d.run() {
		r.running++
		b.wake <- struct{}{}
		for r.running > 0 {
			r.quiet.Wait()
		}
	}
}

// endWindow ends wake=engine's drain window: the held deliveries reach the
// code in log order, then the replay idles: the idle safety net retires the
// barriers of buffered payloads and delivers what was parked behind them, in
// log order. It reports whether anything was delivered.
func (r *replay) endWindow() bool {
	if r.wake != WakeEngine {
		return false
	}
	r.mu.Lock()
	window := r.window
	r.window = nil
	r.mu.Unlock()
	for _, d := range window {
		r.deliver(d)
	}
	r.waitQuiet()
	r.mu.Lock()
	r.unarmed = 0
	for _, o := range r.ops {
		o.unarmed = 0
	}
	parked := r.parked
	r.parked = nil
	r.mu.Unlock()
	for _, d := range parked {
		r.deliver(d)
	}
	return len(window)+len(parked) > 0
}

// consumeShuffled consumes one event under wake=shuffle: decisions wait for
// the code to block, but the branches a run of facts wakes are resumed each
// through its own hydration goroutine, in whatever order the scheduler
// finishes them.
func (r *replay) consumeShuffled(e *eventlog.Event) *DivergenceError {
	if e.Type.IsDecision() {
		r.waitQuiet()
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	d, err := r.consume(e)
	if err != nil || d == nil {
		return err
	}
	for _, b := range d.run() {
		r.running++
		r.g.Go(func() error {
			hydrate(d.val)
			b.wake <- struct{}{}
			return nil
		})
	}
	return nil
}

// pendingWaits lists the waits called and not completed. Callers hold r.mu.
func (r *replay) pendingWaits() []PendingWait {
	var out []PendingWait
	for _, in := range r.intents {
		if o := in.op; o.kind == opWait && !in.dispose && !o.fut.settled {
			out = append(out, PendingWait{CorrelationID: o.id, ResumeAt: o.resumeAt})
		}
	}
	return out
}

// hydrate decodes a delivered value, as the engine does before it resumes
// the code awaiting it.
func hydrate(val json.RawMessage) {
	var v any
	_ = json.Unmarshal(val, &v)
}

// runBranch runs fn as branch b and reports its result through done.
func (r *replay) runBranch(b *branch, fn Program, done func(json.RawMessage, error) []*branch) {
	defer b.yield()
	finished := false
	defer func() {
		if finished {
			return
		}
		p := recover()
		if p == nil {
			return // aborted with Goexit: nobody counts branches any more
		}
		r.finish(done, nil, fmt.Errorf("workflow panicked: %v", p))
	}()
	v, err := fn(&Ctx{r: r, b: b})
	finished = true
	var raw json.RawMessage
	if err == nil {
		b, merr := json.Marshal(v)
		raw, err = b, merr
	}
	r.finish(done, raw, err)
}

func (r *replay) finish(done func(json.RawMessage, error) []*branch, v json.RawMessage, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	woken := done(v, err)
	for _, w := range woken {
		r.running++
		w.wake <- struct{}{}
	}
	r.blocked()
}

// blocked records that a running branch stopped. Callers hold r.mu.
func (r *replay) blocked() {
	r.running--
	if r.running == 0 {
		r.quiet.Broadcast()
	}
}

func (r *replay) waitQuiet() {
	r.mu.Lock()
	for r.running > 0 {
		r.quiet.Wait()
	}
	r.mu.Unlock()
}
