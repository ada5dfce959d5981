package engine

import "encoding/json"

// Future is the pending result of an operation: a step, a sleep, a hook's next
// payload, a branch, or a combination of those. It is settled by the replay
// consumer in log order (or by a branch returning) and read with Ctx.Await.
type Future struct {
	settled bool
	order   int // settle order within the replay; decides races
	val     json.RawMessage
	err     error
	winner  int
	waiters []*branch
	// onSettle runs synchronously when the future settles (under the replay
	// lock) and returns the branches its own settling woke.
	onSettle []func(f *Future) []*branch
}

// settle resolves f and returns the branches to wake. Callers hold r.mu.
func (r *replay) settle(f *Future, val json.RawMessage, err error, winner int) []*branch {
	if f.settled {
		return nil
	}
	r.settles++
	f.settled, f.order, f.val, f.err, f.winner = true, r.settles, val, err, winner
	woken := f.waiters
	f.waiters = nil
	for _, cb := range f.onSettle {
		woken = append(woken, cb(f)...)
	}
	f.onSettle = nil
	return woken
}

// Race returns a future that settles with the first of fs to settle in log
// order; Winner on it tells which.
func (c *Ctx) Race(fs ...*Future) *Future {
	r := c.r
	r.mu.Lock()
	defer r.mu.Unlock()
	race := &Future{}
	first := -1
	for i, f := range fs {
		if f.settled && (first < 0 || f.order < fs[first].order) {
			first = i
		}
	}
	if first >= 0 {
		r.settle(race, fs[first].val, fs[first].err, first)
		return race
	}
	for i, f := range fs {
		f.onSettle = append(f.onSettle, func(f *Future) []*branch {
			return r.settle(race, f.val, f.err, i)
		})
	}
	return race
}

// All returns a future that settles when every one of fs has; its error is
// the first error among them. Read the values by awaiting each of fs.
func (c *Ctx) All(fs ...*Future) *Future {
	r := c.r
	r.mu.Lock()
	defer r.mu.Unlock()
	all := &Future{}
	left := 0
	var firstErr error
	for _, f := range fs {
		if !f.settled {
			left++
		} else if f.err != nil && firstErr == nil {
			firstErr = f.err
		}
	}
	if left == 0 {
		r.settle(all, nil, firstErr, 0)
		return all
	}
	for _, f := range fs {
		if f.settled {
			continue
		}
		f.onSettle = append(f.onSettle, func(f *Future) []*branch {
			if f.err != nil && firstErr == nil {
				firstErr = f.err
			}
			left--
			if left > 0 {
				return nil
			}
			return r.settle(all, nil, firstErr, 0)
		})
	}
	return all
}

// Winner returns the index of the future that won a Race (0 otherwise).
// Call it after the race future has been awaited.
func (f *Future) Winner() int { return f.winner }
