package explain

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stormctl/stormctl/internal/base/texttest"
	"github.com/stormctl/stormctl/internal/engine"
	"github.com/stormctl/stormctl/internal/eventlog"
	"github.com/stormctl/stormctl/internal/history"
)

// viewFixture is one testdata/views case: a slot log, the pages its
// readers read, and the views they must be reconstructed to.
type viewFixture struct {
	in    Input
	wants []viewWant
}

// viewWant is what one reader's view must be: after all its loads
// (through < 0) or through the load holding op index through.
type viewWant struct {
	line                  int
	actor                 string
	through               int
	n, loads              int
	prefix, reconstructed bool
	visible               []int64 // slots
}

// parseViewFixture reads the views fixture format, one item a line ('#'
// starts a comment):
//
//	scheme slot|seq|sequence
//	event SLOT [commit=MS]                                       an event of the final log at SLOT (id eventlog.SlotID)
//	list ACTOR after=SLOT|- at=MS[-MS] [more] [snapshot] read=SLOTS|-   one page, or a write's answer's events (snapshot)
//	want ACTOR [through=OP] n=N loads=L prefix=BOOL reconstructed=BOOL visible=SLOTS
//
// SLOTS are comma-separated slots or ranges ("1-4,7"); OP is a list's
// index among the fixture's list lines (from 0).
func parseViewFixture(text string) (viewFixture, error) {
	var fx viewFixture
	fx.in.RunID = "run-1"
	fx.in.Program = pair
	byID := map[int64]eventlog.Event{}
	for _, l := range texttest.Lines(text) {
		f := l.Words
		var err error
		switch f[0] {
		case "scheme":
			if len(f) != 2 {
				err = fmt.Errorf("want: scheme NAME")
				break
			}
			fx.in.Knobs.Scheme, err = eventlog.ParseScheme(f[1])
		case "event":
			var e eventlog.Event
			if e, err = parseViewEvent(f[1:]); err == nil {
				byID[e.Seq] = e
				fx.in.Final = append(fx.in.Final, e)
			}
		case "list":
			var op history.Op
			op, err = parseViewList(f[1:], byID)
			fx.in.Ops = append(fx.in.Ops, op)
		case "want":
			var w viewWant
			w, err = parseViewWant(f[1:])
			w.line = l.N
			fx.wants = append(fx.wants, w)
		default:
			err = fmt.Errorf("unknown item %q", f[0])
		}
		if err != nil {
			return fx, fmt.Errorf("line %d: %w", l.N, err)
		}
	}
	if fx.in.Scheme == "" || len(fx.wants) == 0 {
		return fx, fmt.Errorf("a views fixture needs a scheme and a want line")
	}
	return fx, nil
}

func parseViewEvent(f []string) (eventlog.Event, error) {
	if len(f) == 0 {
		return eventlog.Event{}, fmt.Errorf("event needs a slot")
	}
	seq, err := strconv.ParseInt(f[0], 10, 64)
	if err != nil || seq < 1 {
		return eventlog.Event{}, fmt.Errorf("bad slot %q", f[0])
	}
	e := eventlog.Event{RunID: "run-1", ID: eventlog.SlotID(seq), Seq: seq, Type: eventlog.StepCompleted}
	for _, kv := range f[1:] {
		k, v, _ := strings.Cut(kv, "=")
		if k != "commit" {
			return e, fmt.Errorf("unknown event field %q", k)
		}
		ms, err := strconv.Atoi(v)
		if err != nil {
			return e, fmt.Errorf("bad time %q", v)
		}
		e.CommittedAt = at(ms)
	}
	return e, nil
}

func parseViewList(f []string, byID map[int64]eventlog.Event) (history.Op, error) {
	if len(f) == 0 {
		return history.Op{}, fmt.Errorf("list needs an actor")
	}
	op := history.Op{Kind: history.OpList, Actor: f[0], RunID: "run-1"}
	var page eventlog.Page
	sawRead := false
	for _, tok := range f[1:] {
		k, v, _ := strings.Cut(tok, "=")
		var err error
		switch k {
		case "after":
			if v != "-" {
				var seq int64
				if seq, err = strconv.ParseInt(v, 10, 64); err == nil {
					op.After = eventlog.Cursor{ID: eventlog.SlotID(seq), Seq: seq}
				}
			}
		case "at":
			from, to, span := strings.Cut(v, "-")
			var a, b int
			if a, err = strconv.Atoi(from); err == nil {
				b = a
				if span {
					b, err = strconv.Atoi(to)
				}
			}
			op.Start, op.End = at(a), at(b)
		case "more":
			page.More = true
		case "snapshot":
			op.Snapshot = true
		case "read":
			sawRead = true
			var slots []int64
			if slots, err = parseSlots(v); err != nil {
				break
			}
			for _, s := range slots {
				e, ok := byID[s]
				if !ok {
					return op, fmt.Errorf("list reads slot %d, not declared above", s)
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
	if !sawRead {
		return op, fmt.Errorf("list needs read=")
	}
	op.Read = history.Summarize(page)
	return op, nil
}

func parseViewWant(f []string) (viewWant, error) {
	if len(f) == 0 {
		return viewWant{}, fmt.Errorf("want needs an actor")
	}
	w := viewWant{actor: f[0], through: -1}
	for _, kv := range f[1:] {
		k, v, _ := strings.Cut(kv, "=")
		var err error
		switch k {
		case "through":
			w.through, err = strconv.Atoi(v)
		case "n":
			w.n, err = strconv.Atoi(v)
		case "loads":
			w.loads, err = strconv.Atoi(v)
		case "prefix":
			w.prefix, err = strconv.ParseBool(v)
		case "reconstructed":
			w.reconstructed, err = strconv.ParseBool(v)
		case "visible":
			w.visible, err = parseSlots(v)
		default:
			err = fmt.Errorf("unknown want field %q", k)
		}
		if err != nil {
			return w, err
		}
	}
	return w, nil
}

// parseSlots reads "1-4,7" ("-": none).
func parseSlots(v string) ([]int64, error) {
	var out []int64
	if v == "-" {
		return nil, nil
	}
	for _, part := range strings.Split(v, ",") {
		lo, hi, span := strings.Cut(part, "-")
		a, err := strconv.ParseInt(lo, 10, 64)
		b := a
		if err == nil && span {
			b, err = strconv.ParseInt(hi, 10, 64)
		}
		if err != nil || b < a {
			return nil, fmt.Errorf("bad slots %q", part)
		}
		for s := a; s <= b; s++ {
			out = append(out, s)
		}
	}
	return out, nil
}

// TestViews: a reader's view is built load by load, as the devkit
// runtime reads (testdata/views: slot logs shaped like a 5.0 world-local
// run): a load from the start replaces what it held, a load from a
// cursor (a page read on, a delta or skipped-slot report a write's
// answer carried) adds its events, each held once. Summing every page
// of every load, as before, counted a reload's events twice and judged
// the view not a prefix.
func TestViews(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob(filepath.Join("testdata", "views", "*.txt"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no fixtures in testdata/views: %v", err)
	}
	for _, file := range files {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".txt"), func(t *testing.T) {
			t.Parallel()
			raw, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			fx, err := parseViewFixture(string(raw))
			if err != nil {
				t.Fatalf("%s: %v", file, err)
			}
			fx.in.Knobs.Wake = engine.WakeOrdered
			r := prepare(fx.in)
			for _, w := range fx.wants {
				v := r.viewBefore(w.actor, len(fx.in.Ops))
				if w.through >= 0 {
					v = r.viewThrough(w.actor, w.through)
				}
				if v == nil {
					t.Errorf("line %d: %s has no view", w.line, w.actor)
					continue
				}
				got := r.describe(v)
				var slots []int64
				for _, p := range v.positions() {
					slots = append(slots, r.ordered[p].Seq)
				}
				if got.N != w.n || got.Loads != w.loads || got.Prefix != w.prefix || got.Reconstructed != w.reconstructed || !slices.Equal(slots, w.visible) {
					t.Errorf("line %d: %s's view: n=%d loads=%d prefix=%v reconstructed=%v visible=%v; want n=%d loads=%d prefix=%v reconstructed=%v visible=%v",
						w.line, w.actor, got.N, got.Loads, got.Prefix, got.Reconstructed, slots, w.n, w.loads, w.prefix, w.reconstructed, w.visible)
				}
			}
		})
	}
}

// TestWriterOfImplicit: the writer of an event the store wrote inside
// another call (a 5.0 synthetic step_created inside a step_started) is
// that call's invocation, marked implicit, with an evidence line naming
// the call; an ordinary append gets none.
func TestWriterOfImplicit(t *testing.T) {
	t.Parallel()
	created := history.OpEvent{Type: eventlog.StepCreated, CorrelationID: "step_1", ID: eventlog.SlotID(5), Seq: 5}
	started := history.OpEvent{Type: eventlog.StepStarted, CorrelationID: "step_1", ID: eventlog.SlotID(7), Seq: 7}
	ops := []history.Op{
		{Kind: history.OpAppend, Actor: "inv-2", Start: at(10), End: at(30), Implicit: true, Wrote: []history.OpEvent{created}},
		{Kind: history.OpAppend, Actor: "inv-2", Start: at(10), End: at(30), Wrote: []history.OpEvent{started}},
	}
	r := prepare(Input{Knobs: engine.Knobs{Scheme: eventlog.SchemeSlot}, Ops: ops})
	for i, tc := range []struct {
		implicit bool
		evidence string
	}{
		{true, "the store wrote it inside its step_started of inv-2"},
		{false, ""},
	} {
		w, ev := r.writerOf(i)
		if w.Actor != "inv-2" || !w.Start.Equal(at(10)) || !w.End.Equal(at(30)) || w.Implicit != tc.implicit {
			t.Errorf("op %d: writer %+v", i, w)
		}
		if !strings.HasPrefix(ev, tc.evidence) || (tc.evidence == "") != (ev == "") {
			t.Errorf("op %d: evidence %q, want it to start %q", i, ev, tc.evidence)
		}
	}
}
