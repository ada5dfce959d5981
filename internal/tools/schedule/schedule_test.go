package schedule

import (
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stormctl/stormctl/forensics"
	"github.com/stormctl/stormctl/internal/base/filetest"
	"github.com/stormctl/stormctl/internal/engine"
	"github.com/stormctl/stormctl/internal/eventlog"
	"github.com/stormctl/stormctl/internal/history"
	"github.com/stormctl/stormctl/scenarios"
)

// race calls step "x", racing it against a one-second sleep, then "x-fin"
// when the step won or "x-rec" when the timer did.
func race(c *engine.Ctx) (any, error) { return raceOf("x")(c) }

// raceOf is race with step name for "x".
func raceOf(name string) engine.Program {
	return func(c *engine.Ctx) (any, error) {
		r := c.Race(c.Step(name, 0), c.Sleep(time.Second))
		if _, err := c.Await(r); err != nil {
			return nil, err
		}
		next := name + "-fin"
		if r.Winner() == 1 {
			next = name + "-rec"
		}
		return c.Await(c.Step(next, 0))
	}
}

// pair is explain's fixtures' program (explain/classify_test.go): race of
// x and race of y, as two branches.
func pair(c *engine.Ctx) (any, error) {
	x, y := c.Go(raceOf("x")), c.Go(raceOf("y"))
	a, err := c.Await(x)
	if err != nil {
		return nil, err
	}
	b, err := c.Await(y)
	if err != nil {
		return nil, err
	}
	return []any{a, b}, nil
}

// fixtures are the schedules of explain's testdata.
func fixtures(t *testing.T) []string {
	t.Helper()
	var files []string
	for _, dir := range []string{"classify", "pages"} {
		got, err := filepath.Glob(filepath.Join(filetest.Repo("internal", "analysis", "explain", "testdata"), dir, "*.txt"))
		if err != nil || len(got) == 0 {
			t.Fatalf("no schedules in explain/testdata/%s: %v", dir, err)
		}
		files = append(files, got...)
	}
	return files
}

// TestFormatRoundTrips: Format writes what Parse reads back to the same
// schedule, for every schedule of explain's testdata and one using every
// addition shrink writes (run, scenario, knob, skipped labels, payloads
// with spaces and '#', dedup).
func TestFormatRoundTrips(t *testing.T) {
	t.Parallel()
	texts := map[string]string{"shrink": `run wrun_1
scenario step-storm
scheme ulid
ids positional
wake engine
knob fence=decisions
outcome corrupted
detail replay divergence: x
start e001 at=0 payload={"rounds":1}
list inv-1 after=- at=2-3 read=e001
write inv-1 -,e002,- at=4 commit=3,1,1
fact step-1 e003 step_completed of=e002 at=9 dedup=d payload={"result":"a\u0020b\u0023c"}
fail inv-2 e004 at=12
`, "devkit": `scheme slot
outcome corrupted
start e01 at=0 by=inv-1 implicit
list inv-1 after=e01 at=1-2 snapshot read=-
list inv-1 after=- at=3-4 more snapshot read=e01
write inv-1 e02 at=5 implicit commit=2
fact inv-1 e03 step_started of=e02 at=5 implicit
fail inv-1 e04 at=9 implicit
`}
	for _, f := range fixtures(t) {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		texts[filepath.Base(f)] = string(b)
	}
	for name, text := range texts {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			s, err := Parse(text)
			if err != nil {
				t.Fatal(err)
			}
			again, err := Parse(s.Format())
			if err != nil {
				t.Fatalf("Parse(Format()): %v\n%s", err, s.Format())
			}
			if !reflect.DeepEqual(s, again) {
				t.Errorf("round trip differs:\n%+v\n%+v\n%s", s, again, s.Format())
			}
		})
	}
}

// TestExecute: a schedule's writes are what the writer's reads derive;
// strictly a write that cannot be derived or a read of what is not
// written is an error, leniently it commits or reads what there is.
func TestExecute(t *testing.T) {
	t.Parallel()
	const head = "scheme ulid\noutcome corrupted\nstart e01 at=0\nlist inv-1 after=- at=1 read=e01\n"
	for _, tc := range []struct {
		name, items string
		lenient     bool
		err         string
		final       []eventlog.Type // the final log's types, in order
	}{
		{"derives", "write inv-1 e02,e03 at=2\n", false, "", []eventlog.Type{eventlog.RunCreated, eventlog.StepCreated, eventlog.WaitCreated}},
		{"skips a label", "write inv-1 -,e03 at=2\n", false, "", []eventlog.Type{eventlog.RunCreated, eventlog.WaitCreated}},
		{"more labels than decisions", "write inv-1 e02,e03,e04 at=2\n", false, "derives 2 decisions, 3 labels given", nil},
		{"leniently, as many as derived", "write inv-1 e02,e03,e04 at=2\n", true, "", []eventlog.Type{eventlog.RunCreated, eventlog.StepCreated, eventlog.WaitCreated}},
		{"reads the unwritten", "list inv-2 after=- at=2 read=e01,e09\n", false, "list reads e09, which is not written yet", []eventlog.Type{eventlog.RunCreated}},
		{"leniently, reads what there is", "list inv-2 after=- at=2 read=e01,e09\nwrite inv-2 e02 at=3\n", true, "", []eventlog.Type{eventlog.RunCreated, eventlog.StepCreated}},
		{"a fact of the unwritten", "fact step-1 e05 step_started of=e09 at=2\n", false, "fact of \"e09\", which is not written", nil},
		{"leniently, no fact of the unwritten", "fact step-1 e05 step_started of=e09 at=2\n", true, "", []eventlog.Type{eventlog.RunCreated}},
		{"a view that diverges", "write inv-1 e02 at=2\nfact step-1 e03 step_completed of=e02 at=3\nlist inv-2 after=- at=4 read=e03\nwrite inv-2 e04 at=5\n", false, "inv-2's view diverges", nil},
		{"leniently, a diverging writer writes nothing", "write inv-1 e02 at=2\nfact step-1 e03 step_completed of=e02 at=3\nlist inv-2 after=- at=4 read=e03\nwrite inv-2 e04 at=5\n", true, "",
			[]eventlog.Type{eventlog.RunCreated, eventlog.StepCreated, eventlog.StepCompleted}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s, err := Parse(head + tc.items)
			if err != nil {
				t.Fatal(err)
			}
			r, err := s.Execute(Options{Program: race, Lenient: tc.lenient})
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("Execute = %v, want an error saying %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []eventlog.Type
			for _, e := range r.Final {
				got = append(got, e.Type)
			}
			if !reflect.DeepEqual(got, tc.final) {
				t.Errorf("final log %v, want %v", got, tc.final)
			}
			for i, op := range r.Ops {
				if evs, ok := r.Pages[i]; ok && len(evs) != op.Read.N {
					t.Errorf("op %d: page of %d events, summary of %d", i, len(evs), op.Read.N)
				}
			}
		})
	}
}

// TestWriteView: a write derives from what its writer holds, built load
// by load as explain rebuilds a writer's view (forensics.Held): a load
// from the start (a reload, a snapshot preload) replaces what it held, a
// load from a cursor (a page read on, a delta a write's answer carried)
// adds its events, an event read twice is held once, and a load still
// open (its last page said more) is not held. Adding up every list line,
// as before, replayed a reload's events twice: the engine diverges on
// them, or derives from a view the runtime never held.
func TestWriteView(t *testing.T) {
	t.Parallel()
	// inv-1 creates step x (e02) and its timer (e03); the step completes
	// (e04). inv-2 then loads as each row says and writes what it derives.
	const head = `scheme ulid
outcome corrupted
start e01 at=0
list inv-1 after=- at=1 read=e01
write inv-1 e02,e03 at=2
fact step-1 e04 step_completed of=e02 at=5
`
	xfin := []eventlog.Type{eventlog.RunCreated, eventlog.StepCreated, eventlog.WaitCreated, eventlog.StepCompleted, eventlog.StepCreated}
	for _, tc := range []struct {
		name, loads, write string
		view               string          // the labels the last write derived from
		final              []eventlog.Type // the final log's types, in order
	}{
		{"one load", "list inv-2 after=- at=10 read=e01,e02,e03,e04\n", "write inv-2 e05 at=12\n", "e01,e02,e03,e04", xfin},
		{"a reload from the start replaces", "list inv-2 after=- at=10 read=e01,e02,e03\nlist inv-2 after=- at=11 read=e01,e02,e03,e04\n",
			"write inv-2 e05 at=12\n", "e01,e02,e03,e04", xfin},
		{"a snapshot preload, then a reload", "list inv-2 after=- at=10 snapshot read=e01,e02,e03\nlist inv-2 after=- at=11 read=e01,e02,e03,e04\n",
			"write inv-2 e05 at=12\n", "e01,e02,e03,e04", xfin},
		{"a reload that misses holds only what it read", "list inv-2 after=- at=10 read=e01,e02,e03,e04\nlist inv-2 after=- at=11 read=e01\n",
			"write inv-2 e05,e06 at=12\n", "e01",
			[]eventlog.Type{eventlog.RunCreated, eventlog.StepCreated, eventlog.WaitCreated, eventlog.StepCompleted, eventlog.StepCreated, eventlog.WaitCreated}},
		{"a load from a cursor adds", "list inv-2 after=- at=10 read=e01,e02,e03\nlist inv-2 after=e03 at=11 read=e04\n",
			"write inv-2 e05 at=12\n", "e01,e02,e03,e04", xfin},
		{"a page read on", "list inv-2 after=- at=10 more read=e01,e02\nlist inv-2 after=e02 at=11 read=e03,e04\n",
			"write inv-2 e05 at=12\n", "e01,e02,e03,e04", xfin},
		{"two answers from one cursor hold an event once", "list inv-2 after=- at=10 read=e01,e02\nlist inv-2 after=e02 at=11 snapshot read=e03\nlist inv-2 after=e02 at=11 snapshot read=e03,e04\n",
			"write inv-2 e05 at=12\n", "e01,e02,e03,e04", xfin},
		{"a load still open is not held", "list inv-2 after=- at=10 read=e01,e02,e03,e04\nlist inv-2 after=- at=11 more read=e01\n",
			"write inv-2 e05 at=12\n", "e01,e02,e03,e04", xfin},
		{"view= builds the other's view the same way", "list inv-9 after=- at=10 read=e01,e02,e03\nlist inv-9 after=- at=11 read=e01,e02,e03,e04\n",
			"write inv-2 e05 at=12 view=inv-9\n", "e01,e02,e03,e04", xfin},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s, err := Parse(head + tc.loads + tc.write)
			if err != nil {
				t.Fatal(err)
			}
			var from []string // the labels of the last write's view
			r, err := s.execute(Options{Program: race}, func(_ int, _ *Run, view []eventlog.Event) {
				from = labels(view)
			})
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.Join(from, ","); got != tc.view {
				t.Errorf("the write derived from %s, want %s", got, tc.view)
			}
			var got []eventlog.Type
			for _, e := range r.Final {
				got = append(got, e.Type)
			}
			if !reflect.DeepEqual(got, tc.final) {
				t.Errorf("final log %v, want %v", got, tc.final)
			}
		})
	}
}

// TestExecuteRecordsLoadsAndImplicit: a snapshot list is recorded as a
// snapshot read, a load by itself (forensics.Loads), and an implicit
// item's appends as implicit, by its actor (a start's by=).
func TestExecuteRecordsLoadsAndImplicit(t *testing.T) {
	t.Parallel()
	s, err := Parse(`scheme ulid
outcome corrupted
start e01 at=0 by=inv-1 implicit
list inv-1 after=- at=1 more read=e01
list inv-1 after=e01 at=1 snapshot read=e01
list inv-1 after=e01 at=2 read=-
write inv-1 e02 at=3 implicit
fact inv-1 e03 step_started of=e02 at=3
fail inv-1 e04 at=9 implicit
`)
	if err != nil {
		t.Fatal(err)
	}
	r, err := s.Execute(Options{Program: race})
	if err != nil {
		t.Fatal(err)
	}
	type rec struct {
		kind, actor        string
		snapshot, implicit bool
	}
	var got []rec
	for _, op := range r.Ops {
		got = append(got, rec{op.Kind, op.Actor, op.Snapshot, op.Implicit})
	}
	want := []rec{{history.OpAppend, "inv-1", false, true}, {history.OpList, "inv-1", false, false}, {history.OpList, "inv-1", true, false},
		{history.OpList, "inv-1", false, false}, {history.OpAppend, "inv-1", false, true}, {history.OpAppend, "inv-1", false, false},
		{history.OpAppend, "inv-1", false, true}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("ops %+v\nwant %+v", got, want)
	}
	var loads [][]int
	for _, ld := range forensics.Loads(r.Ops) {
		loads = append(loads, ld.Pages)
	}
	if want := [][]int{{1, 3}, {2}}; !reflect.DeepEqual(loads, want) {
		t.Errorf("loads %v, want %v (the snapshot a load by itself, the pages around it one load)", loads, want)
	}
}

// TestParseRejects: a word an item does not take is an error naming it,
// not a word read as nothing (a fixture is untrusted input).
func TestParseRejects(t *testing.T) {
	t.Parallel()
	const head = "scheme ulid\noutcome corrupted\n"
	for _, tc := range []struct{ line, err string }{
		{"write inv-1 e02 at=3 snapshot", `write takes no "snapshot"`},
		{"list inv-1 after=- at=1 implicit read=e01", `list takes no "implicit"`},
		{"inflight inv-1 step_created of=e01 at=1 implicit", `inflight takes no "implicit"`},
		{"list inv-1 after=- at=1 snapshot=yes read=e01", `snapshot takes no value`},
		{"fact step-1 e03 step_completed of=e02 at=3 dedup", `dedup needs a value`},
		{"write inv-1 e02 at=3 implicit implicit", `implicit given twice`},
		{"start e01 at=0 by=", `by= names no actor`},
		{"list inv-1 after=- at=1 read=e01 swap=0,1", `list takes no "swap"`},
	} {
		t.Run(tc.line, func(t *testing.T) {
			t.Parallel()
			_, err := Parse(head + tc.line + "\n")
			if err == nil || !strings.Contains(err.Error(), tc.err) || !strings.Contains(err.Error(), "line 3") {
				t.Errorf("Parse = %v, want an error on line 3 saying %q", err, tc.err)
			}
		})
	}
}

// FuzzParse: any text parses into a schedule or an error naming its
// line, a parsed schedule formats into text that parses again to the
// same text, and executes (leniently) without a panic.
func FuzzParse(f *testing.F) {
	for _, file := range fixtures(&testing.T{}) {
		if b, err := os.ReadFile(file); err == nil {
			f.Add(string(b))
		}
	}
	f.Add("scheme ulid\noutcome x\nwrite a -,- at=1 swap=0,1 payload=[1]\n")
	f.Add("scheme slot\noutcome x\nstart e1 at=0 by=inv-1 implicit\nlist inv-1 after=e1 at=1-2 more snapshot read=e1\nwrite inv-1 e2 at=3 implicit\n")
	f.Fuzz(func(t *testing.T, text string) {
		s, err := Parse(text)
		if err != nil {
			return
		}
		again, err := Parse(s.Format())
		if err != nil {
			t.Fatalf("Parse(Format()) = %v for\n%s", err, s.Format())
		}
		if again.Format() != s.Format() {
			t.Fatalf("Format(Parse(Format())) differs:\n%s\n%s", s.Format(), again.Format())
		}
		_, _ = s.Execute(Options{Program: race, Lenient: true})
	})
}

// labels are the ids of evs.
func labels(evs []eventlog.Event) []string {
	out := make([]string, len(evs))
	for i, e := range evs {
		out[i] = e.ID
	}
	return out
}

// TestViewsAreHeldBy: the view each write derives from, kept up load by
// load as the schedule executes, is what forensics.HeldBy rebuilds from
// the whole history recorded up to the write, in key order: for every
// schedule of explain's testdata (with their program, pair) and shrink's
// recorded step-storm case (with its scenario's program).
func TestViewsAreHeldBy(t *testing.T) {
	t.Parallel()
	type tc struct {
		text string
		prog engine.Program
	}
	cases := map[string]tc{}
	for _, f := range fixtures(t) {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		cases[filepath.Base(f)] = tc{string(b), pair}
	}
	b, err := os.ReadFile(filepath.Join(filetest.Repo("internal", "tools", "shrink", "testdata"), "schema1-stepstorm.golden"))
	if err != nil {
		t.Fatal(err)
	}
	text, _, _ := strings.Cut(string(b), "---\n")
	sc, err := scenarios.Lookup("step-storm")
	if err != nil {
		t.Fatal(err)
	}
	cases["schema1-stepstorm"] = tc{text, sc.Program}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			s, err := Parse(c.text)
			if err != nil {
				t.Fatal(err)
			}
			writes := 0
			_, err = s.execute(Options{Program: c.prog}, func(at int, r *Run, view []eventlog.Event) {
				writes++
				from := or(s.Items[at].View, s.Items[at].Actor)
				h := forensics.HeldBy(r.Ops, from, func(i int) []string { return labels(r.Pages[i]) })
				want := slices.Clone(h.Keys)
				slices.SortFunc(want, func(a, b string) int { return forensics.KeyCompare(s.Scheme)(byLabel(r, a), byLabel(r, b)) })
				if got := labels(view); !slices.Equal(got, want) {
					t.Errorf("item %d (write %s): view %v, HeldBy %v", at+1, from, got, want)
				}
			})
			if err != nil {
				t.Fatal(err)
			}
			if writes == 0 {
				t.Fatal("no write derived a view")
			}
		})
	}
}

// byLabel is the event of r labelled l.
func byLabel(r *Run, l string) eventlog.Event {
	for _, e := range r.Final {
		if e.ID == l {
			return e
		}
	}
	return eventlog.Event{ID: l}
}
