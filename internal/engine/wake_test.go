package engine

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/stormctl/stormctl/internal/eventlog"
)

// logOf turns drafts into a log in the given order.
func logOf(ds ...eventlog.Draft) []eventlog.Event {
	out := make([]eventlog.Event, len(ds))
	for i, d := range ds {
		out[i] = eventlog.Event{RunID: "run-wake", ID: fmt.Sprintf("e%03d", i), Seq: int64(i + 1),
			Type: d.Type, CorrelationID: d.CorrelationID, Token: d.Token, Dedup: d.Dedup, Payload: d.Payload}
	}
	return out
}

// firstDecisions replays prog over run_created alone and returns its
// decisions by type and order, so a test can build the log around them.
func firstDecisions(t *testing.T, prog Program, ids IDPolicy) []eventlog.Draft {
	t.Helper()
	out := Replay(prog, "run-wake", logOf(eventlog.Draft{Type: eventlog.RunCreated, Payload: mustJSON(nil)}), ReplayMode{IDs: ids, Wake: WakeOrdered}, simNow)
	if out.Divergence != nil {
		t.Fatal(out.Divergence)
	}
	return out.Decisions
}

func completed(d eventlog.Draft, result any) eventlog.Draft {
	return eventlog.Draft{Type: eventlog.StepCompleted, CorrelationID: d.CorrelationID, Payload: mustJSON(stepCompleted{Result: mustJSON(result)})}
}

func waitDone(d eventlog.Draft) eventlog.Draft {
	return eventlog.Draft{Type: eventlog.WaitCompleted, CorrelationID: d.CorrelationID}
}

func received(d eventlog.Draft, dedup string) eventlog.Draft {
	return eventlog.Draft{Type: eventlog.HookReceived, CorrelationID: d.CorrelationID, Dedup: dedup, Payload: mustJSON(dedup)}
}

// pokedRace is step-storm in miniature: a side hook nobody reads, and a step
// raced against a sleep.
func pokedRace(c *Ctx) (any, error) {
	c.Hook("poke")
	race := c.Race(c.Step("settle", 1), c.Sleep(time.Second))
	if _, err := c.Await(race); err != nil {
		return nil, err
	}
	return race.Winner(), nil
}

// TestBufferedHookGap: under wake=engine a poke payload nobody claimed parks
// a later wait completion of the same load, and a step result behind it
// overtakes it; in-order delivery keeps log order.
func TestBufferedHookGap(t *testing.T) {
	ds := firstDecisions(t, pokedRace, IDsCallsite) // hook_created, step_created, wait_created
	poke, step, wait := ds[0], ds[1], ds[2]
	head := []eventlog.Draft{{Type: eventlog.RunCreated, Payload: mustJSON(nil)}, poke, step, wait,
		{Type: eventlog.StepStarted, CorrelationID: step.CorrelationID}}
	tests := []struct {
		name string
		tail []eventlog.Draft
		want map[WakePolicy]string // the race's winner: 0 step, 1 timer
	}{
		{"timer first, no poke", []eventlog.Draft{waitDone(wait), completed(step, "s")},
			map[WakePolicy]string{WakeOrdered: "1", WakeEngine: "1"}},
		{"timer first behind an unclaimed poke", []eventlog.Draft{received(poke, "p1"), waitDone(wait), completed(step, "s")},
			map[WakePolicy]string{WakeOrdered: "1", WakeEngine: "0"}},
		{"poke after the timer", []eventlog.Draft{waitDone(wait), received(poke, "p1"), completed(step, "s")},
			map[WakePolicy]string{WakeOrdered: "1", WakeEngine: "1"}},
		{"step first behind a poke", []eventlog.Draft{received(poke, "p1"), completed(step, "s"), waitDone(wait)},
			map[WakePolicy]string{WakeOrdered: "0", WakeEngine: "0"}},
		{"timer alone behind a poke: released when the replay idles", []eventlog.Draft{received(poke, "p1"), waitDone(wait)},
			map[WakePolicy]string{WakeOrdered: "1", WakeEngine: "1"}},
	}
	for _, tt := range tests {
		for wake, want := range tt.want {
			t.Run(tt.name+"/"+string(wake), func(t *testing.T) {
				out := Replay(pokedRace, "run-wake", logOf(append(head, tt.tail...)...), ReplayMode{IDs: IDsCallsite, Wake: wake}, simNow)
				if out.Divergence != nil || len(out.Decisions) == 0 {
					t.Fatalf("%+v", out)
				}
				last := out.Decisions[len(out.Decisions)-1]
				got, _ := Output(eventlog.Event{Payload: last.Payload})
				if last.Type != eventlog.RunCompleted || string(got) != want {
					t.Fatalf("winner %s (%s), want %s", got, last.Type, want)
				}
			})
		}
	}
}

// twoBranchTails: branch 1 races a step against a sleep and calls recover on
// the timer path; branch 2 awaits a step and calls finalize.
func twoBranchTails(c *Ctx) (any, error) {
	c.Hook("poke")
	b1 := c.Go(func(c *Ctx) (any, error) {
		race := c.Race(c.Step("settle", 1), c.Sleep(time.Second))
		if _, err := c.Await(race); err != nil || race.Winner() == 0 {
			return nil, err
		}
		return c.Await(c.Step("recover", 1))
	})
	b2 := c.Go(func(c *Ctx) (any, error) {
		if _, err := c.Await(c.Step("settle", 2)); err != nil {
			return nil, err
		}
		return c.Await(c.Step("finalize", 2))
	})
	_, err := c.Await(c.All(b1, b2))
	return nil, err
}

// TestDeliveryOrderDecidesDrawOrder: the branch a delivery wakes first draws
// the next positional id. Log order draws recover before finalize; the
// buffered-hook gap lets branch 2's step result overtake branch 1's timer.
func TestDeliveryOrderDecidesDrawOrder(t *testing.T) {
	ds := firstDecisions(t, twoBranchTails, IDsPositional) // poke, settle1, wait1, settle2
	poke, s1, w1, s2 := ds[0], ds[1], ds[2], ds[3]
	log := logOf(eventlog.Draft{Type: eventlog.RunCreated, Payload: mustJSON(nil)}, poke, s1, w1, s2,
		received(poke, "p1"), waitDone(w1), completed(s2, "s2"))
	tests := []struct {
		wake WakePolicy
		want []string // step names in the order they were decided
	}{
		{WakeOrdered, []string{"recover", "finalize"}},
		{WakeEngine, []string{"finalize", "recover"}},
	}
	for _, tt := range tests {
		t.Run(string(tt.wake), func(t *testing.T) {
			out := Replay(twoBranchTails, "run-wake", log, ReplayMode{IDs: IDsPositional, Wake: tt.wake}, simNow)
			if out.Divergence != nil {
				t.Fatal(out.Divergence)
			}
			var got []string
			for _, d := range out.Decisions {
				if d.Type == eventlog.StepCreated {
					var p stepCreated
					_ = json.Unmarshal(d.Payload, &p)
					got = append(got, p.Name)
				}
			}
			if fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Fatalf("decided %v, want %v", got, tt.want)
			}
		})
	}
}

// TestSettledLogReplaysAlike: replaying one settled, dense log again and
// again derives the same thing under log-order delivery, as the real engine
// does; only shuffle may not.
func TestSettledLogReplaysAlike(t *testing.T) {
	prog := twoStepFanOut(8)
	for _, ids := range []IDPolicy{IDsPositional, IDsCallsite} {
		log := simulate(t, prog, nil, ids)
		log = log[:len(log)-1]
		for _, wake := range []WakePolicy{WakeOrdered, WakeEngine} {
			for i := range 50 {
				out := Replay(prog, "run-sim", log, ReplayMode{IDs: ids, Wake: wake}, simNow)
				if out.Divergence != nil || len(out.Decisions) != 1 || out.Decisions[0].Type != eventlog.RunCompleted {
					t.Fatalf("%s/%s replay %d: %+v", ids, wake, i, out)
				}
			}
		}
	}
}

// twoStepFanOut runs width branches of two steps each, in parallel.
func twoStepFanOut(width int) Program {
	return func(c *Ctx) (any, error) {
		fs := make([]*Future, width)
		for b := range width {
			fs[b] = c.Go(func(c *Ctx) (any, error) {
				if _, err := c.Await(c.Step("first", b)); err != nil {
					return nil, err
				}
				return c.Await(c.Step("second", b))
			})
		}
		_, err := c.Await(c.All(fs...))
		return nil, err
	}
}

// TestPayloadBeforeDisposalIsDelivered: a hook payload consumed before the
// hook's disposal reaches the Next waiting for it under every wake, even
// when its delivery is held to the end of a drain window.
func TestPayloadBeforeDisposalIsDelivered(t *testing.T) {
	prog := func(c *Ctx) (any, error) {
		h := c.Hook("x")
		race := c.Race(h.Next(), c.Sleep(time.Second))
		if _, err := c.Await(race); err != nil {
			return nil, err
		}
		h.Dispose()
		return race.Winner(), nil
	}
	ds := firstDecisions(t, prog, IDsCallsite) // hook_created, wait_created
	log := logOf(eventlog.Draft{Type: eventlog.RunCreated, Payload: mustJSON(nil)}, ds[0], ds[1], received(ds[0], "p"),
		eventlog.Draft{Type: eventlog.HookDisposed, CorrelationID: ds[0].CorrelationID})
	for _, wake := range allWakes {
		out := Replay(prog, "run-wake", log, ReplayMode{IDs: IDsCallsite, Wake: wake}, simNow)
		if out.Divergence != nil || len(out.Decisions) != 1 {
			t.Fatalf("%s: %+v", wake, out)
		}
		if got, _ := Output(eventlog.Event{Payload: out.Decisions[0].Payload}); string(got) != "0" {
			t.Fatalf("%s: winner %s, want the hook (0)", wake, got)
		}
	}
}

// TestHookPayloadsStayInOrder: a hook hands its payloads to its Nexts in log
// order under every wake, whichever of them found a Next waiting.
func TestHookPayloadsStayInOrder(t *testing.T) {
	prog := func(c *Ctx) (any, error) {
		h := c.Hook("x")
		var got []string
		for range 3 {
			var p string
			if err := c.AwaitInto(h.Next(), &p); err != nil {
				return nil, err
			}
			got = append(got, p)
		}
		return got, nil
	}
	ds := firstDecisions(t, prog, IDsCallsite) // hook_created
	log := logOf(eventlog.Draft{Type: eventlog.RunCreated, Payload: mustJSON(nil)}, ds[0],
		received(ds[0], "p1"), received(ds[0], "p2"), received(ds[0], "p3"))
	for _, wake := range allWakes {
		out := Replay(prog, "run-wake", log, ReplayMode{IDs: IDsCallsite, Wake: wake}, simNow)
		if out.Divergence != nil || len(out.Decisions) != 1 {
			t.Fatalf("%s: %+v", wake, out)
		}
		if got, _ := Output(eventlog.Event{Payload: out.Decisions[0].Payload}); string(got) != `["p1","p2","p3"]` {
			t.Fatalf("%s: payloads %s, want p1, p2, p3", wake, got)
		}
	}
}

// TestWakeDelay: a wake-up timer waits whole ticks, at least one, never
// less than the time until the wait is due.
func TestWakeDelay(t *testing.T) {
	const tick = 100 * time.Millisecond
	tests := []struct {
		until, want time.Duration
	}{
		{250 * time.Millisecond, 300 * time.Millisecond},
		{300 * time.Millisecond, 300 * time.Millisecond},
		{300*time.Millisecond + time.Nanosecond, 400 * time.Millisecond},
		{time.Nanosecond, tick},
		{0, tick},
		{-time.Second, tick}, // already due: the next tick
	}
	for _, tt := range tests {
		if got := wakeDelay(tt.until, tick); got != tt.want {
			t.Errorf("wakeDelay(%s, %s) = %s, want %s", tt.until, tick, got, tt.want)
		}
	}
}
