package shrink

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/stormctl/stormctl/forensics"
	"github.com/stormctl/stormctl/internal/engine"
	"github.com/stormctl/stormctl/internal/eventlog"
	"github.com/stormctl/stormctl/internal/history"
	"github.com/stormctl/stormctl/internal/tools/replay"
	"github.com/stormctl/stormctl/internal/tools/schedule"
)

// Input is a recorded run to shrink: what a replay of it needs, and its
// scenario's name for the schedule's scenario line.
type Input struct {
	replay.Input
	Scenario string
}

// ErrUnshrinkable matches every *UnshrinkableError.
var ErrUnshrinkable = errors.New("run cannot be shrunk")

// UnshrinkableError says why a run cannot be shrunk.
type UnshrinkableError struct {
	RunID  string
	Reason string
}

func (e *UnshrinkableError) Error() string {
	return fmt.Sprintf("run %s cannot be shrunk: %s", e.RunID, e.Reason)
}

// Is makes errors.Is(err, ErrUnshrinkable) true.
func (e *UnshrinkableError) Is(target error) bool { return target == ErrUnshrinkable }

// unshrinkable says why run cannot be shrunk.
func unshrinkable(run, format string, a ...any) error {
	return &UnshrinkableError{RunID: run, Reason: fmt.Sprintf(format, a...)}
}

// recorded is a run's recorded interleaving as a schedule, with its
// failing invocation.
type recorded struct {
	sched *schedule.Schedule
	// failing is the first invocation that wrote the run's run_failed.
	failing string
}

// fromRecord writes a recorded run as a schedule: its events labelled in
// key order, each invocation's pages (as in.Reads rebuilds them) as list
// items, its decisions as write items (a decision not committed as "-"),
// its run_failed as a fail item, and every fact (of a step worker, a hook
// sender, or a wait an invocation completed) as a fact item with its
// payload; in the recorded order, moved only where a read would come
// before what it read.
func fromRecord(in Input) (*recorded, error) {
	r := &builder{in: in, label: map[string]string{}, created: map[string]string{}, cmp: forensics.KeyCompare(in.Knobs.Scheme)}
	if err := r.labels(); err != nil {
		return nil, err
	}
	var origin time.Time
	for _, op := range in.Ops {
		if !op.Start.IsZero() && (origin.IsZero() || op.Start.Before(origin)) {
			origin = op.Start
		}
	}
	r.origin = origin.Truncate(time.Millisecond)
	for i, op := range in.Ops {
		if err := r.op(i, op); err != nil {
			return nil, err
		}
	}
	if r.failing == "" {
		return nil, unshrinkable(in.RunID, "no invocation of it wrote a run_failed (outcome %s): there is no recorded divergence to keep", in.Outcome)
	}
	s := &schedule.Schedule{RunID: in.RunID, Scenario: in.Scenario, Scheme: in.Knobs.Scheme, IDs: in.Knobs.IDs, Wake: in.Knobs.Wake,
		Knobs: otherKnobs(in.Knobs), Outcome: in.Outcome, Detail: r.detail, Items: r.order()}
	return &recorded{sched: s, failing: r.failing}, nil
}

// otherKnobs are the knobs of k other than its scheme, ids, wake and
// engine that differ from main's, as knob lines.
func otherKnobs(k engine.Knobs) []string {
	def := engine.Knobs{Scheme: k.Scheme, Policy: engine.DefaultPolicy()}
	var out []string
	for _, kn := range engine.KnobTable() {
		switch kn.Name {
		case "scheme", "ids", "wake", "engine":
			continue
		}
		if v := kn.Get(k); v != kn.Get(def) {
			out = append(out, kn.Name+"="+v)
		}
	}
	return out
}

// builder turns a run's history into schedule items.
type builder struct {
	in     Input
	origin time.Time
	cmp    func(a, b eventlog.Event) int
	// label is each event id's label; created the label of the event
	// that created each correlation id's operation.
	label   map[string]string
	created map[string]string
	events  map[string]eventlog.Event
	items   []keyed
	// open is each invocation's write item still taking appends (index
	// into items, -1 none).
	open    map[string]int
	failing string
	detail  string
}

// keyed is an item with the time that orders it.
type keyed struct {
	schedule.Item
	key time.Time
}

// labels labels the final log's events in key order: e001, e002, ... (the
// seq's number under a positioned scheme).
func (r *builder) labels() error {
	ordered := slices.Clone(r.in.Final)
	slices.SortStableFunc(ordered, r.cmp)
	width := len(fmt.Sprint(len(ordered)))
	if r.in.Knobs.Scheme.Positioned() && len(ordered) > 0 {
		width = len(fmt.Sprint(ordered[len(ordered)-1].Seq))
	}
	r.events = map[string]eventlog.Event{}
	for i, e := range ordered {
		n := int64(i + 1)
		if r.in.Knobs.Scheme.Positioned() {
			n = e.Seq
		}
		if _, dup := r.label[e.ID]; dup || e.ID == "" {
			return unshrinkable(r.in.RunID, "its final log holds event id %q twice (or none)", e.ID)
		}
		r.label[e.ID] = fmt.Sprintf("e%0*d", width, n)
		r.events[e.ID] = e
		switch e.Type {
		case eventlog.StepCreated, eventlog.WaitCreated, eventlog.HookCreated:
			if _, seen := r.created[e.CorrelationID]; !seen {
				r.created[e.CorrelationID] = r.label[e.ID]
			}
		}
	}
	r.open = map[string]int{}
	return nil
}

// ms is t in whole milliseconds from the origin.
func (r *builder) ms(t time.Time) int { return int(t.Sub(r.origin) / time.Millisecond) }

// cursorLabel is the label of the event a cursor stands after ("" the
// start).
func (r *builder) cursorLabel(c eventlog.Cursor) string {
	if c.IsZero() {
		return ""
	}
	for id, e := range r.events {
		if (r.in.Knobs.Scheme.Positioned() && e.Seq == c.Seq) || (!r.in.Knobs.Scheme.Positioned() && id == c.ID) {
			return r.label[id]
		}
	}
	return ""
}

func (r *builder) op(i int, op history.Op) error {
	inv := engine.IsInvocation(op.Actor)
	switch op.Kind {
	case history.OpSeal:
		return unshrinkable(r.in.RunID, "its readers sealed holes, which a schedule cannot say")
	case history.OpList:
		if !inv {
			return nil // drivers and hook senders read; what they write are facts
		}
		r.open[op.Actor] = -1
		it := schedule.Item{Kind: schedule.KindList, Actor: op.Actor, After: r.cursorLabel(op.After), At: r.ms(op.Start), End: r.ms(op.End), HasEnd: true}
		if op.Err != "" {
			it.Kind, it.Err, it.Slot, it.Above = schedule.KindListErr, op.Err, op.Slot, op.Above
			r.items = append(r.items, keyed{it, op.End})
			return nil
		}
		it.More = op.Read != nil && op.Read.More
		page, _ := r.in.Reads(i)
		for _, e := range page {
			it.Labels = append(it.Labels, r.label[e.ID])
		}
		r.items = append(r.items, keyed{it, op.End})
	case history.OpAppend, history.OpAppendFenced:
		for _, w := range op.Wrote {
			if err := r.wrote(op, w, inv); err != nil {
				return err
			}
		}
	}
	return nil
}

// wrote adds what one draft of an append wrote.
func (r *builder) wrote(op history.Op, w history.OpEvent, inv bool) error {
	e, committed := r.events[w.ID]
	committed = committed && w.ID != "" && op.Err == ""
	switch {
	case w.Type == eventlog.RunCreated:
		if committed {
			r.items = append(r.items, keyed{schedule.Item{Kind: schedule.KindStart, Actor: "starter", Label: r.label[w.ID], At: r.ms(op.Start),
				Commit: []int{max(0, r.ms(op.End)-r.ms(op.Start))}, Payload: e.Payload}, op.End})
		}
	case w.Type == eventlog.RunFailed && inv:
		if committed {
			if r.failing == "" {
				r.failing = op.Actor
				var p engine.RunFailure
				if json.Unmarshal(e.Payload, &p) == nil {
					r.detail = p.Message
				}
			}
			r.items = append(r.items, keyed{schedule.Item{Kind: schedule.KindFail, Actor: op.Actor, Label: r.label[w.ID], At: r.ms(op.Start),
				Commit: []int{max(0, r.ms(op.End)-r.ms(op.Start))}}, op.End})
		}
	case w.Type.IsDecision() && inv:
		j, ok := r.open[op.Actor]
		if !ok || j < 0 {
			r.items = append(r.items, keyed{schedule.Item{Kind: schedule.KindWrite, Actor: op.Actor, At: r.ms(op.Start)}, op.End})
			j = len(r.items) - 1
			r.open[op.Actor] = j
		}
		it := &r.items[j]
		l := schedule.Skip
		if committed {
			l = r.label[w.ID]
			if it.key.IsZero() || op.End.Before(it.key) || allSkipped(it.Labels) {
				it.key = op.End
			}
		}
		it.Commit = append(it.Commit, max(0, r.ms(op.End)-(it.At+len(it.Labels))))
		it.Labels = append(it.Labels, l)
		it.Keys = append(it.Keys, schedule.DecisionKey(w.Type, w.CorrelationID))
	default:
		// A fact, or an attribute a step worker sets out of band (a
		// decision's type, written as a fact of its step).
		if !committed {
			return nil
		}
		of, ok := r.created[e.CorrelationID]
		if !ok {
			return unshrinkable(r.in.RunID, "%s %s has no creation of its operation %s in the final log", w.Type, r.label[w.ID], e.CorrelationID)
		}
		payload := e.Payload
		if w.Type == eventlog.WaitCompleted {
			// Its resumeAt is its wait's, which the schedule derives at
			// the schedule's own times: the fact takes it from there.
			payload = nil
		}
		r.items = append(r.items, keyed{schedule.Item{Kind: schedule.KindFact, Actor: op.Actor, Label: r.label[w.ID], Type: w.Type, Of: of,
			At: r.ms(op.Start), Commit: []int{max(0, r.ms(op.End)-r.ms(op.Start))}, Dedup: e.Dedup, Payload: payload}, op.End})
	}
	return nil
}

// allSkipped says a write has committed nothing so far.
func allSkipped(labels []string) bool {
	return !slices.ContainsFunc(labels, func(l string) bool { return l != schedule.Skip })
}

// order puts the items in the order they happened, by when each
// committed (a list: when it returned), keeping each actor's items in
// their recorded order and moving a read after every event it read, and a
// fact after the creation of its operation.
func (r *builder) order() []schedule.Item {
	n := len(r.items)
	writer := map[string]int{} // label -> index of the item writing it
	for i, it := range r.items {
		for _, l := range written(it.Item) {
			writer[l] = i
		}
	}
	deps := make([][]int, n)
	last := map[string]int{}
	for i, it := range r.items {
		if j, ok := last[it.Actor]; ok {
			deps[i] = append(deps[i], j)
		}
		last[it.Actor] = i
		needs := it.Labels
		if it.Kind != schedule.KindList {
			needs = nil
		}
		if it.Of != "" {
			needs = append(slices.Clone(needs), it.Of)
		}
		for _, l := range needs {
			if j, ok := writer[l]; ok && j != i {
				deps[i] = append(deps[i], j)
			}
		}
	}
	done := make([]bool, n)
	out := make([]schedule.Item, 0, n)
	for len(out) < n {
		best := -1
		for i := range n {
			if done[i] || !ready(deps[i], done) {
				continue
			}
			if best < 0 || r.items[i].key.Before(r.items[best].key) {
				best = i
			}
		}
		if best < 0 { // a cycle, which a recorded history cannot hold: keep the rest as recorded
			for i := range n {
				if !done[i] {
					out = append(out, r.items[i].Item)
				}
			}
			break
		}
		done[best] = true
		out = append(out, r.items[best].Item)
	}
	return out
}

func ready(deps []int, done []bool) bool {
	for _, j := range deps {
		if !done[j] {
			return false
		}
	}
	return true
}

// written lists the labels an item commits.
func written(it schedule.Item) []string {
	switch it.Kind {
	case schedule.KindStart, schedule.KindFact, schedule.KindFail:
		return []string{it.Label}
	case schedule.KindWrite:
		return slices.DeleteFunc(slices.Clone(it.Labels), func(l string) bool { return l == schedule.Skip })
	}
	return nil
}
