package explain

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/stormctl/stormctl/forensics"
	"github.com/stormctl/stormctl/internal/engine"
	"github.com/stormctl/stormctl/internal/engines/builtinengines"
	"github.com/stormctl/stormctl/internal/eventlog"
	"github.com/stormctl/stormctl/internal/history"
)

// The root-cause classes (see the package documentation).
const (
	StalePrefix = "stale-prefix"
	CursorSkip  = "cursor-skip"
	WakeOrder   = "wake-order"
	// DuplicateCreate is a world-layer finding: the world created one
	// step, wait or hook twice, breaking its own uniqueness contract.
	DuplicateCreate = "duplicate-create"
	Hole            = "hole"
	Density         = "density"
	BlockedBranch   = "blocked-branch"
	Slow            = "slow"
	// Starved is a harness finding: a run that did not end while the
	// harness's host process that ran it was saturated (an infra run,
	// never a stuck one): no evidence about the runtime or its world.
	Starved = "starved"
	Unknown = "unknown"
)

// Classes returns every class, in the order tables list them.
func Classes() []string {
	return []string{StalePrefix, CursorSkip, WakeOrder, DuplicateCreate, Hole, Density, BlockedBranch, Slow, Starved, Unknown}
}

// Explains reports whether a run with this outcome gets a class: corrupted,
// silent, gap, hole and stuck runs do; completed, failed and infra runs do
// not.
func Explains(outcome history.Outcome) bool {
	switch outcome {
	case history.Corrupted, history.Silent, history.Gap, history.Hole, history.Stuck:
		return true
	}
	return false
}

// DefaultQuiet is how long a stuck run must have written nothing before
// its end for a pending operation to count as a blocked branch.
const DefaultQuiet = 10 * time.Second

// Input is what explaining one run needs: the run's final log, its
// recorded history, and the condition's knobs and scenario program for the
// reference replay.
type Input struct {
	RunID string
	// Cell names the run's cell ("world/scenario/condition").
	Cell string
	// Outcome is the run's outcome and Detail the engine's first error
	// text or the ledger's complaint.
	Outcome history.Outcome
	Detail  string
	Program engine.Program
	// Knobs are the run's condition's: the reference replay uses its
	// scheme and id policy, and its wake policy when that is deterministic
	// (engine, ordered), ordered otherwise. Their Engine is the engine that
	// ran the run: explain has a reference replay of the model's only ("" or
	// the model); a run of another engine (the devkit engine's
	// @workflow/core) is classed from its history, final log and the
	// runtime's own error, never from the model's replay.
	engine.Knobs
	// Final is the run's final log, in any order; Ops its history.
	Final []eventlog.Event
	Ops   []history.Op
	// Ended is when the run ended (a stuck run: its timeout); Quiet the
	// silence before it that makes a pending operation a blocked branch
	// (DefaultQuiet when zero).
	Ended time.Time
	Quiet time.Duration
	// Steps are the scenario's step functions and TimerTick the unit the
	// runtime rounds wait wake-ups up to (a second when zero): with them a
	// stuck run's pending operations get the time they were due (a started
	// step's end, a wait's wake-up), so one cut by the timeout while a step
	// still worked or a timer was not yet due is not called blocked.
	Steps     map[string]engine.StepFunc
	TimerTick time.Duration
	// Harness is how busy the harness was over the run's life (the devkit
	// engine's host), nil when the engine does not say: an infra run it
	// starved is explained by it (Starved).
	Harness *history.Harness
}

// Event is an event of the final log as an explanation names it.
type Event struct {
	// Index is the event's position in the final log in scheme order.
	Index         int           `json:"index"`
	ID            string        `json:"id,omitempty"`
	Seq           int64         `json:"seq,omitempty"`
	Type          eventlog.Type `json:"type"`
	CorrelationID string        `json:"corr,omitempty"`
	// Name and Args are a step's name and arguments (step_created).
	Name string `json:"name,omitempty"`
	Args string `json:"args,omitempty"`
	// Writer is the actor whose recorded append committed it.
	Writer      string    `json:"writer,omitempty"`
	MintedAt    time.Time `json:"minted_at,omitzero"`
	CommittedAt time.Time `json:"committed_at,omitzero"`
}

// Duplicate is an entity the final log creates more than once
// (forensics.ScanCreations): the key it holds twice and its creations, in
// the order they committed (the final log's order where commit times are
// equal or unknown).
type Duplicate struct {
	Key       string  `json:"key"`
	Creations []Event `json:"creations"`
}

// Page is one page of a load.
type Page struct {
	After string    `json:"after"`
	Start time.Time `json:"start"`
	End   time.Time `json:"end"`
	N     int       `json:"n"`
	More  bool      `json:"more,omitempty"`
	// Matched says the page's reconstructed visible set has the recorded
	// count and id hash.
	Matched bool `json:"matched"`
}

// View is what a writer held before its write: the pages of its loads
// since its last load from the start (which replaced what it held; a
// load from a cursor adds to it), in order.
type View struct {
	Actor string `json:"actor"`
	Loads int    `json:"loads"`
	Pages []Page `json:"pages"`
	// N is the number of events held (an event read twice counts once);
	// Prefix says they were exactly the first N of the final log, every
	// page's events rebuilt (its count and id hash those of the final
	// log's events after its cursor, or of a reconstruction).
	N      int  `json:"n"`
	Prefix bool `json:"prefix"`
	// Reconstructed says every page's visible set was rebuilt from the
	// final log and commit times with the recorded count and hash.
	Reconstructed bool `json:"reconstructed"`
}

// Missing is an event the final log places before the write that the
// writer's view lacked.
type Missing struct {
	Event
	// Within says the event sorts inside the range the view's pages
	// covered (the view was not a prefix); otherwise it sorts after the
	// view's last cursor and before the write (it was in flight).
	Within bool `json:"within_view"`
	// Skipped says it had committed before the view's last page started
	// while a cursor had already passed it (a cursor skip).
	Skipped bool `json:"skipped,omitempty"`
	// AfterLoad is how long after the view's first page started it
	// committed (negative: before).
	AfterLoad time.Duration `json:"committed_after_load_ns"`
	// Decisive says adding this event to the view changes what a replay
	// of it derives for the offending event.
	Decisive bool `json:"decisive,omitempty"`
}

// Decision is a decision a replay derived or a writer wrote.
type Decision struct {
	Type          eventlog.Type `json:"type"`
	CorrelationID string        `json:"corr,omitempty"`
	Name          string        `json:"name,omitempty"`
	Args          string        `json:"args,omitempty"`
}

// Replay is a reference replay of the writer's view.
type Replay struct {
	Wake      engine.WakePolicy `json:"wake"`
	N         int               `json:"n"`
	Decisions []Decision        `json:"decisions,omitempty"`
	// Derives says it derives the offending event as it was written.
	Derives    bool   `json:"derives"`
	Divergence string `json:"divergence,omitempty"`
}

// Reader is a later invocation that read the offending event and
// disagreed: its replay diverged (it wrote nothing, or run_failed).
type Reader struct {
	Actor string    `json:"actor"`
	At    time.Time `json:"at"`
	N     int       `json:"n"`
	// Divergence is what its replay of its view (reference wake) raised;
	// empty for a run of an engine explain has no reference replay of (the
	// devkit engine), whose reader is the first that read the offending
	// event and wrote nothing after.
	Divergence string `json:"divergence"`
	// Failed says it wrote the run's run_failed.
	Failed bool `json:"failed,omitempty"`
	// Others counts the other invocations that read the offending event
	// and wrote nothing after it (as a diverged replay does).
	Others int `json:"others,omitempty"`
}

// Writer is the append that committed the offending event.
type Writer struct {
	Actor string    `json:"actor"`
	Start time.Time `json:"start"`
	End   time.Time `json:"end"`
	// Wrote is what its suspension wrote (its appends after its view), in
	// order.
	Wrote []Event `json:"wrote,omitempty"`
	// Implicit says the store wrote the event inside another call of the
	// writer's (history.Op.Implicit: a 5.0 package's synthetic
	// step_created in a step_started); Start and End are that call's.
	Implicit bool `json:"implicit,omitempty"`
}

// writerOf is the writer of the append at op index i, with the evidence
// line an implicit write gets ("" for none).
func (r *run) writerOf(i int) (*Writer, string) {
	op := r.in.Ops[i]
	w := &Writer{Actor: op.Actor, Start: op.Start, End: op.End, Implicit: op.Implicit}
	if !op.Implicit {
		return w, ""
	}
	call := "another call"
	for _, c := range r.in.Ops[i+1:] {
		if c.Actor == op.Actor && !c.Implicit && c.Start.Equal(op.Start) {
			if len(c.Wrote) > 0 {
				call = "its " + string(c.Wrote[0].Type)
			}
			break
		}
	}
	return w, fmt.Sprintf("the store wrote it inside %s of %s (%s to %s): an implicit write, not one of %s's own",
		call, op.Actor, clock(op.Start), clock(op.End), op.Actor)
}

// Explanation is why one run went wrong. It is JSON-friendly.
type Explanation struct {
	Run     string          `json:"run"`
	Cell    string          `json:"cell,omitempty"`
	Outcome history.Outcome `json:"outcome"`
	Class   string          `json:"class"`
	// Summary is one line: the class and what it rests on.
	Summary string `json:"summary"`
	// Offending is the event the reference replay disagreed with first
	// (or the run_completed of a silent run, the empty position of a hole
	// or gap; for a blocked branch the overdue operation it waits on, or
	// the newest fact nobody acted on).
	Offending *Event `json:"offending,omitempty"`
	// Divergence is the reference replay's complaint at Offending (for
	// duplicate-create, at DisagreesAt when set).
	Divergence string `json:"divergence,omitempty"`
	// DisagreesAt is the event the reference replay disagrees at when it
	// is not the offending one (duplicate-create: a later event of the
	// entity created twice).
	DisagreesAt *Event    `json:"disagrees_at,omitempty"`
	Writer      *Writer   `json:"writer,omitempty"`
	View        *View     `json:"view,omitempty"`
	Missing     []Missing `json:"missing,omitempty"`
	// Extra are events the view held that the final log places after the
	// write.
	Extra     []Event `json:"extra,omitempty"`
	Reference *Replay `json:"reference,omitempty"`
	Disagreed *Reader `json:"disagreed,omitempty"`
	// EngineError is the run's detail: the engine's first error text, or
	// the ledger's complaint about a silent run.
	EngineError string `json:"engine_error,omitempty"`
	// EngineNames is the event of the final log the engine's error names
	// (by its event id, or the creation of the operation whose correlation
	// id it names), when it names one, and EngineRelation how that event
	// relates to the offending one: "offending" (the same event),
	// "same-operation" (another event of its operation), "same-write"
	// (written with it after the same view), "missing" (an event that view
	// lacked), "duplicate" (the entity created twice), "downstream"
	// (written later from a view holding the offending event), "later" or
	// "earlier" (placed after or before it in the final log).
	EngineNames    *Event `json:"engine_names,omitempty"`
	EngineRelation string `json:"engine_relation,omitempty"`
	// Duplicates are the entities the final log creates more than once
	// that the class rests on (duplicate-create), each with its creations.
	Duplicates []Duplicate `json:"duplicates,omitempty"`
	// Evidence lists the facts the class rests on; MissingEvidence what
	// could not be found (always set for unknown).
	Evidence        []string `json:"evidence,omitempty"`
	MissingEvidence []string `json:"missing_evidence,omitempty"`
	// Steps is the numbered narrative.
	Steps []string `json:"steps"`
}

// refTime stamps waits the reference replays derive; waits are compared by
// duration, never by resumeAt.
var refTime = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)

// run is one run prepared for explaining: its final log in scheme order
// with commit times, and who wrote what.
type run struct {
	in      Input
	ordered []eventlog.Event
	commit  map[string]time.Time // event id -> when it was visible for sure
	// commitLo is the earliest observation of each event's commit.
	commitLo map[string]time.Time
	index    map[string]int // event id -> position in ordered
	writer   map[string]int // event id -> index of the op that committed it
	wake     engine.WakePolicy
	// reference says explain has a reference replay of the run's engine:
	// the model's ("" or the model). A run of any other engine
	// (the devkit engine's @workflow/core) is classed from its recorded
	// evidence only (runtimeDivergence), never from the model's replay.
	// prepare decides it once; everything that would replay reads it.
	reference bool
	cmp       func(a, b eventlog.Event) int
	// dupNote is the evidence line on duplicate creations a divergence's
	// class does not rest on ("" when the log has none).
	dupNote string
	// hashes are the running id hashes of ordered (rangeHash), built on
	// first use.
	hashes []uint64
	// pages are the pages rebuilt so far (page), by op index.
	pages map[int]viewPage
}

func prepare(in Input) *run {
	r := &run{in: in, commit: map[string]time.Time{}, commitLo: map[string]time.Time{}, index: map[string]int{}, writer: map[string]int{}}
	r.cmp = forensics.KeyCompare(in.Scheme)
	r.ordered = slices.Clone(in.Final)
	slices.SortStableFunc(r.ordered, r.cmp)
	// An event became visible between two observations of its commit:
	// the store's own time (or the world's) and the time its writer saw
	// the commit return. They can lie far apart: a database may stamp a
	// transaction's commit when its last statement ended rather than when
	// it committed (postgres's pg_xact_commit_timestamp in a transaction
	// that idles before COMMIT, as the postgres world's latency window
	// does). Visibility is bracketed by both: commitLo and commit (the
	// later one, shown in narratives as "committed at").
	writer := forensics.CommitTimes(in.Ops)
	for _, e := range in.Final {
		lo, hi := e.CommittedAt, e.CommittedAt
		if w, ok := writer[e.ID]; ok {
			if lo.IsZero() || w.Before(lo) {
				lo = w
			}
			if w.After(hi) {
				hi = w
			}
		}
		if !hi.IsZero() {
			r.commit[e.ID], r.commitLo[e.ID] = hi, lo
		}
	}
	for i, e := range r.ordered {
		if _, dup := r.index[e.ID]; !dup && e.ID != "" {
			r.index[e.ID] = i
		}
	}
	for i, op := range in.Ops {
		if op.Kind != history.OpAppend && op.Kind != history.OpAppendFenced && op.Kind != history.OpSeal {
			continue
		}
		for _, w := range op.Wrote {
			if w.ID != "" {
				if _, seen := r.writer[w.ID]; !seen {
					r.writer[w.ID] = i
				}
			}
		}
	}
	r.reference = in.Engine == "" || builtinengines.Traits(in.Engine).Model
	r.wake = in.Wake.Canonical()
	if r.wake != engine.WakeEngine && r.wake != engine.WakeOrdered {
		r.wake = engine.WakeOrdered
	}
	return r
}

// event describes the final log's event at position i.
func (r *run) event(i int) Event {
	e := r.ordered[i]
	out := Event{Index: i, ID: e.ID, Seq: e.Seq, Type: e.Type, CorrelationID: e.CorrelationID,
		MintedAt: e.MintedAt, CommittedAt: r.commit[e.ID]}
	out.Name, out.Args = step(e.Type, e.Payload)
	if op, ok := r.writer[e.ID]; ok {
		out.Writer = r.in.Ops[op].Actor
	}
	return out
}

// step is a step_created payload's step name and compact arguments.
func step(t eventlog.Type, payload json.RawMessage) (name, args string) {
	if t != eventlog.StepCreated {
		return "", ""
	}
	var p struct {
		Name string          `json:"name"`
		Args json.RawMessage `json:"args"`
		// StepName is the real runtime's name of the step (the devkit
		// engine's logs: "step//./workflows/storm//settle"), whose
		// arguments are serialized in its input and not shown here.
		StepName string `json:"stepName"`
	}
	_ = json.Unmarshal(payload, &p)
	var b bytes.Buffer
	if json.Compact(&b, p.Args) == nil {
		args = b.String()
	}
	if p.Name == "" {
		p.Name = p.StepName
	}
	return p.Name, args
}

// Classify explains one run. It never fails: what it cannot show makes the
// class unknown, with the missing evidence named. Runs whose outcome
// Explains rejects get an explanation with an empty class.
func Classify(in Input) (ex Explanation) {
	ex = Explanation{Run: in.RunID, Cell: in.Cell, Outcome: in.Outcome, EngineError: in.Detail}
	defer func() {
		// A malformed history must never take a storm down: whatever
		// panics is an unknown with the reason (the fuzz test holds
		// classify itself to never panicking).
		if p := recover(); p != nil {
			ex.Class = Unknown
			ex.MissingEvidence = append(ex.MissingEvidence, "the explainer failed on this history: "+panicText(p))
		}
		finish(&ex)
	}()
	classify(in, &ex)
	return ex
}

// classify sets ex's class and evidence.
func classify(in Input, ex *Explanation) {
	if in.Outcome == history.Infra && in.Harness.WasStarved() {
		starved(in.Harness, ex)
		return
	}
	if !Explains(in.Outcome) {
		return
	}
	r := prepare(in)
	switch {
	case in.Outcome == history.Hole || (in.Outcome == history.Stuck && in.Scheme == eventlog.SchemeSlot && r.firstGap() > 0):
		// A corrupted or silent slot run with a hole left in its log is
		// still explained by its divergence: the hole did not stop it.
		r.hole(ex)
	case in.Outcome == history.Gap:
		r.density(ex)
	case in.Outcome == history.Stuck:
		r.stuck(ex)
	case !r.reference:
		r.runtimeDivergence(ex)
		r.noteDuplicates(ex)
		r.link(ex)
	default:
		r.divergence(ex)
		r.noteDuplicates(ex)
		r.link(ex)
	}
}

func panicText(p any) string {
	if err, ok := p.(error); ok {
		return err.Error()
	}
	if s, ok := p.(string); ok {
		return s
	}
	b, _ := json.Marshal(p)
	return string(b)
}
