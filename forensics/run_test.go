package forensics

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stormctl/stormctl/eventlog"
	"github.com/stormctl/stormctl/history"
	"github.com/stormctl/stormctl/internal/fuzzbytes"
	"github.com/stormctl/stormctl/internal/texttest"
)

// t0 is the origin of the millisecond times the fixtures use.
var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func at(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }

// fixture is one testdata/analyze case: a run's final log and history, and
// what AnalyzeRun must find in them.
type fixture struct {
	in   RunInput
	want RunFindings
}

// parseFixture reads the fixture format, one item a line ('#' starts a
// comment):
//
//	scheme ulid|seq|sequence
//	want [key=n ...]                      keys are RunFindings' JSON names; absent keys are 0
//	event ID [seq=N] [commit=MS] [type=T] [corr=C] [token=K]   one event of the final log (type step_completed unless given)
//	list ACTOR after=ID|- start=MS [more] read=ID,...|-   one page an actor read
//	list ACTOR after=ID|- start=MS failed                 a list that failed
//	append ACTOR ID@MS ...                what a writer committed and when
//
// A list's cursor and page hold the events the ids name, as declared above.
func parseFixture(text string) (fixture, error) {
	var fx fixture
	byID := map[string]eventlog.Event{}
	sawWant := false
	for _, l := range texttest.Lines(text) {
		f := l.Words
		var err error
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
		case "event":
			var e eventlog.Event
			e, err = parseEvent(f[1:])
			if err == nil {
				if _, dup := byID[e.ID]; dup {
					err = fmt.Errorf("event %s declared twice", e.ID)
					break
				}
				byID[e.ID] = e
				fx.in.Final = append(fx.in.Final, e)
			}
		case "list":
			var op history.Op
			op, err = parseList(f[1:], byID)
			fx.in.Ops = append(fx.in.Ops, op)
		case "append":
			var op history.Op
			op, err = parseAppend(f[1:])
			fx.in.Ops = append(fx.in.Ops, op)
		default:
			err = fmt.Errorf("unknown item %q", f[0])
		}
		if err != nil {
			return fx, fmt.Errorf("line %d: %w", l.N, err)
		}
	}
	if fx.in.Scheme == "" || !sawWant {
		return fx, fmt.Errorf("a fixture needs a scheme and a want line")
	}
	return fx, nil
}

func parseWant(kvs []string) (RunFindings, error) {
	m := map[string]int{}
	for _, kv := range kvs {
		k, v, ok := strings.Cut(kv, "=")
		n, err := strconv.Atoi(v)
		if !ok || err != nil {
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

func parseEvent(f []string) (eventlog.Event, error) {
	if len(f) == 0 {
		return eventlog.Event{}, fmt.Errorf("event needs an id")
	}
	e := eventlog.Event{RunID: "run-1", ID: f[0], Type: eventlog.StepCompleted}
	for _, kv := range f[1:] {
		k, v, _ := strings.Cut(kv, "=")
		var err error
		switch k {
		case "seq":
			e.Seq, err = strconv.ParseInt(v, 10, 64)
		case "commit":
			e.CommittedAt, err = parseMillis(v)
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
			return e, err
		}
	}
	return e, nil
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

func parseAppend(f []string) (history.Op, error) {
	if len(f) < 2 {
		return history.Op{}, fmt.Errorf("append needs an actor and ID@MS items")
	}
	op := history.Op{Kind: history.OpAppend, Actor: f[0], RunID: "run-1"}
	for _, w := range f[1:] {
		id, ms, ok := strings.Cut(w, "@")
		c, err := parseMillis(ms)
		if !ok || err != nil {
			return op, fmt.Errorf("bad append item %q (want ID@MS)", w)
		}
		op.Wrote = append(op.Wrote, history.OpEvent{Type: eventlog.StepCompleted, ID: id, CommittedAt: c})
		if op.Start.IsZero() || c.Before(op.Start) {
			op.Start = c
		}
		if c.After(op.End) {
			op.End = c
		}
	}
	return op, nil
}

func TestAnalyzeRunFixtures(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob(filepath.Join("testdata", "analyze", "*.txt"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no fixtures in testdata/analyze: %v", err)
	}
	for _, file := range files {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".txt"), func(t *testing.T) {
			t.Parallel()
			raw, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			fx, err := parseFixture(string(raw))
			if err != nil {
				t.Fatalf("%s: %v", file, err)
			}
			// The final log may come in any order: the findings must not
			// depend on it.
			orders := map[string][]eventlog.Event{
				"as stored": fx.in.Final,
				"reversed":  reversed(fx.in.Final),
			}
			for name, final := range orders {
				in := fx.in
				in.Final = final
				if got := AnalyzeRun(in).Findings; got != fx.want {
					t.Errorf("final log %s: AnalyzeRun = %+v, want %+v", name, got, fx.want)
				}
			}
		})
	}
}

func reversed(evs []eventlog.Event) []eventlog.Event {
	out := slices.Clone(evs)
	slices.Reverse(out)
	return out
}

func TestParseFixtureRejectsBadInput(t *testing.T) {
	t.Parallel()
	bad := map[string]string{
		"no scheme":     "want\nevent a\n",
		"no want":       "scheme ulid\nevent a\n",
		"unknown count": "scheme ulid\nwant skipped=1\n",
		"unknown item":  "scheme ulid\nwant\nevnt a\n",
		"undeclared id": "scheme ulid\nwant\nevent a\nlist inv-1 after=- start=1 read=a,b\n",
		"bad append":    "scheme ulid\nwant\nappend inv-1 a\n",
	}
	for name, text := range bad {
		if _, err := parseFixture(text); err == nil {
			t.Errorf("%s: parseFixture accepted %q", name, text)
		}
	}
}

func TestCommitTimes(t *testing.T) {
	t.Parallel()
	ops := []history.Op{
		{Kind: history.OpAppend, Wrote: []history.OpEvent{{ID: "a", CommittedAt: at(1)}, {ID: "b", CommittedAt: at(2)}}},
		{Kind: history.OpAppendFenced, Wrote: []history.OpEvent{{ID: "c"}}},                       // rejected: nothing committed
		{Kind: history.OpAppend, Wrote: []history.OpEvent{{ID: "", CommittedAt: at(9)}}},          // failed: no id
		{Kind: history.OpList, Read: &history.ReadSummary{N: 1}, After: eventlog.Cursor{ID: "a"}}, // reads carry no commits
	}
	got := CommitTimes(ops)
	if len(got) != 2 || !got["a"].Equal(at(1)) || !got["b"].Equal(at(2)) {
		t.Errorf("CommitTimes = %v, want a@1ms and b@2ms only", got)
	}
}

// TestRunFindingsAdd: Add sums every count of RunFindings (set by
// reflection, so a checker's new field that Add forgets fails here) and
// the slot findings, leaving its argument as it was.
func TestRunFindingsAdd(t *testing.T) {
	t.Parallel()
	var b RunFindings
	v := reflect.ValueOf(&b).Elem()
	for i := range v.NumField() {
		if f := v.Field(i); f.Kind() == reflect.Int {
			f.SetInt(int64(i + 1))
		}
	}
	b.Slot = &SlotFindings{HolesSeen: 1, Seals: 2, SealedBy: map[string]int{"inv": 2}, FillMillis: []float64{5}}
	var a RunFindings
	a.Add(b)
	a.Add(b)
	got := reflect.ValueOf(a)
	for i := range got.NumField() {
		if f := got.Field(i); f.Kind() == reflect.Int && f.Int() != 2*int64(i+1) {
			t.Errorf("after adding %d twice, %s = %d", i+1, got.Type().Field(i).Name, f.Int())
		}
	}
	if s := a.Slot; s == nil || s.HolesSeen != 2 || s.Seals != 4 || s.SealedBy["inv"] != 4 || len(s.FillMillis) != 2 {
		t.Errorf("Add summed slot findings to %+v", s)
	}
	if b.Slot.HolesSeen != 1 || b.Slot.SealedBy["inv"] != 2 {
		t.Errorf("Add changed its argument's slot findings: %+v", *b.Slot)
	}
}

// fuzzInput turns bytes into a small run: a few events and ops over them.
// Every byte is used as drawn, so the fuzzer reaches odd shapes (cursors
// that go back, pages that repeat ids, ops of unknown actors).
func fuzzInput(scheme byte, data []byte) RunInput {
	draw := fuzzbytes.New(data)
	next := draw.Int
	in := RunInput{Scheme: eventlog.Schemes()[int(scheme)%len(eventlog.Schemes())]}
	nEvents := next() % 12
	for range nEvents {
		e := eventlog.Event{RunID: "run-1", ID: fmt.Sprintf("e%02d", next()%16), Seq: int64(next() % 16)}
		if ms := next(); ms%4 != 0 {
			e.CommittedAt = at(ms)
		}
		in.Final = append(in.Final, e)
	}
	actors := []string{"inv-1", "inv-2", "driver", "step-1"}
	pick := func() eventlog.Event {
		if len(in.Final) == 0 {
			return eventlog.Event{ID: "zz", Seq: 99}
		}
		return in.Final[next()%len(in.Final)]
	}
	for draw.Len() > 0 {
		switch kind := next() % 3; kind {
		case 0, 1:
			op := history.Op{Kind: history.OpList, Actor: actors[next()%len(actors)], Start: at(next())}
			if c := next(); c%3 != 0 {
				op.After = eventlog.After(pick())
			}
			var p eventlog.Page
			for range next() % 4 {
				p.Events = append(p.Events, pick())
			}
			p.More = next()%2 == 0
			if next()%8 != 0 {
				op.Read = history.Summarize(p)
			}
			in.Ops = append(in.Ops, op)
		case 2:
			op := history.Op{Kind: history.OpAppend, Actor: actors[next()%len(actors)]}
			e := pick()
			op.Wrote = []history.OpEvent{{ID: e.ID, CommittedAt: at(next())}}
			in.Ops = append(in.Ops, op)
		}
	}
	return in
}

func FuzzAnalyzeRun(f *testing.F) {
	f.Add(byte(0), []byte{})
	f.Add(byte(0), []byte{4, 1, 0, 1, 2, 0, 20, 3, 0, 2, 4, 0, 3, 0, 0, 10, 0, 2, 0, 2, 0, 1, 1, 0, 30, 1, 2, 3, 1, 1})
	f.Add(byte(1), []byte{3, 1, 1, 1, 2, 2, 2, 2, 2, 3, 1, 0, 5, 3, 2, 0, 1, 0, 0, 7})
	f.Add(byte(2), []byte{5, 9, 0, 0, 8, 3, 5, 7, 1, 9, 6, 5, 2, 1, 1, 0, 1, 200, 2, 3, 0, 1, 2, 1})
	f.Fuzz(func(t *testing.T, scheme byte, data []byte) {
		in := fuzzInput(scheme, data)
		an := AnalyzeRun(in)
		got, order := an.Findings, an.Order
		if order.InvertedPairs != got.Inversions || order.Displaced != got.Displaced {
			t.Fatalf("findings %+v disagree with their commit order %+v", got, order)
		}
		n := len(in.Final)
		if len(an.Commits) != n {
			t.Fatalf("%d commit events for a final log of %d", len(an.Commits), n)
		}
		lists := 0
		for _, op := range in.Ops {
			if op.Kind == history.OpList && op.Read != nil && strings.HasPrefix(op.Actor, "inv-") {
				lists++
			}
		}
		for name, v := range map[string]int{
			"reads": got.Reads, "non_prefix_reads": got.NonPrefixReads, "cursor_skips": got.CursorSkips,
			"inversions": got.Inversions, "displaced": got.Displaced, "gaps": got.Gaps,
			"duplicates": got.Duplicates, "unpositioned": got.Unpositioned, "duplicate_creates": got.DuplicateCreates,
		} {
			if v < 0 {
				t.Fatalf("%s = %d < 0 for %+v", name, v, in)
			}
		}
		switch {
		case got.Reads > lists:
			t.Fatalf("%d reads from %d invocation pages", got.Reads, lists)
		case got.NonPrefixReads > got.Reads:
			t.Fatalf("%d non-prefix reads of %d", got.NonPrefixReads, got.Reads)
		case got.Inversions > n*(n-1)/2, got.Displaced > n:
			t.Fatalf("%d inverted pairs, %d displaced among %d events", got.Inversions, got.Displaced, n)
		case got.CursorSkips > n*got.Reads:
			t.Fatalf("%d cursor skips in %d reads of %d events", got.CursorSkips, got.Reads, n)
		case got.Duplicates+got.Unpositioned > n:
			t.Fatalf("%d duplicates and %d unpositioned among %d events", got.Duplicates, got.Unpositioned, n)
		case got.DuplicateCreates > 0 && got.DuplicateCreates >= n:
			t.Fatalf("%d duplicate creations among %d events", got.DuplicateCreates, n)
		}
	})
}
