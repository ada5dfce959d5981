package engine

import (
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/stormctl/stormctl/eventlog"
	"golang.org/x/sync/errgroup"
)

// replay is one execution of a program over one loaded log.
type replay struct {
	mu      sync.Mutex
	quiet   *sync.Cond
	running int
	settles int
	abort   chan struct{}
	g       errgroup.Group

	ids     idSource
	wake    WakePolicy
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
}

// Replay runs prog over log (in the scheme's order) under the given id and
// wake policies and returns what it derived. now stamps new waits' resumeAt.
func Replay(prog Program, runID string, log []eventlog.Event, ids IDPolicy, wake WakePolicy, now time.Time) Outcome {
	r := &replay{
		abort: make(chan struct{}),
		ids:   newIDSource(ids, runID),
		wake:  wake,
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
			return Outcome{Terminal: e}
		}
		if e.Type.IsDecision() || r.wake == WakeOrdered {
			r.waitQuiet()
		}
		r.mu.Lock()
		woken, val, err := r.consume(e)
		if err != nil {
			r.mu.Unlock()
			err.Index = i
			return Outcome{Divergence: err}
		}
		r.resume(woken, val)
		r.mu.Unlock()
	}
	r.waitQuiet()
	r.mu.Lock()
	defer r.mu.Unlock()
	return Outcome{Decisions: r.decisions()}
}

// resume wakes the branches an event settled, by the wake policy. Callers
// hold r.mu. Ordered: one at a time, each run to quiescence before the next.
// Racy: each through its own hydration goroutine, in whatever order the
// scheduler finishes them.
func (r *replay) resume(woken []*branch, val json.RawMessage) {
	for _, b := range woken {
		r.running++
		if r.wake == WakeOrdered {
			b.wake <- struct{}{}
			for r.running > 0 {
				r.quiet.Wait()
			}
			continue
		}
		r.g.Go(func() error {
			hydrate(val)
			b.wake <- struct{}{}
			return nil
		})
	}
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
