package explain

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stormctl/stormctl/internal/base/fuzzbytes"
	"github.com/stormctl/stormctl/internal/engine"
	"github.com/stormctl/stormctl/internal/eventlog"
	"github.com/stormctl/stormctl/internal/history"
)

// fuzzInput decodes arbitrary bytes into a run: events of every type with
// correlation ids from a small pool (the pair program's own among them),
// positions and times out of any order, and a history of pages whose
// cursors, counts and hashes need not agree with anything.
func fuzzInput(data []byte) Input {
	next := fuzzbytes.New(data).Int
	schemes := eventlog.Schemes()
	outcomes := []history.Outcome{history.Corrupted, history.Silent, history.Gap, history.Hole, history.Stuck, "completed"}
	scheme, outcome := schemes[next()%len(schemes)], outcomes[next()%len(outcomes)]
	ids := []engine.IDPolicy{engine.IDsPositional, engine.IDsCallsite}[next()%2]
	in := Input{RunID: fixtureRun, Program: pair, Outcome: outcome, Ended: at(next() * 100),
		Knobs: engine.Knobs{Scheme: scheme, Policy: engine.Policy{IDs: ids, Wake: engine.WakeOrdered}}}
	// The pool holds the ids the program itself draws first.
	pool := []string{"", "step_nobody"}
	for _, d := range engine.Replay(pair, fixtureRun, []eventlog.Event{{Type: eventlog.RunCreated, Payload: json.RawMessage(`null`)}},
		engine.ReplayMode{IDs: in.IDs, Wake: engine.WakeOrdered}, refTime).Decisions {
		pool = append(pool, d.CorrelationID)
	}
	types := eventlog.Types()
	n := next() % 24
	for i := range n {
		e := eventlog.Event{RunID: fixtureRun, ID: string(rune('a' + next()%26)), Seq: int64(next() % 30),
			Type: types[next()%len(types)], CorrelationID: pool[next()%len(pool)], MintedAt: at(next()), CommittedAt: at(next() * 2)}
		if i == 0 {
			e.Type = eventlog.RunCreated
		}
		switch e.Type {
		case eventlog.StepCreated:
			e.Payload = json.RawMessage(`{"name":"x","args":0}`)
		case eventlog.WaitCreated:
			e.Payload = json.RawMessage(`{"durationMs":1000,"resumeAt":"2000-01-01T00:00:01Z"}`)
		}
		if next()%7 == 0 {
			e.CommittedAt = time.Time{}
		}
		in.Final = append(in.Final, e)
	}
	actors := []string{"inv-1", "inv-2", "inv-3", "step-1", "driver", ""}
	for range next() % 40 {
		op := history.Op{RunID: fixtureRun, Actor: actors[next()%len(actors)], Start: at(next()), End: at(next() + 5)}
		pick := func() eventlog.Event {
			if len(in.Final) == 0 {
				return eventlog.Event{}
			}
			return in.Final[next()%len(in.Final)]
		}
		switch next() % 4 {
		case 0, 1:
			op.Kind = history.OpList
			op.After = eventlog.After(pick())
			if next()%5 == 0 {
				op.Err, op.Slot, op.Above = []string{"hole", "gap", "duplicate"}[next()%3], int64(next()%30), int64(next()%30)
			} else {
				op.Read = &history.ReadSummary{N: next() % 30, Last: eventlog.After(pick()), SetHash: uint64(next()) * 0x9e3779b97f4a7c15, More: next()%2 == 0}
			}
		default:
			op.Kind = history.OpAppend
			e := pick()
			op.Wrote = []history.OpEvent{{Type: e.Type, CorrelationID: e.CorrelationID, ID: e.ID, Seq: e.Seq, MintedAt: e.MintedAt, CommittedAt: e.CommittedAt}}
			if next()%4 == 0 {
				op.Err = "conflict"
			}
		}
		in.Ops = append(in.Ops, op)
	}
	return in
}

// FuzzClassify: classify (without Classify's safety net) never panics on
// arbitrary histories and final logs, and always names a class with
// evidence for an outcome it explains.
func FuzzClassify(f *testing.F) {
	for _, seed := range [][]byte{
		{0, 0, 0, 10, 12, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20},
		{1, 0, 1, 30, 20, 200, 100, 50, 25, 12, 6, 3, 1, 0, 255, 128, 64, 32, 16, 8, 4, 2, 1},
		{2, 3, 0, 0, 5, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9},
		{3, 1, 1, 255, 23, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1},
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		in := fuzzInput(data)
		ex := Explanation{Run: in.RunID, Outcome: in.Outcome}
		classify(in, &ex)
		finish(&ex)
		if Explains(in.Outcome) {
			if ex.Class == "" || len(ex.Steps) == 0 {
				t.Fatalf("outcome %s: no class or narrative: %+v", in.Outcome, ex)
			}
			if ex.Class == Unknown && len(ex.MissingEvidence) == 0 {
				t.Fatalf("unknown without missing evidence: %+v", ex)
			}
		}
	})
}
