package schedule

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/stormctl/stormctl/engine"
	"github.com/stormctl/stormctl/eventlog"
)

// race calls step "x", racing it against a one-second sleep, then "x-fin"
// when the step won or "x-rec" when the timer did.
func race(c *engine.Ctx) (any, error) {
	r := c.Race(c.Step("x", 0), c.Sleep(time.Second))
	if _, err := c.Await(r); err != nil {
		return nil, err
	}
	next := "x-fin"
	if r.Winner() == 1 {
		next = "x-rec"
	}
	return c.Await(c.Step(next, 0))
}

// fixtures are the schedules of explain's testdata.
func fixtures(t *testing.T) []string {
	t.Helper()
	var files []string
	for _, dir := range []string{"classify", "pages"} {
		got, err := filepath.Glob(filepath.Join("..", "explain", "testdata", dir, "*.txt"))
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

// FuzzParse: any text parses into a schedule or an error naming its
// line, and a parsed schedule formats into text that parses again.
func FuzzParse(f *testing.F) {
	for _, file := range fixtures(&testing.T{}) {
		if b, err := os.ReadFile(file); err == nil {
			f.Add(string(b))
		}
	}
	f.Add("scheme ulid\noutcome x\nwrite a -,- at=1 swap=0,1 payload=[1]\n")
	f.Fuzz(func(t *testing.T, text string) {
		s, err := Parse(text)
		if err != nil {
			return
		}
		if _, err := Parse(s.Format()); err != nil {
			t.Fatalf("Parse(Format()) = %v for\n%s", err, s.Format())
		}
		_, _ = s.Execute(Options{Program: race, Lenient: true})
	})
}
