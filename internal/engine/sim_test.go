package engine

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/stormctl/stormctl/internal/eventlog"
)

var simNow = time.Date(2026, 7, 29, 12, 0, 0, 0, time.UTC)

// allWakes are the wake policies every replay test runs under.
var allWakes = []WakePolicy{WakeOrdered, WakeEngine, WakeShuffle}

// simulate runs prog to its end over an in-memory log: each replay's
// decisions are appended, and every step, wait and hook they create is
// completed right behind its creation. It returns the finished log.
func simulate(t testing.TB, prog Program, input any, ids IDPolicy) []eventlog.Event {
	t.Helper()
	log := []eventlog.Event{}
	add := func(d eventlog.Draft) {
		log = append(log, eventlog.Event{RunID: "run-sim", ID: fmt.Sprintf("e%05d", len(log)), Seq: int64(len(log) + 1),
			Type: d.Type, CorrelationID: d.CorrelationID, Token: d.Token, Dedup: d.Dedup, Payload: d.Payload})
	}
	add(eventlog.Draft{Type: eventlog.RunCreated, Payload: mustJSON(input)})
	for range 100000 {
		out := Replay(prog, "run-sim", log, ReplayMode{IDs: ids, Wake: WakeOrdered}, simNow)
		switch {
		case out.Divergence != nil:
			t.Fatalf("simulation diverged: %v", out.Divergence)
		case out.Terminal != nil:
			return log
		case len(out.Decisions) == 0:
			t.Fatalf("simulation made no progress at %d events", len(log))
		}
		for _, d := range out.Decisions {
			add(d)
			switch d.Type {
			case eventlog.StepCreated:
				var p stepCreated
				_ = json.Unmarshal(d.Payload, &p)
				add(eventlog.Draft{Type: eventlog.StepStarted, CorrelationID: d.CorrelationID})
				add(eventlog.Draft{Type: eventlog.StepCompleted, CorrelationID: d.CorrelationID,
					Payload: mustJSON(stepCompleted{Result: mustJSON(p.Name + string(p.Args))})})
			case eventlog.WaitCreated:
				var p waitCreated
				_ = json.Unmarshal(d.Payload, &p)
				add(eventlog.Draft{Type: eventlog.WaitCompleted, CorrelationID: d.CorrelationID, Payload: mustJSON(waitCompleted{ResumeAt: p.ResumeAt})})
			case eventlog.HookCreated:
				add(eventlog.Draft{Type: eventlog.HookReceived, CorrelationID: d.CorrelationID, Dedup: "1",
					Payload: mustJSON("payload:" + d.Token)})
			}
		}
	}
	t.Fatal("simulation did not finish")
	return nil
}

// shape parameterizes the test workflow so a variant can disagree with a
// log in exactly one way.
type shape struct {
	StepA string
	ArgA  int
	Token string
	Sleep time.Duration
	Attr  string
}

var baseShape = shape{StepA: "a", ArgA: 1, Token: "tok", Sleep: time.Second, Attr: "k"}

// shaped is a workflow touching every operation: an attribute, a hook, a
// step, two branches (one racing a step against a sleep), the hook's
// payload, and a disposal.
func shaped(s shape) Program {
	return func(c *Ctx) (any, error) {
		c.Attr(s.Attr, "v")
		h := c.Hook(s.Token)
		var a string
		if err := c.AwaitInto(c.Step(s.StepA, s.ArgA), &a); err != nil {
			return nil, err
		}
		b1 := c.Go(func(c *Ctx) (any, error) {
			race := c.Race(c.Step("b", 2), c.Sleep(s.Sleep))
			if _, err := c.Await(race); err != nil {
				return nil, err
			}
			return race.Winner(), nil
		})
		b2 := c.Go(func(c *Ctx) (any, error) {
			var v string
			err := c.AwaitInto(c.Step("c", 3), &v)
			return v, err
		})
		if _, err := c.Await(c.All(b1, b2)); err != nil {
			return nil, err
		}
		var p string
		if err := c.AwaitInto(h.Next(), &p); err != nil {
			return nil, err
		}
		h.Dispose()
		return []string{a, p}, nil
	}
}
