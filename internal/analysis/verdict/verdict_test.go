package verdict_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stormctl/stormctl/forensics"
	"github.com/stormctl/stormctl/internal/analysis/verdict"
	"github.com/stormctl/stormctl/internal/engine"
	"github.com/stormctl/stormctl/internal/eventlog"
	"github.com/stormctl/stormctl/internal/history"
)

// twoBranches: each branch awaits its step, then calls a follow-up step.
func twoBranches(c *engine.Ctx) (any, error) {
	branch := func(name string) *engine.Future {
		return c.Go(func(c *engine.Ctx) (any, error) {
			if _, err := c.Await(c.Step(name, 0)); err != nil {
				return nil, err
			}
			_, err := c.Await(c.Step("after-"+name, 0))
			return name, err
		})
	}
	_, err := c.Await(c.All(branch("x"), branch("y")))
	return "done", err
}

func ev(seq int, d eventlog.Draft) eventlog.Event {
	return eventlog.Event{RunID: "r", ID: fmt.Sprintf("e%03d", seq), Seq: int64(seq), Type: d.Type,
		CorrelationID: d.CorrelationID, Token: d.Token, Dedup: d.Dedup, Payload: d.Payload}
}

// fixture builds, with the engine itself, a log where both first steps have
// completed, and the follow-up decisions an in-order replay derives from it.
func fixture(t *testing.T, ids engine.IDPolicy) ([]eventlog.Event, []eventlog.Draft) {
	t.Helper()
	log := []eventlog.Event{ev(1, eventlog.Draft{Type: eventlog.RunCreated, Payload: json.RawMessage(`null`)})}
	first := engine.Replay(twoBranches, "r", log, engine.ReplayMode{IDs: ids, Wake: engine.WakeOrdered}, time.Time{}).Decisions
	if len(first) != 2 {
		t.Fatalf("first decisions %+v", first)
	}
	for _, d := range first {
		log = append(log, ev(len(log)+1, d))
	}
	for _, d := range first {
		log = append(log, ev(len(log)+1, eventlog.Draft{Type: eventlog.StepCompleted, CorrelationID: d.CorrelationID,
			Payload: json.RawMessage(`{"result":"ok"}`)}))
	}
	next := engine.Replay(twoBranches, "r", log, engine.ReplayMode{IDs: ids, Wake: engine.WakeOrdered}, time.Time{}).Decisions
	if len(next) != 2 {
		t.Fatalf("follow-up decisions %+v", next)
	}
	return log, next
}

// lateFact is a fact about step corr that changes no decision and may land
// after the step completed: an attribute its step worker set, which replay
// does not consume. (A step_started after its step_completed would not do:
// the step's consumer is gone by then, and the replay diverges, as core's.)
func lateFact(corr string) eventlog.Draft {
	return eventlog.Draft{Type: eventlog.AttrSet, CorrelationID: corr, Dedup: engine.StepAttrDedup + "k",
		Payload: json.RawMessage(`{"key":"k","value":"v"}`)}
}

// rejected is the history op of a batch rejected at expected, the log being
// at actual.
func rejected(expected, actual int64, batch []eventlog.Draft) history.Op {
	op := history.Op{Kind: history.OpAppendFenced, Actor: "inv-1", Err: "fenced", Expected: expected, Actual: actual}
	for _, d := range batch {
		op.Wrote = append(op.Wrote, history.OpEvent{Type: d.Type, CorrelationID: d.CorrelationID, Payload: d.Payload})
	}
	return op
}

// swapNames gives each decision the other's step name under the same ids:
// what a writer that woke the branches in the other order would write.
func swapNames(ds []eventlog.Draft) []eventlog.Draft {
	out := []eventlog.Draft{ds[0], ds[1]}
	out[0].Payload, out[1].Payload = ds[1].Payload, ds[0].Payload
	return out
}

func TestJudge(t *testing.T) {
	t.Parallel()
	for _, ids := range []engine.IDPolicy{engine.IDsPositional, engine.IDsCallsite} {
		log, next := fixture(t, ids)
		// A fact (an attribute x's step worker set) lands after the writer
		// loaded the log.
		final := append(log, ev(len(log)+1, lateFact(log[1].CorrelationID)))
		n := int64(len(log))
		broken := append([]eventlog.Event{}, final...)
		broken[1].Payload = json.RawMessage(`{"name":"nobody","args":0}`)
		tests := []struct {
			name  string
			final []eventlog.Event
			op    history.Op
			check func(in, out json.RawMessage) error
			want  verdict.Verdict
		}{
			{"the right decisions, fenced by a fact: benign", final, rejected(n, n+1, next), nil, verdict.Benign},
			{"decisions drawn in the other wake order", final, rejected(n, n+1, swapNames(next)), nil, verdict.TruePositive},
			{"a log that diverges already", broken, rejected(n, n+1, next), nil, verdict.Unknown},
			{"the store had more than the final log", final, rejected(n, n+9, next), nil, verdict.Unknown},
			{"a completion with a wrong output", final, rejected(n, n+1, []eventlog.Draft{
				{Type: eventlog.RunCompleted, Payload: json.RawMessage(`{"output":"wrong"}`)}}),
				func(_, out json.RawMessage) error {
					if string(out) != `"done"` {
						return errors.New("wrong output " + string(out))
					}
					return nil
				}, verdict.TruePositive},
		}
		// The run had completed before the writer was rejected.
		done := func(output string) []eventlog.Event {
			return append(append([]eventlog.Event{}, final...), ev(len(final)+1, eventlog.Draft{Type: eventlog.RunCompleted,
				Payload: json.RawMessage(`{"output":` + output + `}`)}))
		}
		checkDone := func(_, out json.RawMessage) error {
			if string(out) != `"done"` {
				return errors.New("wrong output " + string(out))
			}
			return nil
		}
		m := int64(len(final) + 1)
		tests = append(tests, []struct {
			name  string
			final []eventlog.Event
			op    history.Op
			check func(in, out json.RawMessage) error
			want  verdict.Verdict
		}{
			{"a write after the run completed: benign", done(`"done"`), rejected(n, m, next), checkDone, verdict.Benign},
			{"a write after the run completed wrongly", done(`"wrong"`), rejected(n, m, next), checkDone, verdict.Unknown},
		}...)
		for _, tt := range tests {
			t.Run(string(ids)+"/"+tt.name, func(t *testing.T) {
				t.Parallel()
				want := tt.want
				vs := verdict.Judge(verdict.Input{RunID: "r", Program: twoBranches, Knobs: engine.Knobs{Scheme: eventlog.SchemeSeq, Policy: engine.Policy{IDs: ids}},
					Final: tt.final, Ops: []history.Op{{Kind: history.OpList}, tt.op}, Check: tt.check})
				if len(vs) != 1 || vs[0].Verdict != want {
					t.Fatalf("verdicts %+v, want one %s", vs, want)
				}
			})
		}
	}
}

// TestJudgePlacesTheLogByCommitTime: when a rejection's Actual is not the
// log's length (a decisions-only fence reports the last fenced position, a
// guard its own count), the log at the rejection is what had committed
// before it; an event without a commit time makes the verdict unknown
// rather than a guess.
func TestJudgePlacesTheLogByCommitTime(t *testing.T) {
	t.Parallel()
	base := time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC)
	log, next := fixture(t, engine.IDsCallsite)
	final := append(log, ev(len(log)+1, lateFact(log[1].CorrelationID)))
	for i := range final {
		final[i].CommittedAt = base.Add(time.Duration(i) * time.Millisecond)
	}
	n := int64(len(log))
	at := func(op history.Op, end time.Duration) history.Op { op.End = base.Add(end); return op }
	unstamped := append([]eventlog.Event{}, final...)
	unstamped[2].CommittedAt = time.Time{}
	tests := []struct {
		name   string
		scheme eventlog.Scheme
		fence  engine.FencePolicy
		guard  eventlog.Guard
		final  []eventlog.Event
		op     history.Op
		want   verdict.Verdict
	}{
		// Actual 2 is the last fenced position: read as a length, the log
		// would be two events long and the batch judged against it.
		{"decisions-only, after the fact", eventlog.SchemeSeq, engine.FenceDecisionsOnly, eventlog.GuardNone, final, at(rejected(n, 2, next), time.Hour), verdict.Benign},
		{"decisions-only, wrong decisions", eventlog.SchemeSeq, engine.FenceDecisionsOnly, eventlog.GuardNone, final, at(rejected(n, 2, swapNames(next)), time.Hour), verdict.TruePositive},
		{"a guard's count", eventlog.SchemeSeq, engine.FenceDecisions, eventlog.GuardCountIndex, final, at(rejected(n, 99, next), time.Hour), verdict.Benign},
		{"an event without a commit time", eventlog.SchemeSeq, engine.FenceDecisionsOnly, eventlog.GuardNone, unstamped, at(rejected(n, 2, next), time.Hour), verdict.Unknown},
		{"ulid: an event without a commit time", eventlog.SchemeULID, engine.FenceDecisions, eventlog.GuardNone, unstamped, at(rejected(n, n, next), time.Hour), verdict.Unknown},
		{"ulid: wrong decisions on the whole log", eventlog.SchemeULID, engine.FenceDecisions, eventlog.GuardNone, final, at(rejected(n, n, swapNames(next)), time.Hour), verdict.TruePositive},
		// Cut off after the step_created events, before their completions:
		// the follow-up decisions come too early for that log.
		{"decisions-only, cut off before the completions", eventlog.SchemeSeq, engine.FenceDecisionsOnly, eventlog.GuardNone, final, at(rejected(n, 2, next), 2500*time.Microsecond), verdict.TruePositive},
		{"decisions-only, a fenced position past the cutoff", eventlog.SchemeSeq, engine.FenceDecisionsOnly, eventlog.GuardNone, final, at(rejected(n, n, next), 2500*time.Microsecond), verdict.Benign},
		{"a guard's count, cut off before the completions", eventlog.SchemeSeq, engine.FenceDecisions, eventlog.GuardCountIndex, final, at(rejected(n, 99, next), 2500*time.Microsecond), verdict.TruePositive},
		{"ulid: cut off before the completions", eventlog.SchemeULID, engine.FenceDecisions, eventlog.GuardNone, final, at(rejected(n, n, next), 2500*time.Microsecond), verdict.TruePositive},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ops := []history.Op{tt.op}
			vs := verdict.Judge(verdict.Input{RunID: "r", Program: twoBranches,
				Knobs: engine.Knobs{Scheme: tt.scheme, Policy: engine.Policy{IDs: engine.IDsCallsite, Fence: tt.fence, Guard: tt.guard}},
				Final: tt.final, Ops: ops, Commits: forensics.CommitEvents(tt.final, ops, true)})
			if len(vs) != 1 || vs[0].Verdict != tt.want {
				t.Fatalf("verdicts %+v, want one %s", vs, tt.want)
			}
		})
	}
}

func TestSplit(t *testing.T) {
	t.Parallel()
	tp, benign, unknown := verdict.Split([]verdict.Judgement{{Verdict: verdict.TruePositive}, {Verdict: verdict.Benign},
		{Verdict: verdict.Benign}, {Verdict: verdict.Unknown}})
	if tp != 1 || benign != 2 || unknown != 1 {
		t.Fatalf("split %d/%d/%d", tp, benign, unknown)
	}
}
