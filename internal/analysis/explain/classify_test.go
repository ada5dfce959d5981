package explain

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stormctl/stormctl/forensics"
	"github.com/stormctl/stormctl/internal/base/texttest"
	"github.com/stormctl/stormctl/internal/engine"
	"github.com/stormctl/stormctl/internal/eventlog"
	"github.com/stormctl/stormctl/internal/tools/schedule"
)

var update = flag.Bool("update", false, "rewrite the golden files of testdata/classify")

// t0 is the origin of the fixtures' millisecond times.
var t0 = schedule.Origin

func at(ms int) time.Time { return schedule.At(ms) }

// pair is the fixtures' workflow: two branches, x and y, each racing its
// step against a one-second sleep, then calling <name>-fin when the step
// won or <name>-rec when the timer did.
func pair(c *engine.Ctx) (any, error) {
	branch := func(name string) func(c *engine.Ctx) (any, error) {
		return func(c *engine.Ctx) (any, error) {
			r := c.Race(c.Step(name, 0), c.Sleep(time.Second))
			if _, err := c.Await(r); err != nil {
				return nil, err
			}
			next := name + "-fin"
			if r.Winner() == 1 {
				next = name + "-rec"
			}
			var out string
			err := c.AwaitInto(c.Step(next, 0), &out)
			return out, err
		}
	}
	x, y := c.Go(branch("x")), c.Go(branch("y"))
	var a, b string
	if err := c.AwaitInto(x, &a); err != nil {
		return nil, err
	}
	if err := c.AwaitInto(y, &b); err != nil {
		return nil, err
	}
	return []string{a, b}, nil
}

// fixtureRun is the run id every fixture's events belong to.
const fixtureRun = schedule.DefaultRun

// parseFixture executes a schedule of testdata (package schedule's
// format: explain's fixtures are schedules of the pair program) into the
// Input explaining its run needs.
func parseFixture(text string) (Input, error) {
	s, err := schedule.Parse(text)
	if err != nil {
		return Input{}, err
	}
	r, err := s.Execute(schedule.Options{Program: pair})
	if err != nil {
		return Input{}, err
	}
	return Input{RunID: r.RunID, Cell: "fixture", Program: pair, Knobs: r.Knobs, Outcome: r.Outcome, Detail: r.Detail,
		Final: r.Final, Ops: r.Ops, Ended: r.Ended, Quiet: r.Quiet, Steps: r.Steps}, nil
}

// readFixture reads and parses the fixture file, failing t when it
// cannot.
func readFixture(t *testing.T, file string) Input {
	t.Helper()
	text, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	in, err := parseFixture(string(text))
	if err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	return in
}

// golden renders an explanation the way the golden files hold it.
func golden(ex Explanation) string {
	var b strings.Builder
	fmt.Fprintf(&b, "class: %s\nsummary: %s\n", ex.Class, ex.Summary)
	for _, s := range ex.Steps {
		fmt.Fprintf(&b, "%s\n", s)
	}
	for _, e := range ex.Evidence {
		fmt.Fprintf(&b, "evidence: %s\n", e)
	}
	for _, e := range ex.MissingEvidence {
		fmt.Fprintf(&b, "missing evidence: %s\n", e)
	}
	return b.String()
}

// TestClassifyGolden explains every hand-built history of
// testdata/classify and compares the class and narrative with its golden
// file (go test ./explain -run Golden -update rewrites them).
func TestClassifyGolden(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob(filepath.Join("testdata", "classify", "*.txt"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no fixtures: %v", err)
	}
	for _, file := range files {
		name := strings.TrimSuffix(filepath.Base(file), ".txt")
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ex := Classify(readFixture(t, file))
			// The fixture's name says the class it must get.
			if want, _, _ := strings.Cut(name, "."); ex.Class != want {
				t.Errorf("class %q, want %q\n%s", ex.Class, want, golden(ex))
			}
			texttest.Golden(t, strings.TrimSuffix(file, ".txt")+".golden", golden(ex), *update)
		})
	}
}

// TestCursorSkipAgreesWithForensics: every fixture's missing events that
// explain calls skipped are cursor skips forensics counts for the same
// run, so a run classed cursor-skip never reads 0 in the cursor skips
// column. The cursor-skip fixture (two single-page loads, the second
// reading on from a cursor the first left past the missing event) is one
// they disagreed on: forensics counted skips within one load only.
func TestCursorSkipAgreesWithForensics(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob(filepath.Join("testdata", "classify", "*.txt"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no fixtures: %v", err)
	}
	classed := 0
	for _, file := range files {
		in := readFixture(t, file)
		ex := Classify(in)
		skipped := 0
		for _, m := range ex.Missing {
			if m.Skipped {
				skipped++
			}
		}
		got := forensics.AnalyzeRun(forensics.RunInput{Scheme: in.Scheme, Final: in.Final, Ops: in.Ops}).Findings.CursorSkips
		if ex.Class == CursorSkip {
			classed++
			if got == 0 {
				t.Errorf("%s: class %s, but forensics counts 0 cursor skips", file, ex.Class)
			}
		}
		if got < skipped {
			t.Errorf("%s: explain calls %d missing events skipped, forensics counts %d cursor skips", file, skipped, got)
		}
	}
	if classed == 0 {
		t.Fatal("no fixture is classed cursor-skip: the agreement is untested")
	}
}

// TestEngineLink: the event the engine's error names (by event id or by
// correlation id) is related to the offending event, and the narrative's
// last step says how. The fixture is stale-prefix's, with a step start of
// x-rec (its operation) and of y-fin (by a worker that read nothing)
// after it.
func TestEngineLink(t *testing.T) {
	t.Parallel()
	text, err := os.ReadFile(filepath.Join("testdata", "classify", "stale-prefix.txt"))
	if err != nil {
		t.Fatal(err)
	}
	base := string(text) + "fact step-3 e14 step_started of=e12 at=1500\nfact step-4 e15 step_started of=e11 at=1501\n"
	tests := []struct {
		detail   string
		named    string // the event id named, "" for none
		relation string
		says     string
	}{
		{detail: "replay divergence: at e12", named: "e12", relation: relOffending, says: "the offending event (step 3)"},
		{detail: `step event step_created for step_0b36d775a38610 belongs to "x-rec"`, named: "e12", relation: relOffending, says: "the offending event (step 3)"},
		{detail: "Replay could not consume event step_started for e14", named: "e14", relation: relSameOperation, says: "of the same operation as the offending event (step 3)"},
		{detail: `step event step_created for step_0b36d775a3860f belongs to "y-fin"`, named: "e11", relation: relSameWrite, says: "which inv-3 wrote with the offending event at step 2, after the same view (step 1)"},
		{detail: "unexpected event e09", named: "e09", relation: relMissing, says: "which the writer's view lacked (step 1)"},
		{detail: "unexpected event e13", named: "e13", relation: relDownstream, says: "written by inv-5 at 00:00:01.403 from a view that held the offending event (step 3)"},
		{detail: "unexpected event e15", named: "e15", relation: relLater, says: "which the final log places after the offending event (step 3)"},
		{detail: "unexpected event e02", named: "e02", relation: relEarlier, says: "which the final log places before the offending event (step 3)"},
		// A word that contains an id is not that id; an id of no event
		// of the log links nothing.
		{detail: "unexpected event e12x and step_0b36d775a38610a, run wrun_1"},
		{detail: ""},
	}
	for _, tt := range tests {
		t.Run(tt.detail, func(t *testing.T) {
			t.Parallel()
			in, err := parseFixture(base)
			if err != nil {
				t.Fatal(err)
			}
			in.Detail = tt.detail
			ex := Classify(in)
			if ex.Class != StalePrefix || ex.Offending == nil || ex.Offending.ID != "e12" {
				t.Fatalf("the fixture is no longer stale-prefix at e12:\n%s", golden(ex))
			}
			last := ex.Steps[len(ex.Steps)-1]
			if tt.named == "" {
				if ex.EngineNames != nil || ex.EngineRelation != "" || strings.Contains(last, "the error names") {
					t.Fatalf("%q names nothing, yet the explanation links %+v (%s): %s", tt.detail, ex.EngineNames, ex.EngineRelation, last)
				}
				return
			}
			if ex.EngineNames == nil || ex.EngineNames.ID != tt.named || ex.EngineRelation != tt.relation {
				t.Fatalf("%q: engine names %+v as %q, want %s as %q", tt.detail, ex.EngineNames, ex.EngineRelation, tt.named, tt.relation)
			}
			if !strings.Contains(last, "the error names ") || !strings.Contains(last, tt.says) {
				t.Errorf("last step %q does not say %q", last, tt.says)
			}
		})
	}
}

// TestDuplicateStepsManyCreations: a duplicate-create narrative names the
// first creations one step each and folds the rest into one, and its last
// step points at the steps that name the entity.
func TestDuplicateStepsManyCreations(t *testing.T) {
	t.Parallel()
	var d Duplicate
	d.Key = "wait_created/w1"
	for i := range 5 {
		d.Creations = append(d.Creations, Event{Index: 3 + i, ID: fmt.Sprintf("e%d", i), Type: eventlog.WaitCreated, CorrelationID: "w1",
			Writer: fmt.Sprintf("inv-%d", i+1), CommittedAt: at(10 * (i + 1))})
	}
	ex := Explanation{Outcome: "corrupted", Class: DuplicateCreate, Duplicates: []Duplicate{d}, Offending: &d.Creations[1],
		EngineError: "replay divergence: wait w1", EngineNames: &d.Creations[0], EngineRelation: relDuplicate}
	finish(&ex)
	want := []string{
		"1. let inv-1 write wait_created w1",
		"2. then inv-2 wrote wait_created w1 again",
		"3. then inv-3 wrote wait_created w1 again",
		"4. then 2 more wait_created for it were written",
		"5. the engine raised: replay divergence: wait w1; the error names wait_created w1, the entity created more than once (steps 1, 2 and 3)",
	}
	if len(ex.Steps) != len(want) {
		t.Fatalf("steps %q, want %d", ex.Steps, len(want))
	}
	for i, w := range want {
		if !strings.HasPrefix(ex.Steps[i], w) {
			t.Errorf("step %d = %q, want it to start %q", i+1, ex.Steps[i], w)
		}
	}
	if !strings.HasPrefix(ex.Summary, "duplicate-create: the world accepted 5 wait_created for w1 (written by inv-1, inv-2, inv-3, inv-4, inv-5)") ||
		!strings.HasSuffix(ex.Summary, "the engine's error names it") {
		t.Errorf("summary %q", ex.Summary)
	}
}

// TestEveryClassDescribed: explain --help lists every class with its
// description, from Describe.
func TestEveryClassDescribed(t *testing.T) {
	t.Parallel()
	for _, c := range Classes() {
		if Describe(c) == "" {
			t.Errorf("class %s has no description", c)
		}
	}
}
