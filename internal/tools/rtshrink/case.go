package rtshrink

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"time"

	"github.com/stormctl/stormctl/internal/engines/rerun"
)

// collapse is the failing invocation's schedule as a store holding the
// log it read: every event its lists (and a create's snapshot) served, in
// the order served, each once.
func collapse(inv rerun.RuntimeInvocation) (Case, error) {
	c := Case{RunID: inv.RunID, Created: inv.Created, Recovery: inv.Recovery}
	seen := map[string]json.RawMessage{}
	add := func(evs []json.RawMessage) error {
		for _, raw := range evs {
			var id struct {
				EventID string `json:"eventId"`
			}
			if err := json.Unmarshal(raw, &id); err != nil || id.EventID == "" {
				return fmt.Errorf("shrink %s: an event served has no eventId (%v)", inv.RunID, err)
			}
			prev, dup := seen[id.EventID]
			switch {
			case !dup:
				seen[id.EventID] = raw
				c.Log = append(c.Log, raw)
			case !bytes.Equal(prev, raw):
				return fmt.Errorf("shrink %s: event %s was served twice with other contents: one log cannot hold both", inv.RunID, id.EventID)
			}
		}
		return nil
	}
	started := false
	for _, op := range inv.Ops {
		switch {
		case op.Kind == "list" && op.Error == nil:
			if err := add(op.Events); err != nil {
				return c, err
			}
			c.Clock = max(c.Clock, op.End)
		case op.Kind == "create":
			if op.EventType == "run_started" && op.StartedAt != nil && !started {
				c.StartedAt, started = *op.StartedAt, true
			}
			// A create's answer that carried the log (run_started's
			// preload, 5.0's deltas) was read as much as a list was.
			if op.Snapshot != nil {
				if err := add(op.Snapshot.Events); err != nil {
					return c, err
				}
				c.Clock = max(c.Clock, op.End)
			}
		}
	}
	if !started {
		return c, fmt.Errorf("shrink %s: its failing invocation made no run_started the store answered, which a replay needs to start", inv.RunID)
	}
	if c.Clock == 0 {
		c.Clock = millis(inv.Clock)
	}
	return c, nil
}

// keep is c with only the log's events at the indexes keep lists.
func (c Case) keep(keep []int) Case {
	out := c
	out.Log = make([]json.RawMessage, 0, len(keep))
	for _, i := range keep {
		out.Log = append(out.Log, c.Log[i])
	}
	return out
}

// invocation is c as the runtime's replay world serves it: the log
// replayed as a store holds it (rerun.LogInvocation), with the run
// started at StartedAt and the clock at Clock.
func (c Case) invocation() rerun.RuntimeInvocation {
	inv := rerun.LogInvocation(c.RunID, c.Created, fromMillis(c.StartedAt), fromMillis(c.Clock), c.Log)
	inv.Recovery = c.Recovery
	return inv
}

// fromMillis is the time ms (since the epoch, to the microsecond) names.
func fromMillis(ms float64) time.Time { return time.UnixMicro(int64(math.Round(ms * 1000))) }

func millis(t time.Time) float64 { return float64(t.UnixMicro()) / 1000 }

// sizeOf measures a recorded schedule of invocations invocations.
func sizeOf(inv rerun.RuntimeInvocation, invocations int) Size {
	s := Size{Invocations: invocations, Pages: countLists(inv), Creates: countCreates(inv)}
	for _, op := range inv.Ops {
		s.Events += len(op.Events)
		if op.Snapshot != nil {
			s.Events += len(op.Snapshot.Events)
		}
	}
	return s
}

func countLists(inv rerun.RuntimeInvocation) int {
	n := 0
	for _, op := range inv.Ops {
		if op.Kind == "list" {
			n++
		}
	}
	return n
}

func countCreates(inv rerun.RuntimeInvocation) int {
	return len(inv.Ops) - countLists(inv)
}
