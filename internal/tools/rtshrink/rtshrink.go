package rtshrink

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/stormctl/stormctl/internal/engines/rerun"
	"github.com/stormctl/stormctl/internal/tools/ddmin"
	"github.com/stormctl/stormctl/internal/tools/replay"
)

// CorruptedEventLog is the error code core fails a run with when its
// replay diverged past the recovery budget.
const CorruptedEventLog = "CORRUPTED_EVENT_LOG"

// DefaultBudget bounds a shrink through the runtime: a replay of one
// invocation takes a tenth of a second to seconds on two cores.
const DefaultBudget = 3 * time.Minute

// ErrNotReproduced matches a run whose recorded failure its runtime does
// not raise again from the recorded reads: nothing to shrink.
var ErrNotReproduced = errors.New("the recorded failure does not reproduce")

// Signature is what a candidate's failure must keep to count as the
// recorded one.
type Signature struct {
	// Code is the run_failed's errorCode (CORRUPTED_EVENT_LOG).
	Code string `json:"code"`
	// EventType is the type of the event the divergence names ("latest
	// divergent event was …"), "" when it names none in the log.
	EventType string `json:"event_type,omitempty"`
	// Shape is the divergence's first line with ids, quoted text and
	// numbers masked.
	Shape string `json:"shape"`
	// Message is core's message, word for word.
	Message string `json:"message"`
}

// Headline is the message's first line (core's own text; the rest is its
// "Learn more" links).
func (s Signature) Headline() string { return firstLine(s.Message) }

// same says two failures are the same divergence.
func (s Signature) same(o Signature) bool {
	return s.Code == o.Code && s.EventType == o.EventType && s.Shape == o.Shape
}

// Size is how big a schedule is.
type Size struct {
	Invocations int `json:"invocations"`
	Pages       int `json:"pages"`
	Events      int `json:"events"`
	Creates     int `json:"creates"`
}

// Case is a shrunk schedule: the failing invocation's delivery against a
// store that holds one log.
type Case struct {
	RunID string `json:"runId"`
	// Created is the run's run_created as the package listed it.
	Created json.RawMessage `json:"created"`
	// StartedAt is the startedAt the run_started create was answered
	// with (ms since the epoch).
	StartedAt float64 `json:"startedAt"`
	// Clock is the runtime's Date.now during the delivery (ms).
	Clock float64 `json:"clock"`
	// Recovery is the replayDivergence count the delivery carries.
	Recovery int `json:"recovery"`
	// Log is what the store holds, in its list order, each event as the
	// package listed it.
	Log []json.RawMessage `json:"log"`
}

// Phase is one step of the search and what it kept.
type Phase struct {
	Name   string `json:"name"`
	Before int    `json:"before"`
	After  int    `json:"after"`
	Note   string `json:"note,omitempty"`
}

// Result is a shrink's outcome.
type Result struct {
	Run    string `json:"run"`
	Actor  string `json:"actor"`
	Before Size   `json:"before"`
	After  Size   `json:"after"`
	// Failure is the shrunk case's failure, which has the recorded one's
	// signature.
	Failure Signature `json:"failure"`
	Phases  []Phase   `json:"phases"`
	// Case is the minimal schedule; nil when the failure needs the
	// recorded paging (the pages phase kept the pages).
	Case *Case `json:"case,omitempty"`
	// Tests counts the candidates replayed, Elapsed the time taken.
	Tests   int           `json:"tests"`
	Elapsed time.Duration `json:"elapsed_ns"`
	// Minimal is false when the budget ran out first.
	Minimal bool `json:"minimal"`
}

// Progress is reported after each candidate.
type Progress struct {
	Phase string
	Tests int
	Left  int
}

// Options bound and observe a shrink.
type Options struct {
	Budget   time.Duration
	Progress func(Progress)
	// Confirm is how many times the recorded schedule is replayed before
	// shrinking (2 when zero): every one must fail the same way.
	Confirm int
}

// Shrink delta-debugs f's recorded schedule through rt.
func Shrink(ctx context.Context, rt rerun.Runtime, f replay.Failing, opts Options) (Result, error) {
	start := time.Now()
	budget := opts.Budget
	if budget <= 0 {
		budget = DefaultBudget
	}
	bctx, cancel := context.WithTimeout(ctx, budget)
	defer cancel()
	s := &search{rt: rt, progress: opts.Progress}
	res := Result{Run: f.Script.RunID, Actor: f.Actor, Minimal: true}
	res.Before = sizeOf(f.Script, f.Invocations)

	// The recorded failure, as the run's record says it (core's message):
	// the replays must raise it again, not any CORRUPTED_EVENT_LOG.
	var recorded *Signature
	if f.Recorded != "" {
		r := signature(CorruptedEventLog, f.Recorded, f.Script)
		recorded = &r
	}
	confirm := max(opts.Confirm, 2)
	var want Signature
	for i := range confirm {
		sig, ok, err := s.run(bctx, f.Script, "confirm")
		if err != nil {
			return res, err
		}
		if !ok {
			return res, fmt.Errorf("run %s: %w: %s's replay through the runtime %s (replay %d of %d)", f.Script.RunID, ErrNotReproduced, f.Actor, sig.Message, i+1, confirm)
		}
		if i == 0 && recorded != nil && !sig.same(*recorded) {
			return res, fmt.Errorf("run %s: %w: %s's replay fails with %q, the run recorded %q", f.Script.RunID, ErrNotReproduced, f.Actor, firstLine(sig.Message), firstLine(recorded.Message))
		}
		if i > 0 && !sig.same(want) {
			return res, fmt.Errorf("run %s: %w: %s's replays fail differently (%q, then %q): the runtime is not deterministic on these reads", f.Script.RunID, ErrNotReproduced, f.Actor, want.Shape, sig.Shape)
		}
		want = sig
	}
	res.Failure = want
	res.Phases = append(res.Phases, Phase{Name: "invocations", Before: f.Invocations, After: 1,
		Note: "a replay serves recorded reads: " + f.Actor + " needs no other invocation"})

	// pages: one read of the log it saw, from a store that holds it.
	c, err := collapse(f.Script)
	if err != nil {
		return res, err
	}
	pages := countLists(f.Script)
	sig, ok, err := s.run(bctx, c.invocation(), "pages")
	if err != nil {
		return res, err
	}
	if !ok || !sig.same(want) {
		res.Phases = append(res.Phases, Phase{Name: "pages", Before: pages, After: pages,
			Note: "served as one log (one read, the clock at its end, its other creates accepted) the runtime " + sig.Message + ": the case needs what the recorded invocation was served, which is not written"})
		res.After = res.Before
		res.After.Invocations = 1
		res.Minimal = false
		res.Tests, res.Elapsed = s.tests, time.Since(start)
		return res, nil
	}
	res.Phases = append(res.Phases, Phase{Name: "pages", Before: pages, After: 1})
	res.Phases = append(res.Phases, Phase{Name: "creates", Before: countCreates(f.Script), After: 1,
		Note: "run_started answered as recorded; every other create accepted as the store would (a slot run's at the next slot)"})

	// events: ddmin over the log, among well-formed logs when the whole
	// one is (a log that is not keeps every candidate: the rule would
	// remove the very defect).
	n := len(c.Log)
	shape, err := shapeOf(c)
	if err != nil {
		return res, err
	}
	all := make([]int, n)
	for i := range all {
		all[i] = i
	}
	rule := shape.wellFormed(all)
	if !rule {
		res.Phases = append(res.Phases, Phase{Name: "well-formed", Before: n, After: n,
			Note: "the log itself is not well-formed (an entity's event before any creation of it): shrunk without that rule"})
	}
	dctx, stop := context.WithCancel(bctx)
	defer stop()
	var replayErr error
	keep := ddmin.Min(dctx, n, func(keep []int) bool {
		if rule && !shape.wellFormed(keep) {
			return false
		}
		cand := c.keep(keep)
		sig, ok, err := s.run(dctx, cand.invocation(), "events")
		if s.progress != nil {
			s.progress(Progress{Phase: "events", Tests: s.tests, Left: len(keep)})
		}
		if err != nil && dctx.Err() == nil {
			replayErr = err
			stop()
		}
		return err == nil && ok && sig.same(want)
	})
	switch {
	case ctx.Err() != nil:
		return res, ctx.Err()
	case replayErr != nil:
		return res, replayErr
	case bctx.Err() != nil:
		res.Minimal = false
	}
	shrunk := c.keep(keep)
	// The shrunk case must fail the same way again: its message names its
	// own events, and it is what gets written.
	sig, ok, err = s.run(ctx, shrunk.invocation(), "final")
	switch {
	case err != nil:
		return res, err
	case !ok || !sig.same(want):
		return res, fmt.Errorf("run %s: %w: the shrunk case of %d events, replayed again, %s", f.Script.RunID, ErrNotReproduced, len(keep), sig.Message)
	}
	res.Failure = sig
	res.Phases = append(res.Phases, Phase{Name: "events", Before: n, After: len(keep)})
	res.Case = &shrunk
	res.After = Size{Invocations: 1, Pages: 1, Events: len(keep), Creates: 1}
	res.Tests, res.Elapsed = s.tests, time.Since(start)
	return res, nil
}

// search replays candidates and counts them.
type search struct {
	rt       rerun.Runtime
	tests    int
	progress func(Progress)
}

// run replays inv once and says whether core failed the run with
// CORRUPTED_EVENT_LOG, with the failure's signature (its Message says
// what happened otherwise).
func (s *search) run(ctx context.Context, inv rerun.RuntimeInvocation, phase string) (Signature, bool, error) {
	s.tests++
	res, err := s.rt.Replay(ctx, inv)
	if err != nil {
		return Signature{}, false, fmt.Errorf("shrink %s (%s): %w", inv.RunID, phase, err)
	}
	if res.Failed == nil || res.Failed.Code != CorruptedEventLog {
		return Signature{Message: outcome(res)}, false, nil
	}
	return signature(res.Failed.Code, res.Failed.Message, inv), true, nil
}

// outcome says what a replay that did not fail with CORRUPTED_EVENT_LOG
// did instead.
func outcome(res rerun.RuntimeResult) string {
	switch {
	case res.Failed != nil:
		return fmt.Sprintf("failed the run with %s: %s", res.Failed.Code, firstLine(res.Failed.Message))
	case res.Deviation != nil:
		return fmt.Sprintf("left the recorded operations at op %d (%s, recorded %s)", res.Deviation.Op, res.Deviation.Replayed, res.Deviation.Recorded)
	case res.Divergence != nil:
		return "diverged and queued a recovery: " + firstLine(res.Divergence.Message)
	case res.Status >= 400:
		return fmt.Sprintf("answered %d: %s", res.Status, firstLine(res.Body))
	}
	return "did not fail"
}

var (
	// masks blank what differs between two raises of one divergence:
	// quoted values, ids (a prefix and a ULID or slot body; event type
	// names such as wait_completed stay), numbers.
	masks = []*regexp.Regexp{
		regexp.MustCompile(`"[^"]*"`),
		regexp.MustCompile(`\b(wrun|evnt|wevt|step|wait|hook|strm|msg)_[0-9A-Za-z]{10,}\b`),
		regexp.MustCompile(`\b\d+\b`),
	}
)

// signature is a failure's signature, the divergent event's type looked
// up in the log inv serves.
func signature(code, msg string, inv rerun.RuntimeInvocation) Signature {
	sig := Signature{Code: code, Message: msg}
	if id := rerun.DivergentEvent(msg); id != "" {
		sig.EventType = typeOf(inv, id)
	}
	line := firstLine(msg)
	if i := strings.Index(msg, "Last divergence:"); i >= 0 {
		line = firstLine(msg[i:])
	}
	for _, re := range masks {
		line = re.ReplaceAllString(line, "_")
	}
	sig.Shape = line
	return sig
}

// typeOf is the type of event id among what inv serves.
func typeOf(inv rerun.RuntimeInvocation, id string) string {
	for _, op := range inv.Ops {
		evs := op.Events
		if op.Snapshot != nil {
			evs = append(slices.Clone(evs), op.Snapshot.Events...)
		}
		for _, raw := range evs {
			var head struct {
				EventID   string `json:"eventId"`
				EventType string `json:"eventType"`
			}
			if json.Unmarshal(raw, &head) == nil && head.EventID == id {
				return head.EventType
			}
		}
	}
	return ""
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}
