package forensics

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/stormctl/stormctl/internal/base/texttest"
	"github.com/stormctl/stormctl/internal/eventlog"
	"github.com/stormctl/stormctl/internal/history"
)

// fixture is one testdata/analyze case: a run's final log and history, and
// what AnalyzeRun must find in them (and, for a history with implicit
// appends, without them, as devkit storms recorded them before
// 2026-12-05).
type fixture struct {
	in              RunInput
	want            RunFindings
	withoutImplicit *RunFindings
}

// parseFixture reads the fixture format, one item a line ('#' starts a
// comment):
//
//	scheme ulid|seq|sequence|slot
//	want [key=n ...]                      keys are RunFindings' JSON names; absent keys are 0; slot.KEY for
//	                                      SlotFindings' (slot.sealed_by.KIND=n, slot.fill_ms=MS,...)
//	want-without-implicit [key=n ...]     the same, with the history's implicit appends left out
//	event LABEL [slot=N] [seq=N] [commit=MS] [mint=MS] [reserved=MS] [type=T] [corr=C] [token=K]
//	                                      one event of the final log (type step_completed unless given; id
//	                                      LABEL, or the slot id eventlog.SlotID(N) with seq N; reserved: a
//	                                      noop's reservation time)
//	list ACTOR after=LABEL|- start=MS [more] [snapshot] read=LABEL,...|-   one page an actor read
//	                                      (snapshot: the events a write's answer carried)
//	list ACTOR after=LABEL|- start=MS failed                 a list that failed
//	hole ACTOR slot=N above=M start=MS    a list that met empty slot N below committed slot M
//	seal ACTOR LABEL@MS                   a reader's seal wrote the noop LABEL into its slot
//	voided ACTOR slot=N start=MS          a write voided by a seal of slot N
//	append ACTOR LABEL@MS ... [implicit]  what a writer committed and when (implicit: written by the
//	                                      store inside another call of ACTOR's)
//
// A list's cursor and page hold the events the labels name, as declared
// above; an append's label names a declared event (its id and type) or,
// undeclared, an id.
func parseFixture(text string) (fixture, error) {
	var fx fixture
	byLabel := map[string]eventlog.Event{}
	sawWant := false
	for _, l := range texttest.Lines(text) {
		f := l.Words
		var err error
		var op history.Op
		switch f[0] {
		case "scheme":
			if len(f) != 2 {
				err = fmt.Errorf("want: scheme NAME")
				break
			}
			fx.in.Scheme, err = eventlog.ParseScheme(f[1])
		case "want":
			sawWant = true
			fx.want, err = parseWant(f[1:])
		case "want-without-implicit":
			var w RunFindings
			w, err = parseWant(f[1:])
			fx.withoutImplicit = &w
		case "event":
			var e eventlog.Event
			var label string
			label, e, err = parseEvent(f[1:])
			if err == nil {
				if _, dup := byLabel[label]; dup {
					err = fmt.Errorf("event %s declared twice", label)
					break
				}
				byLabel[label] = e
				fx.in.Final = append(fx.in.Final, e)
			}
		case "list":
			op, err = parseList(f[1:], byLabel)
		case "hole", "voided":
			op, err = parseSlotOp(f[0], f[1:])
		case "seal":
			op, err = parseSeal(f[1:], byLabel)
		case "append":
			op, err = parseAppend(f[1:], byLabel)
		default:
			err = fmt.Errorf("unknown item %q", f[0])
		}
		if err != nil {
			return fx, fmt.Errorf("line %d: %w", l.N, err)
		}
		if op.Kind != "" {
			fx.in.Ops = append(fx.in.Ops, op)
		}
	}
	if fx.in.Scheme == "" || !sawWant {
		return fx, fmt.Errorf("a fixture needs a scheme and a want line")
	}
	if fx.in.Scheme == eventlog.SchemeSlot {
		// The slot scheme always has slot findings, zeros included.
		for _, w := range []*RunFindings{&fx.want, fx.withoutImplicit} {
			if w != nil && w.Slot == nil {
				w.Slot = &SlotFindings{}
			}
		}
	}
	return fx, nil
}

// parseWant reads counts: RunFindings' JSON names, and under "slot."
// SlotFindings' (slot.sealed_by.KIND=n; slot.fill_ms=a,b,... in ms).
func parseWant(kvs []string) (RunFindings, error) {
	m := map[string]any{}
	var slot map[string]any
	for _, kv := range kvs {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return RunFindings{}, fmt.Errorf("want: bad count %q", kv)
		}
		if sk, inSlot := strings.CutPrefix(k, "slot."); inSlot {
			if slot == nil {
				slot = map[string]any{}
				m["slot"] = slot
			}
			if kind, by := strings.CutPrefix(sk, "sealed_by."); by {
				n, err := strconv.Atoi(v)
				if err != nil {
					return RunFindings{}, fmt.Errorf("want: bad count %q", kv)
				}
				sb, _ := slot["sealed_by"].(map[string]int)
				if sb == nil {
					sb = map[string]int{}
					slot["sealed_by"] = sb
				}
				sb[kind] = n
				continue
			}
			if sk == "fill_ms" {
				var ms []float64
				for _, x := range strings.Split(v, ",") {
					f, err := strconv.ParseFloat(x, 64)
					if err != nil {
						return RunFindings{}, fmt.Errorf("want: bad fill time %q", x)
					}
					ms = append(ms, f)
				}
				slot[sk] = ms
				continue
			}
			n, err := strconv.Atoi(v)
			if err != nil {
				return RunFindings{}, fmt.Errorf("want: bad count %q", kv)
			}
			slot[sk] = n
			continue
		}
		n, err := strconv.Atoi(v)
		if err != nil {
			return RunFindings{}, fmt.Errorf("want: bad count %q", kv)
		}
		m[k] = n
	}
	raw, _ := json.Marshal(m)
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	var w RunFindings
	if err := dec.Decode(&w); err != nil {
		return RunFindings{}, fmt.Errorf("want: %w", err)
	}
	return w, nil
}

func parseMillis(s string) (time.Time, error) {
	ms, err := strconv.Atoi(s)
	if err != nil {
		return time.Time{}, fmt.Errorf("bad time %q", s)
	}
	return at(ms), nil
}

// parseEvent reads an event line's label and event.
func parseEvent(f []string) (string, eventlog.Event, error) {
	if len(f) == 0 {
		return "", eventlog.Event{}, fmt.Errorf("event needs an id")
	}
	e := eventlog.Event{RunID: "run-1", ID: f[0], Type: eventlog.StepCompleted}
	for _, kv := range f[1:] {
		k, v, _ := strings.Cut(kv, "=")
		var err error
		switch k {
		case "slot":
			e.Seq, err = strconv.ParseInt(v, 10, 64)
			e.ID = eventlog.SlotID(e.Seq)
		case "seq":
			e.Seq, err = strconv.ParseInt(v, 10, 64)
		case "commit":
			e.CommittedAt, err = parseMillis(v)
		case "mint":
			e.MintedAt, err = parseMillis(v)
		case "reserved":
			var r time.Time
			if r, err = parseMillis(v); err == nil {
				e.Payload, err = json.Marshal(eventlog.NoopPayload{ReservedAt: r})
			}
		case "type":
			e.Type, err = eventlog.ParseType(v)
		case "corr":
			e.CorrelationID = v
		case "token":
			e.Token = v
		default:
			err = fmt.Errorf("unknown event field %q", k)
		}
		if err != nil {
			return "", e, err
		}
	}
	return f[0], e, nil
}

func parseList(f []string, byID map[string]eventlog.Event) (history.Op, error) {
	if len(f) == 0 {
		return history.Op{}, fmt.Errorf("list needs an actor")
	}
	op := history.Op{Kind: history.OpList, Actor: f[0], RunID: "run-1", Limit: 2}
	var page eventlog.Page
	failed, sawRead := false, false
	lookup := func(id string) (eventlog.Event, error) {
		e, ok := byID[id]
		if !ok {
			return e, fmt.Errorf("list names event %q not declared above", id)
		}
		return e, nil
	}
	for _, tok := range f[1:] {
		k, v, _ := strings.Cut(tok, "=")
		var err error
		switch k {
		case "after":
			if v != "-" {
				var e eventlog.Event
				if e, err = lookup(v); err == nil {
					op.After = eventlog.After(e)
				}
			}
		case "start":
			op.Start, err = parseMillis(v)
			op.End = op.Start
		case "more":
			page.More = true
		case "snapshot":
			op.Snapshot = true
		case "failed":
			failed = true
		case "read":
			sawRead = true
			if v == "-" {
				break
			}
			for _, id := range strings.Split(v, ",") {
				var e eventlog.Event
				if e, err = lookup(id); err != nil {
					break
				}
				page.Events = append(page.Events, e)
			}
		default:
			err = fmt.Errorf("unknown list field %q", k)
		}
		if err != nil {
			return op, err
		}
	}
	switch {
	case failed:
		op.Err, op.ErrText = "unavailable", "store unavailable"
	case !sawRead:
		return op, fmt.Errorf("list needs read= or failed")
	default:
		if n := len(page.Events); n > 0 {
			page.Next = eventlog.After(page.Events[n-1])
		}
		op.Read = history.Summarize(page)
	}
	return op, nil
}

func parseAppend(f []string, byLabel map[string]eventlog.Event) (history.Op, error) {
	if len(f) < 2 {
		return history.Op{}, fmt.Errorf("append needs an actor and LABEL@MS items")
	}
	op := history.Op{Kind: history.OpAppend, Actor: f[0], RunID: "run-1"}
	for _, w := range f[1:] {
		if w == "implicit" {
			op.Implicit = true
			continue
		}
		label, ms, ok := strings.Cut(w, "@")
		c, err := parseMillis(ms)
		if !ok || err != nil {
			return op, fmt.Errorf("bad append item %q (want LABEL@MS)", w)
		}
		ev := history.OpEvent{Type: eventlog.StepCompleted, ID: label, CommittedAt: c}
		if e, ok := byLabel[label]; ok {
			ev.Type, ev.CorrelationID, ev.ID, ev.Seq = e.Type, e.CorrelationID, e.ID, e.Seq
		}
		op.Wrote = append(op.Wrote, ev)
		if op.Start.IsZero() || c.Before(op.Start) {
			op.Start = c
		}
		if c.After(op.End) {
			op.End = c
		}
	}
	if len(op.Wrote) == 0 {
		return op, fmt.Errorf("append needs LABEL@MS items")
	}
	return op, nil
}

// parseSlotOp reads a hole (a list that met an empty slot) or a voided
// write (a seal filled its slot first).
func parseSlotOp(kind string, f []string) (history.Op, error) {
	if len(f) == 0 {
		return history.Op{}, fmt.Errorf("%s needs an actor", kind)
	}
	op := history.Op{Kind: history.OpList, Actor: f[0], RunID: "run-1", Err: "hole", ErrText: "hole"}
	if kind == "voided" {
		op.Kind, op.Err, op.ErrText = history.OpAppend, "sealed", "slot sealed"
	}
	for _, kv := range f[1:] {
		k, v, _ := strings.Cut(kv, "=")
		var err error
		switch k {
		case "slot":
			op.Slot, err = strconv.ParseInt(v, 10, 64)
		case "above":
			op.Above, err = strconv.ParseInt(v, 10, 64)
		case "start":
			op.Start, err = parseMillis(v)
			op.End = op.Start
		default:
			err = fmt.Errorf("unknown %s field %q", kind, k)
		}
		if err != nil {
			return op, err
		}
	}
	if op.Slot < 1 {
		return op, fmt.Errorf("%s needs slot=N", kind)
	}
	return op, nil
}

// parseSeal reads a seal that wrote a declared noop.
func parseSeal(f []string, byLabel map[string]eventlog.Event) (history.Op, error) {
	if len(f) != 2 {
		return history.Op{}, fmt.Errorf("seal needs an actor and LABEL@MS")
	}
	label, ms, ok := strings.Cut(f[1], "@")
	c, err := parseMillis(ms)
	e, declared := byLabel[label]
	if !ok || err != nil || !declared || e.Type != eventlog.Noop {
		return history.Op{}, fmt.Errorf("bad seal %q (want LABEL@MS of a declared noop)", f[1])
	}
	return history.Op{Kind: history.OpSeal, Actor: f[0], RunID: "run-1", Start: c, End: c, Slot: e.Seq, Sealed: true,
		Wrote: []history.OpEvent{{Type: eventlog.Noop, ID: e.ID, Seq: e.Seq, CommittedAt: c}}}, nil
}
