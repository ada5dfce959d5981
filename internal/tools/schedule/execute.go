package schedule

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/stormctl/stormctl/forensics"
	"github.com/stormctl/stormctl/internal/base/knob"
	"github.com/stormctl/stormctl/internal/engine"
	"github.com/stormctl/stormctl/internal/engines/builtinengines"
	"github.com/stormctl/stormctl/internal/eventlog"
	"github.com/stormctl/stormctl/internal/history"
)

// Origin is the time a schedule's milliseconds count from.
var Origin = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// At is the time of ms milliseconds into a schedule.
func At(ms int) time.Time { return Origin.Add(time.Duration(ms) * time.Millisecond) }

// PageLimit is the page size every list of a schedule asked for.
const PageLimit = 100

// Run is an executed schedule: the run's settings, its final log and its
// history as a storm would have recorded them, and the exact events each
// list returned.
type Run struct {
	RunID   string
	Knobs   engine.Knobs
	Outcome history.Outcome
	Detail  string
	// Ended is the run's end (zero when the schedule sets none), Quiet its
	// quiet period; Steps the step functions of its steps line.
	Ended time.Time
	Quiet time.Duration
	Steps map[string]engine.StepFunc
	Final []eventlog.Event
	Ops   []history.Op
	// Pages holds the events each list op of Ops returned, in key order.
	Pages map[int][]eventlog.Event
	// Derived holds the decisions each write item derived (by index into
	// the schedule's items), before any was committed.
	Derived map[int][]eventlog.Draft
}

// DecisionKey is what a write's Keys name a decision by.
func DecisionKey(t eventlog.Type, corr string) string { return string(t) + "/" + corr }

// Options say how to execute a schedule.
type Options struct {
	// Program is the workflow program every write replays.
	Program engine.Program
	// Lenient commits and reads what there is: a write whose view
	// diverges commits nothing, one that derives fewer decisions than
	// labels commits those it derives, a read or a fact of a label never
	// written drops it. Strictly each is an error.
	Lenient bool
	// Memo, when set, remembers what each view derived, for executions of
	// one schedule's variants (the program, run and policies the same):
	// a write whose writer's view and time are those of an earlier one
	// is not replayed again. The program must replay deterministically
	// (wake engine or ordered).
	Memo *Memo
}

// Memo remembers derivations across executions (Options.Memo). Its zero
// value is ready; it is safe for concurrent use.
type Memo struct {
	mu   sync.Mutex
	outs map[[sha256.Size]byte]engine.Outcome
}

// derive replays view at now through prog, or recalls what it derived.
func (m *Memo) derive(prog engine.Program, runID string, view []eventlog.Event, k engine.Knobs, now time.Time) engine.Outcome {
	if m == nil {
		return engine.Replay(prog, runID, view, k.Mode(), now)
	}
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%d\x00", runID, now.UnixNano())
	for _, e := range view {
		fmt.Fprintf(h, "%s\x00%s\x00%s\x00%s\x00%s\x00%d\x00", e.ID, e.Type, e.CorrelationID, e.Token, e.Dedup, e.Seq)
		h.Write(e.Payload)
		h.Write([]byte{0})
	}
	var key [sha256.Size]byte
	h.Sum(key[:0])
	m.mu.Lock()
	out, ok := m.outs[key]
	m.mu.Unlock()
	if ok {
		return out
	}
	out = engine.Replay(prog, runID, view, k.Mode(), now)
	m.mu.Lock()
	if m.outs == nil {
		m.outs = map[[sha256.Size]byte]engine.Outcome{}
	}
	m.outs[key] = out
	m.mu.Unlock()
	return out
}

// Execute re-executes the schedule.
func (s *Schedule) Execute(opts Options) (*Run, error) { return s.execute(opts, nil) }

// execute is Execute; viewed, when set, is told the view each write item
// (by index into the schedule's items) derived from, with the run as
// recorded up to it.
func (s *Schedule) execute(opts Options, viewed func(at int, run *Run, view []eventlog.Event)) (*Run, error) {
	knobs, err := s.knobs()
	if err != nil {
		return nil, err
	}
	x := &exec{s: s, opts: opts, events: map[string]eventlog.Event{}, cmp: forensics.KeyCompare(s.Scheme), viewed: viewed,
		run: &Run{RunID: or(s.RunID, DefaultRun), Knobs: knobs, Outcome: s.Outcome, Detail: s.Detail,
			Pages: map[int][]eventlog.Event{}, Derived: map[int][]eventlog.Draft{}}}
	x.held = forensics.NewHolding(func(i int) []string {
		ids := make([]string, len(x.run.Pages[i]))
		for k, e := range x.run.Pages[i] {
			ids[k] = e.ID
		}
		return ids
	})
	if s.HasEnded {
		x.run.Ended = At(s.Ended)
	}
	if s.HasQuiet {
		x.run.Quiet = time.Duration(s.Quiet) * time.Millisecond
	}
	if s.Steps != nil {
		x.run.Steps = map[string]engine.StepFunc{}
		for _, st := range s.Steps {
			took := time.Duration(st.MS) * time.Millisecond
			x.run.Steps[st.Name] = func(json.RawMessage) (engine.StepOutcome, error) {
				return engine.StepOutcome{Result: "ok", Took: took}, nil
			}
		}
	}
	for i, it := range s.Items {
		x.at = i
		if err := x.item(it); err != nil {
			return nil, fmt.Errorf("item %d (%s %s): %w", i+1, it.Kind, it.Actor, err)
		}
	}
	return x.run, nil
}

// knobs are the schedule's condition: main's policy with its ids (default
// positional), its wake (default ordered) and its knob lines.
func (s *Schedule) knobs() (engine.Knobs, error) {
	k := engine.Knobs{Scheme: s.Scheme, Policy: engine.DefaultPolicy()}
	k.IDs, k.Wake = engine.IDPolicy(or(string(s.IDs), string(engine.IDsPositional))), engine.WakePolicy(or(string(s.Wake), string(engine.WakeOrdered)))
	for _, kv := range s.Knobs {
		key, v, _ := strings.Cut(kv, "=")
		i := slices.IndexFunc(engine.KnobTable(), func(kn knob.Knob[engine.Knobs]) bool { return kn.Name == key })
		if i < 0 {
			return k, fmt.Errorf("knob %q: no such knob", kv)
		}
		if err := engine.KnobTable()[i].Set(&k, v); err != nil {
			return k, fmt.Errorf("knob %q: %w", kv, err)
		}
	}
	if k.Engine != "" && !builtinengines.Traits(k.Engine).Model {
		return k, fmt.Errorf("knob engine=%s: a schedule executes through the model only", k.Engine)
	}
	return k, nil
}

// exec is one execution of a schedule.
type exec struct {
	s      *Schedule
	opts   Options
	run    *Run
	events map[string]eventlog.Event
	cmp    func(a, b eventlog.Event) int
	// held is what every actor holds, kept up with run.Ops as they are
	// recorded (the pages of run.Pages never change once recorded).
	held *forensics.Holding[string]
	// at is the index of the item being executed.
	at int
	// viewed, when set, is told each write's view (execute).
	viewed func(at int, run *Run, view []eventlog.Event)
}

func (x *exec) item(it Item) error {
	switch it.Kind {
	case KindStart:
		input := it.Payload
		if input == nil {
			input = json.RawMessage(`null`)
		}
		x.commit(or(it.Actor, "starter"), it.Implicit, []eventlog.Event{{ID: it.Label, Type: eventlog.RunCreated, Payload: input}}, it.At, it.delays())
	case KindList:
		return x.list(it)
	case KindListErr:
		x.run.Ops = append(x.run.Ops, history.Op{Kind: history.OpList, Actor: it.Actor, RunID: x.run.RunID, Start: At(it.At), End: At(it.End),
			After: x.cursor(it.After), Limit: PageLimit, Err: it.Err, ErrText: it.Err, Slot: it.Slot, Above: it.Above})
	case KindWrite:
		return x.write(it)
	case KindFact:
		return x.fact(it)
	case KindFail:
		e := eventlog.Event{ID: it.Label, Type: eventlog.RunFailed, Payload: engine.FailureDraft(engine.CodeCorrupted, x.run.Detail).Payload}
		x.commit(it.Actor, it.Implicit, []eventlog.Event{e}, it.At, it.delays())
	case KindInflight:
		of, ok := x.events[it.Of]
		if !ok {
			return fmt.Errorf("inflight of %q, which is not written", it.Of)
		}
		op := history.Op{Kind: history.OpAppend, Actor: it.Actor, RunID: x.run.RunID, Start: At(it.At),
			Err: it.Err, ErrText: it.Err, Wrote: []history.OpEvent{{Type: it.Type, CorrelationID: of.CorrelationID}}}
		if it.HasEnd {
			op.End = At(it.End)
		}
		x.run.Ops = append(x.run.Ops, op)
	}
	return nil
}

// delays returns the commit delay of the i-th event an item writes.
func (it Item) delays() func(i int) int {
	return func(i int) int {
		if len(it.Commit) == 0 {
			return 1
		}
		return it.Commit[min(i, len(it.Commit)-1)]
	}
}

// seqOf is a label's number (e03: 3).
func seqOf(label string) int64 {
	n, _ := strconv.ParseInt(strings.TrimLeft(label, "abcdefghijklmnopqrstuvwxyz"), 10, 64)
	return n
}

// commit appends evs, one append each, minted 1 ms apart from t and
// committed d(i) ms after their mint; implicit marks each append as the
// store's, inside another call of actor (history.Op.Implicit).
func (x *exec) commit(actor string, implicit bool, evs []eventlog.Event, t int, d func(int) int) {
	for i, e := range evs {
		mint, done := At(t+i), At(t+i+d(i))
		e.RunID, e.MintedAt, e.CommittedAt = x.run.RunID, mint, done
		if x.s.Scheme.Positioned() {
			e.Seq = seqOf(e.ID)
		}
		x.events[e.ID] = e
		x.run.Final = append(x.run.Final, e)
		x.run.Ops = append(x.run.Ops, history.Op{Kind: history.OpAppend, Actor: actor, RunID: x.run.RunID, Start: mint, End: done, Implicit: implicit,
			Wrote: []history.OpEvent{{Type: e.Type, CorrelationID: e.CorrelationID, ID: e.ID, Seq: e.Seq, MintedAt: mint, CommittedAt: done}}})
	}
}

func (x *exec) cursor(label string) eventlog.Cursor {
	if label == "" {
		return eventlog.Cursor{}
	}
	if x.s.Scheme.Positioned() {
		return eventlog.Cursor{Seq: seqOf(label)}
	}
	return eventlog.Cursor{ID: label}
}

func (x *exec) list(it Item) error {
	op := history.Op{Kind: history.OpList, Actor: it.Actor, RunID: x.run.RunID, Start: At(it.At), End: At(it.End), After: x.cursor(it.After), Limit: PageLimit,
		Snapshot: it.Snapshot}
	var page eventlog.Page
	for _, l := range it.Labels {
		e, ok := x.events[l]
		switch {
		case ok:
		case x.opts.Lenient:
			continue
		default:
			return fmt.Errorf("list reads %s, which is not written yet", l)
		}
		page.Events = append(page.Events, e)
	}
	page.More = it.More
	op.Read = history.Summarize(page)
	served := slices.Clone(page.Events)
	slices.SortStableFunc(served, x.cmp)
	x.run.Pages[len(x.run.Ops)] = served
	x.run.Ops = append(x.run.Ops, op)
	return nil
}

// view is what actor holds so far, in key order: its finished loads, as
// forensics.Held builds them (a load from the start replaces what it
// held, a load from a cursor adds its events, an event read twice is held
// once), as explain rebuilds a writer's view. The Holding takes only the
// ops recorded since the last view: each load is taken once per
// execution, not once per write.
func (x *exec) view(actor string) []eventlog.Event {
	x.held.Add(x.run.Ops)
	h := x.held.Held(actor)
	log := make([]eventlog.Event, len(h.Keys))
	for k, id := range h.Keys {
		log[k] = x.events[id]
	}
	slices.SortFunc(log, x.cmp)
	return log
}

func (x *exec) write(it Item) error {
	from := it.Actor
	if it.View != "" {
		from = it.View
	}
	view := x.view(from)
	if x.viewed != nil {
		x.viewed(x.at, x.run, view)
	}
	out := x.opts.Memo.derive(x.opts.Program, x.run.RunID, view, x.run.Knobs, At(it.At))
	if out.Divergence != nil {
		if x.opts.Lenient {
			return nil
		}
		return fmt.Errorf("%s's view diverges: %v", from, out.Divergence)
	}
	ds := slices.Clone(out.Decisions)
	if len(it.Swap) == 2 {
		i, j := it.Swap[0], it.Swap[1]
		if i >= len(ds) || j >= len(ds) {
			return fmt.Errorf("swap %d,%d of %d decisions", i, j, len(ds))
		}
		ds[i].CorrelationID, ds[j].CorrelationID = ds[j].CorrelationID, ds[i].CorrelationID
	}
	x.run.Derived[x.at] = slices.Clone(ds)
	if len(ds) < len(it.Labels) && !x.opts.Lenient && it.Keys == nil {
		return fmt.Errorf("%s derives %d decisions, %d labels given", it.Actor, len(ds), len(it.Labels))
	}
	var evs []eventlog.Event
	var delay []int
	d := it.delays()
	for i, l := range it.Labels {
		k := i
		if i < len(it.Keys) {
			k = slices.IndexFunc(ds, func(x eventlog.Draft) bool { return DecisionKey(x.Type, x.CorrelationID) == it.Keys[i] })
		}
		if l == Skip || k < 0 || k >= len(ds) {
			continue
		}
		evs = append(evs, ds[k].Event(x.run.RunID, l, time.Time{}))
		delay = append(delay, d(i))
	}
	x.commit(it.Actor, it.Implicit, evs, it.At, func(i int) int { return delay[i] })
	return nil
}

func (x *exec) fact(it Item) error {
	of, ok := x.events[it.Of]
	if !ok {
		if x.opts.Lenient {
			return nil
		}
		return fmt.Errorf("fact of %q, which is not written", it.Of)
	}
	e := eventlog.Event{ID: it.Label, Type: it.Type, CorrelationID: of.CorrelationID, Dedup: it.Dedup, Payload: it.Payload}
	if e.Payload == nil {
		switch it.Type {
		case eventlog.StepCompleted:
			e.Payload = json.RawMessage(`{"result":"ok"}`)
		case eventlog.WaitCompleted:
			var p struct {
				ResumeAt time.Time `json:"resumeAt"`
			}
			_ = json.Unmarshal(of.Payload, &p)
			e.Payload, _ = json.Marshal(p)
		}
	}
	x.commit(it.Actor, it.Implicit, []eventlog.Event{e}, it.At, it.delays())
	return nil
}
