// Package verdict judges every fenced (or guard) rejection of a storm run: had
// the rejected batch been accepted, would a reference replay of the log have
// diverged or produced a wrong result (a true positive), or replayed cleanly
// (a benign rejection: a healthy writer fenced)?
//
// The reference replay is the engine's own, with ordered wake and the run's
// id policy, over the log as it stood when the writer was rejected plus the
// batch it wanted to write. When that log already diverges without the batch
// the verdict is unknown: the rejection cannot be told apart from damage
// already done.
package verdict

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/stormctl/stormctl/forensics"
	"github.com/stormctl/stormctl/internal/engine"
	"github.com/stormctl/stormctl/internal/eventlog"
	"github.com/stormctl/stormctl/internal/history"
)

// Verdict is what a judgement found: a three-state verdict.
type Verdict string

// The three verdicts.
const (
	TruePositive Verdict = "true_positive"
	Benign       Verdict = "benign"
	Unknown      Verdict = "unknown"
)

// Judgement is the verdict on one rejection, with why. **contract**
// (runs.jsonl's verdicts)
type Judgement struct {
	Actor    string    `json:"actor"`
	At       time.Time `json:"at"`
	Expected int64     `json:"expected_seq"`
	Actual   int64     `json:"actual_seq"`
	Verdict  Verdict   `json:"verdict"`
	Reason   string    `json:"reason,omitempty"`
	// Write is what a world refused a run of the published runtime (the
	// devkit engine): what a counterfactual replay admits to judge it.
	Write *RefusedWrite `json:"write,omitempty"`
	// Pending says the judgement is not made yet (Verdict unknown): the
	// storm judges its worlds' refusals once its runs have ended
	// (internal/analysis/counterfactual); an interrupted storm leaves them
	// pending, and --resume judges them.
	Pending bool `json:"pending,omitempty"`
}

// RefusedWrite is one write a world refused: the event the runtime asked
// it to create.
type RefusedWrite struct {
	Type          eventlog.Type `json:"type"`
	CorrelationID string        `json:"corr,omitempty"`
	// Data is the create's eventData and specVersion as the runtime passed
	// them ({"eventData": ..., "specVersion": ...}); nil when the history
	// did not keep them (a storm recorded before stormctl did, a batch).
	Data json.RawMessage `json:"data,omitempty"`
	// Err is the refusal's class (conflict, refused, fenced, duplicate).
	Err string `json:"err"`
}

// Input is what judging a run's rejections needs.
type Input struct {
	RunID   string
	Program engine.Program
	// Knobs are the run's condition's. The reference replay uses its id
	// policy, and its wake policy when that is deterministic (ordered,
	// engine), ordered otherwise. The fence policy and the world guard say
	// what a rejection's Actual is: the length of the log the store held
	// only when a positioned scheme fences on the whole log and no guard
	// stands in front of it; otherwise (decisions-only fences report the
	// last fenced position, a guard its own count) the log at a rejection
	// is placed by commit time (see logAt).
	engine.Knobs
	// Final is the run's final log; Ops its recorded history.
	Final []eventlog.Event
	Ops   []history.Op
	// Commits is Final joined with its commit times (the store's, or those
	// its writers observed): forensics.AnalyzeRun's RunAnalysis.Commits,
	// or forensics.CommitEvents. Required: an event missing from it has no
	// commit time, and a rejection whose verdict needs one is judged
	// unknown.
	Commits []forensics.CommitEvent
	// Check is the scenario's ledger check for a completed output.
	Check func(input, output json.RawMessage) error
}

// noGuard says the run has no world guard.
func (in Input) noGuard() bool { return in.Guard == eventlog.GuardNone }

// actualIsLength says a rejection's Actual is the length of the log the
// store held when it rejected.
func (in Input) actualIsLength() bool {
	return in.Scheme.Positioned() && in.Fence != engine.FenceDecisionsOnly && in.noGuard()
}

// refTime stamps waits the reference replay derives; it never matters for
// a verdict, since only consumption of the rejected batch is judged.
var refTime = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)

// Judge returns a verdict for every rejected fenced append of the run, in
// history order.
func Judge(in Input) []Judgement {
	ordered := slices.Clone(in.Final)
	commits := map[string]time.Time{}
	for _, e := range in.Commits {
		commits[e.ID] = e.CommitAt
	}
	if in.Scheme.Positioned() {
		slices.SortStableFunc(ordered, func(a, b eventlog.Event) int { return int(a.Seq - b.Seq) })
	} else {
		slices.SortStableFunc(ordered, func(a, b eventlog.Event) int { return strings.Compare(a.ID, b.ID) })
	}
	var input json.RawMessage
	for _, e := range ordered {
		if e.Type == eventlog.RunCreated {
			input = e.Payload
		}
	}
	memo := map[string]Judgement{} // the same batch rejected at the same log is judged once
	var out []Judgement
	for _, op := range in.Ops {
		if op.Kind != history.OpAppendFenced || op.Err != "fenced" {
			continue
		}
		v := Judgement{Actor: op.Actor, At: op.End, Expected: op.Expected, Actual: op.Actual}
		log, why := logAt(in, ordered, commits, op)
		if why != "" {
			v.Verdict, v.Reason = Unknown, why
			out = append(out, v)
			continue
		}
		key := memoKey(len(log), op)
		if m, seen := memo[key]; seen {
			v.Verdict, v.Reason = m.Verdict, m.Reason
		} else {
			v.Verdict, v.Reason = judgeBatch(in, input, log, op)
			memo[key] = v
		}
		out = append(out, v)
	}
	return out
}

// memoKey identifies a rejected batch at a log length.
func memoKey(n int, op history.Op) string {
	b, _ := json.Marshal(op.Wrote)
	return fmt.Sprintf("%d/%s", n, b)
}

// logAt is the log as it stood when op was rejected, or why that cannot be
// told:
//   - when Actual is the log's length: the first Actual events by position;
//   - else by commit time, the cutoff being op.End, when the rejection
//     returned to its writer (an upper bound: it includes the writer's own
//     follow-up read), with the commit times of Final (the store's, or those
//     its writers observed) read against the writer's clock: one clock when
//     the store runs on this machine, two with a remote server. A positioned
//     log is a prefix by seq: its events up to the first committed after the
//     cutoff, and under a decisions-only fence at least the first Actual
//     (a fenced position the store had already passed). An unpositioned
//     log is every event committed before the cutoff, by id.
//
// An event the cutoff must place but that has no commit time makes it
// unknown.
func logAt(in Input, ordered []eventlog.Event, commits map[string]time.Time, op history.Op) ([]eventlog.Event, string) {
	if in.actualIsLength() {
		if op.Actual > int64(len(ordered)) {
			return nil, fmt.Sprintf("the final log holds fewer than the %d events the store had", op.Actual)
		}
		return slices.Clone(ordered[:op.Actual]), ""
	}
	var floor int64 // positions the store had passed for certain
	if in.Fence == engine.FenceDecisionsOnly && in.noGuard() {
		floor = op.Actual
	}
	var log []eventlog.Event
	unplaced := 0
	for _, e := range ordered {
		t := commits[e.ID]
		switch {
		case in.Scheme.Positioned() && e.Seq <= floor:
			log = append(log, e)
			continue
		case t.IsZero():
			unplaced++
		case t.Before(op.End):
			log = append(log, e)
			continue
		}
		if in.Scheme.Positioned() {
			break // the prefix ends at the first event not placed before the cutoff
		}
	}
	if unplaced > 0 {
		return nil, fmt.Sprintf("%d events have no commit time: the log at the rejection cannot be told", unplaced)
	}
	return log, ""
}

// rejectedPrefix starts the ids given to a rejected batch's events when it
// is replayed on top of the log.
const rejectedPrefix = "rejected-"

// judgeBatch replays log plus the rejected batch.
func judgeBatch(in Input, input json.RawMessage, log []eventlog.Event, op history.Op) (Verdict, string) {
	hyp := log
	for i, w := range op.Wrote {
		hyp = append(hyp, eventlog.Event{
			RunID: in.RunID, ID: rejectedPrefix + strconv.Itoa(i), Seq: int64(len(log) + i + 1),
			Type: w.Type, CorrelationID: w.CorrelationID, Token: w.Token, Dedup: w.Dedup, Payload: w.Payload,
		})
	}
	wake := in.Wake
	if wake != engine.WakeEngine {
		wake = engine.WakeOrdered
	}
	mode := in.Mode()
	mode.Wake = wake
	out := engine.Replay(in.Program, in.RunID, hyp, mode, refTime)
	switch {
	case out.Divergence != nil && out.Divergence.Index < len(log):
		return Unknown, "the log diverges without the batch: " + out.Divergence.Msg
	case out.Divergence != nil:
		return TruePositive, "accepted, the batch would make the log diverge: " + out.Divergence.Msg
	case out.Terminal != nil && !strings.HasPrefix(out.Terminal.ID, rejectedPrefix):
		// The run had ended when the writer was rejected: accepted, the
		// batch would follow the terminal event, which no replay reads past.
		// A wrong result is the log's own damage, not the batch's.
		if err := wrongResult(in, input, *out.Terminal); err != nil {
			return Unknown, "the run had already ended, with a wrong result: " + err.Error()
		}
		return Benign, "the run had already ended: accepted, the batch would follow its terminal event, which no replay reads past"
	case out.Terminal != nil:
		if err := wrongResult(in, input, *out.Terminal); err != nil {
			return TruePositive, "accepted, the run would complete with a wrong result: " + err.Error()
		}
	}
	return Benign, ""
}

// wrongResult is the scenario's ledger check of a run_completed terminal
// (nil for other terminals, or without a check).
func wrongResult(in Input, input json.RawMessage, terminal eventlog.Event) error {
	if terminal.Type != eventlog.RunCompleted || in.Check == nil {
		return nil
	}
	got, err := engine.Output(terminal)
	if err == nil {
		err = in.Check(input, got)
	}
	return err
}

// Split counts judgements by verdict.
func Split(vs []Judgement) (truePositives, benign, unknown int) {
	for _, v := range vs {
		switch v.Verdict {
		case TruePositive:
			truePositives++
		case Benign:
			benign++
		default:
			unknown++
		}
	}
	return truePositives, benign, unknown
}
