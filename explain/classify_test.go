package explain

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stormctl/stormctl/engine"
	"github.com/stormctl/stormctl/eventlog"
	"github.com/stormctl/stormctl/forensics"
	"github.com/stormctl/stormctl/history"
	"github.com/stormctl/stormctl/internal/texttest"
)

var update = flag.Bool("update", false, "rewrite the golden files of testdata/classify")

// t0 is the origin of the fixtures' millisecond times.
var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func at(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }

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
const fixtureRun = "run-fx"

// fixture builds an Input from the text format of testdata/classify, one
// item a line ('#' starts a comment):
//
//	scheme ulid|seq|sequence|slot      ids positional|callsite      wake ordered|engine
//	outcome NAME                        detail TEXT                    ended MS
//	quiet MS                            steps NAME=MS,...
//	start LABEL at=MS                   the starter writes run_created
//	list ACTOR after=LABEL|- at=MS[-MS] [more] read=LABEL,...|-
//	listerr ACTOR after=LABEL|- at=MS err=hole|gap [slot=N above=M]
//	write ACTOR LABEL,... at=MS [commit=D,...] [swap=I,J] [view=ACTOR]
//	fact ACTOR LABEL TYPE of=LABEL at=MS [commit=D]
//	fail ACTOR LABEL at=MS [commit=D]
//	inflight ACTOR TYPE of=LABEL at=MS[-MS] [err=CLASS]
//
// Labels are event ids; under ulid they sort in key order as written, under
// the positioned schemes an event's seq is its label's number (e03: 3).
// write replays what ACTOR has read (its list lines so far) with the
// fixture's program and policies and appends the first decisions it
// derives, one append each, as the labels given, minted 1 ms apart from
// MS and committed D ms (default 1; one D per label, or one for all)
// after their mint; swap=I,J swaps the correlation ids of decisions I and
// J first (a writer whose wake drew them in the other order); view=OTHER
// derives from what OTHER has read instead (a writer with no load of its
// own). fact writes a fact of the operation LABEL
// created; fail writes run_failed; steps gives each named step a
// function whose work lasts MS (how long a started step works); inflight records an append of a fact
// of LABEL's operation that never committed: it started at the first MS
// and returned at the second (with err's class), or not by the run's end.
type fixture struct {
	in     Input
	events map[string]eventlog.Event
	views  map[string][]string
}

func parseFixture(text string) (Input, error) {
	fx := &fixture{in: Input{RunID: fixtureRun, Cell: "fixture", Program: pair, Knobs: engine.Knobs{Policy: engine.Policy{IDs: engine.IDsPositional, Wake: engine.WakeOrdered}}},
		events: map[string]eventlog.Event{}, views: map[string][]string{}}
	for _, l := range texttest.Lines(text) {
		if err := fx.item(l.Words); err != nil {
			return Input{}, fmt.Errorf("line %d: %w", l.N, err)
		}
	}
	if fx.in.Scheme == "" || fx.in.Outcome == "" {
		return Input{}, fmt.Errorf("a fixture needs a scheme and an outcome")
	}
	return fx.in, nil
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

// kv parses key=value words.
func kv(words []string) map[string]string {
	m := map[string]string{}
	for _, w := range words {
		k, v, ok := strings.Cut(w, "=")
		if !ok {
			m[w] = ""
			continue
		}
		m[k] = v
	}
	return m
}

func parseMS(s string) (int, error) {
	n, err := strconv.Atoi(s)
	if err != nil {
		return 0, fmt.Errorf("bad time %q", s)
	}
	return n, nil
}

func (fx *fixture) item(f []string) error {
	switch f[0] {
	case "scheme":
		s, err := eventlog.ParseScheme(f[1])
		fx.in.Scheme = s
		return err
	case "ids":
		fx.in.IDs = engine.IDPolicy(f[1])
	case "wake":
		fx.in.Wake = engine.WakePolicy(f[1])
	case "outcome":
		fx.in.Outcome = history.Outcome(f[1])
	case "detail":
		fx.in.Detail = strings.Join(f[1:], " ")
	case "ended":
		t, err := parseMS(f[1])
		fx.in.Ended = at(t)
		return err
	case "quiet":
		t, err := parseMS(f[1])
		fx.in.Quiet = time.Duration(t) * time.Millisecond
		return err
	case "steps":
		return fx.steps(f[1])
	case "start":
		t, err := parseMS(kv(f[2:])["at"])
		if err != nil {
			return err
		}
		fx.commit("starter", []eventlog.Event{{ID: f[1], Type: eventlog.RunCreated, Payload: json.RawMessage(`null`)}}, t, 1)
	case "list":
		return fx.list(f[1], kv(f[2:]))
	case "listerr":
		return fx.listErr(f[1], kv(f[2:]))
	case "write":
		return fx.write(f[1], strings.Split(f[2], ","), kv(f[3:]))
	case "fact":
		return fx.fact(f[1], f[2], eventlog.Type(f[3]), kv(f[4:]))
	case "inflight":
		return fx.inflight(f[1], eventlog.Type(f[2]), kv(f[3:]))
	case "fail":
		a := kv(f[3:])
		t, err := parseMS(a["at"])
		if err != nil {
			return err
		}
		e := eventlog.Event{ID: f[2], Type: eventlog.RunFailed, Payload: engine.FailureDraft(engine.CodeCorrupted, fx.in.Detail).Payload}
		fx.commit(f[1], []eventlog.Event{e}, t, delay(a))
	default:
		return fmt.Errorf("unknown item %q", f[0])
	}
	return nil
}

func delay(a map[string]string) int { return delays(a)(0) }

// delays returns the commit delay of the i-th event written.
func delays(a map[string]string) func(i int) int {
	ds := strings.Split(a["commit"], ",")
	return func(i int) int {
		if d, err := strconv.Atoi(ds[min(i, len(ds)-1)]); err == nil {
			return d
		}
		return 1
	}
}

// seqOf is a label's number (e03: 3).
func seqOf(label string) int64 {
	n, _ := strconv.ParseInt(strings.TrimLeft(label, "abcdefghijklmnopqrstuvwxyz"), 10, 64)
	return n
}

// commit appends evs, one append each, minted 1 ms apart from t and
// committed d ms after their mint.
func (fx *fixture) commit(actor string, evs []eventlog.Event, t, d int) {
	fx.commitEach(actor, evs, t, func(int) int { return d })
}

func (fx *fixture) commitEach(actor string, evs []eventlog.Event, t int, d func(int) int) {
	for i, e := range evs {
		mint, done := at(t+i), at(t+i+d(i))
		e.RunID, e.MintedAt, e.CommittedAt = fixtureRun, mint, done
		if fx.in.Scheme.Positioned() {
			e.Seq = seqOf(e.ID)
		}
		fx.events[e.ID] = e
		fx.in.Final = append(fx.in.Final, e)
		fx.in.Ops = append(fx.in.Ops, history.Op{Kind: history.OpAppend, Actor: actor, RunID: fixtureRun, Start: mint, End: done,
			Wrote: []history.OpEvent{{Type: e.Type, CorrelationID: e.CorrelationID, ID: e.ID, Seq: e.Seq, MintedAt: mint, CommittedAt: done}}})
	}
}

func (fx *fixture) cursor(label string) eventlog.Cursor {
	if label == "-" || label == "" {
		return eventlog.Cursor{}
	}
	if fx.in.Scheme.Positioned() {
		return eventlog.Cursor{Seq: seqOf(label)}
	}
	return eventlog.Cursor{ID: label}
}

func span(s string) (time.Time, time.Time, error) {
	a, b, found := strings.Cut(s, "-")
	start, err := parseMS(a)
	if err != nil {
		return time.Time{}, time.Time{}, err
	}
	end := start
	if found {
		if end, err = parseMS(b); err != nil {
			return time.Time{}, time.Time{}, err
		}
	}
	return at(start), at(end), nil
}

func (fx *fixture) list(actor string, a map[string]string) error {
	start, end, err := span(a["at"])
	if err != nil {
		return err
	}
	op := history.Op{Kind: history.OpList, Actor: actor, RunID: fixtureRun, Start: start, End: end, After: fx.cursor(a["after"]), Limit: 100}
	var page eventlog.Page
	if r := a["read"]; r != "-" {
		for _, l := range strings.Split(r, ",") {
			e, ok := fx.events[l]
			if !ok {
				return fmt.Errorf("list reads %s, which is not written yet", l)
			}
			page.Events = append(page.Events, e)
			fx.views[actor] = append(fx.views[actor], l)
		}
	}
	_, page.More = a["more"]
	op.Read = history.Summarize(page)
	fx.in.Ops = append(fx.in.Ops, op)
	return nil
}

func (fx *fixture) listErr(actor string, a map[string]string) error {
	start, end, err := span(a["at"])
	if err != nil {
		return err
	}
	slot, _ := strconv.ParseInt(a["slot"], 10, 64)
	above, _ := strconv.ParseInt(a["above"], 10, 64)
	fx.in.Ops = append(fx.in.Ops, history.Op{Kind: history.OpList, Actor: actor, RunID: fixtureRun, Start: start, End: end,
		After: fx.cursor(a["after"]), Limit: 100, Err: a["err"], ErrText: a["err"], Slot: slot, Above: above})
	return nil
}

func (fx *fixture) write(actor string, labels []string, a map[string]string) error {
	t, err := parseMS(a["at"])
	if err != nil {
		return err
	}
	from := actor
	if v, ok := a["view"]; ok {
		from = v
	}
	var log []eventlog.Event
	for _, l := range fx.views[from] {
		log = append(log, fx.events[l])
	}
	slices.SortFunc(log, func(x, y eventlog.Event) int {
		if fx.in.Scheme.Positioned() {
			return int(x.Seq - y.Seq)
		}
		return strings.Compare(x.ID, y.ID)
	})
	out := engine.Replay(pair, fixtureRun, log, fx.in.IDs, fx.in.Wake, at(t))
	if out.Divergence != nil {
		return fmt.Errorf("%s's view diverges: %v", actor, out.Divergence)
	}
	ds := out.Decisions
	if s := a["swap"]; s != "" {
		i, _ := strconv.Atoi(s[:strings.IndexByte(s, ',')])
		j, _ := strconv.Atoi(s[strings.IndexByte(s, ',')+1:])
		ds[i].CorrelationID, ds[j].CorrelationID = ds[j].CorrelationID, ds[i].CorrelationID
	}
	if len(ds) < len(labels) {
		return fmt.Errorf("%s derives %d decisions, %d labels given", actor, len(ds), len(labels))
	}
	var evs []eventlog.Event
	for i, l := range labels {
		d := ds[i]
		evs = append(evs, eventlog.Event{ID: l, Type: d.Type, CorrelationID: d.CorrelationID, Token: d.Token, Payload: d.Payload})
	}
	fx.commitEach(actor, evs, t, delays(a))
	return nil
}

func (fx *fixture) fact(actor, label string, typ eventlog.Type, a map[string]string) error {
	t, err := parseMS(a["at"])
	if err != nil {
		return err
	}
	of, ok := fx.events[a["of"]]
	if !ok {
		return fmt.Errorf("fact of %q, which is not written", a["of"])
	}
	e := eventlog.Event{ID: label, Type: typ, CorrelationID: of.CorrelationID}
	switch typ {
	case eventlog.StepCompleted:
		e.Payload = json.RawMessage(`{"result":"ok"}`)
	case eventlog.WaitCompleted:
		var p struct {
			ResumeAt time.Time `json:"resumeAt"`
		}
		_ = json.Unmarshal(of.Payload, &p)
		e.Payload, _ = json.Marshal(p)
	}
	fx.commit(actor, []eventlog.Event{e}, t, delay(a))
	return nil
}

func (fx *fixture) steps(list string) error {
	fx.in.Steps = map[string]engine.StepFunc{}
	for _, s := range strings.Split(list, ",") {
		name, v, _ := strings.Cut(s, "=")
		t, err := parseMS(v)
		if err != nil {
			return err
		}
		fx.in.Steps[name] = func(json.RawMessage) (engine.StepOutcome, error) {
			return engine.StepOutcome{Result: "ok", Took: time.Duration(t) * time.Millisecond}, nil
		}
	}
	return nil
}

func (fx *fixture) inflight(actor string, typ eventlog.Type, a map[string]string) error {
	start, end, err := span(a["at"])
	if err != nil {
		return err
	}
	if !strings.Contains(a["at"], "-") {
		end = time.Time{}
	}
	of, ok := fx.events[a["of"]]
	if !ok {
		return fmt.Errorf("inflight of %q, which is not written", a["of"])
	}
	fx.in.Ops = append(fx.in.Ops, history.Op{Kind: history.OpAppend, Actor: actor, RunID: fixtureRun, Start: start, End: end,
		Err: a["err"], ErrText: a["err"], Wrote: []history.OpEvent{{Type: typ, CorrelationID: of.CorrelationID}}})
	return nil
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
			got := golden(ex)
			path := strings.TrimSuffix(file, ".txt") + ".golden"
			if *update {
				if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run with -update to write it)", err)
			}
			if got != string(want) {
				t.Errorf("explanation differs from %s:\n--- got\n%s--- want\n%s", path, got, want)
			}
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
