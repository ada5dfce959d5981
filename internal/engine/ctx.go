package engine

import (
	"encoding/json"
	"fmt"
	"runtime"
	"sync"
	"time"
)

// Program is a workflow: a deterministic function of its input and of the
// outcomes the log records. It returns the run's output.
type Program func(c *Ctx) (any, error)

// Ctx is a branch's handle on the replay. Its methods may be called from
// several branches at once.
type Ctx struct {
	r *replay
	b *branch
}

type branch struct {
	wake      chan struct{}
	yielded   chan struct{}
	yieldOnce sync.Once
}

func newBranch() *branch {
	return &branch{wake: make(chan struct{}, 1), yielded: make(chan struct{})}
}

// yield tells a parent blocked in Go that the branch has blocked or ended.
func (b *branch) yield() { b.yieldOnce.Do(func() { close(b.yielded) }) }

// Input returns the run's input as recorded in run_created.
func (c *Ctx) Input() json.RawMessage { return c.r.input }

// Decode unmarshals the run's input into v.
func (c *Ctx) Decode(v any) error {
	if err := json.Unmarshal(c.r.input, v); err != nil {
		return fmt.Errorf("decode run input: %w", err)
	}
	return nil
}

type opKind string

const (
	opStep opKind = "step"
	opWait opKind = "wait"
	opHook opKind = "hook"
	opAttr opKind = "attr"
)

// op is one operation the code called, addressed by its correlation id.
type op struct {
	kind     opKind
	id       string
	name     string          // step name, attr key
	args     json.RawMessage // step args, attr value
	token    string
	dur      time.Duration
	resumeAt time.Time // a wait's: from its wait_created once consumed
	created  bool
	fut      *Future

	payloads  []json.RawMessage
	next      int
	unarmed   int // buffered payloads whose delivery barrier is not retired (wake=engine)
	held      int // payloads consumed for a waiting Next, not delivered yet (wake=engine)
	pending   []*Future
	disposing bool
	disposed  bool
	// finished is set when the op's terminal event was consumed
	// (step_completed, step_failed, wait_completed, hook_disposed): as
	// core's consumer of the op then unsubscribes (returns Finished), no
	// later event of its id is consumed by anyone.
	finished bool
	// conflict is set when the store answered the hook's creation with a
	// hook_conflict (its token is another hook's): every Next fails with it.
	conflict error
	// force: the hook was created with ClaimHook (Draft.Force).
	force bool
	// claimed is set when the hook's hook_disposed carries forceClaimedBy
	// (another run took its token, spec 8): a Next after the payloads
	// that landed before it fails with it.
	claimed error
}

// intent is a decision the code made, in call order.
type intent struct {
	op      *op
	dispose bool
}

func (c *Ctx) newOp(kind opKind, scope string, fill func(o *op)) *op {
	r := c.r
	r.mu.Lock()
	defer r.mu.Unlock()
	o := &op{kind: kind, id: r.ids.draw(kind, scope), fut: &Future{}}
	fill(o)
	if prev, dup := r.ops[o.id]; dup {
		// Two calls drew one id: the second is a fresh operation the log
		// can never address; keep the first so the consumer stays defined.
		return prev
	}
	r.ops[o.id] = o
	r.intents = append(r.intents, intent{op: o})
	return o
}

func mustJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("engine: value is not JSON: %v", err))
	}
	return b
}

// Step calls the named step with args and returns its future result.
func (c *Ctx) Step(name string, args any) *Future {
	raw := mustJSON(args)
	return c.newOp(opStep, stepScope(name, raw), func(o *op) { o.name, o.args = name, raw }).fut
}

// Sleep returns a future that settles when the run's timer for d fires.
func (c *Ctx) Sleep(d time.Duration) *Future {
	return c.newOp(opWait, waitScope, func(o *op) { o.dur, o.resumeAt = d, c.r.now.Add(d) }).fut
}

// Attr records an attribute decision.
func (c *Ctx) Attr(key, value string) {
	raw := mustJSON(value)
	c.newOp(opAttr, attrScope, func(o *op) { o.name, o.args = key, raw })
}

// Hook is a hook the workflow created; payloads sent to its token arrive in
// order through Next.
type Hook struct {
	c  *Ctx
	op *op
}

// Hook creates a hook with a token unique in the run.
func (c *Ctx) Hook(token string) *Hook {
	o := c.newOp(opHook, hookScope(token), func(o *op) { o.token = token })
	return &Hook{c: c, op: o}
}

// ClaimHook creates a hook that takes its token from another run's live
// hook if one holds it (createHook({experimental_force: true}), spec 8):
// the world does so under hook-claim=force, for runs that share tokens;
// elsewhere the creation is answered as Hook's is.
func (c *Ctx) ClaimHook(token string) *Hook {
	o := c.newOp(opHook, hookScope(token), func(o *op) { o.token, o.force = token, true })
	return &Hook{c: c, op: o}
}

// ID returns the hook's correlation id.
func (h *Hook) ID() string { return h.op.id }

// Next returns a future for the next payload the hook receives.
func (h *Hook) Next() *Future {
	r := h.c.r
	r.mu.Lock()
	defer r.mu.Unlock()
	f := &Future{}
	o := h.op
	if o.conflict != nil {
		r.settle(f, nil, o.conflict, 0)
		return f
	}
	if o.next < len(o.payloads) {
		// Claiming a buffered payload retires its delivery barrier.
		if o.unarmed > 0 {
			o.unarmed--
			r.unarmed--
		}
		r.settle(f, o.payloads[o.next], nil, 0)
		o.next++
		return f
	}
	if o.claimed != nil {
		// The payloads that landed before the takeover are drained:
		// nothing can arrive for this hook again.
		r.settle(f, nil, o.claimed, 0)
		return f
	}
	o.pending = append(o.pending, f)
	return f
}

// Dispose records the decision to dispose of the hook.
func (h *Hook) Dispose() {
	r := h.c.r
	r.mu.Lock()
	defer r.mu.Unlock()
	if h.op.disposing {
		return
	}
	h.op.disposing = true
	r.intents = append(r.intents, intent{op: h.op, dispose: true})
}

// Await blocks the branch until f settles and returns its value.
func (c *Ctx) Await(f *Future) (json.RawMessage, error) {
	r := c.r
	r.mu.Lock()
	if f.settled {
		v, err := f.val, f.err
		r.mu.Unlock()
		return v, err
	}
	f.waiters = append(f.waiters, c.b)
	r.blocked()
	r.mu.Unlock()
	c.b.yield()
	select {
	case <-c.b.wake:
	case <-r.abort:
		runtime.Goexit()
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return f.val, f.err
}

// AwaitInto awaits f and unmarshals its value into v.
func (c *Ctx) AwaitInto(f *Future, v any) error {
	raw, err := c.Await(f)
	if err != nil {
		return err
	}
	if v == nil || len(raw) == 0 {
		return nil
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return fmt.Errorf("decode result: %w", err)
	}
	return nil
}

// Go starts fn as a concurrent branch and returns a future for its result.
// Like an async function, the branch runs until it first blocks before Go
// returns, so spawning is deterministic; only wakes can race.
func (c *Ctx) Go(fn func(c *Ctx) (any, error)) *Future {
	r := c.r
	f := &Future{}
	b := newBranch()
	r.mu.Lock()
	r.running++
	r.mu.Unlock()
	r.g.Go(func() error {
		r.runBranch(b, func(bc *Ctx) (any, error) { return fn(bc) }, func(v json.RawMessage, err error) []*branch {
			return r.settle(f, v, err, 0)
		})
		return nil
	})
	select {
	case <-b.yielded:
	case <-r.abort:
		runtime.Goexit()
	}
	return f
}
