package explain

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stormctl/stormctl/internal/base/texttest"
	"github.com/stormctl/stormctl/internal/engine"
	"github.com/stormctl/stormctl/internal/engines/builtinengines"
	"github.com/stormctl/stormctl/internal/eventlog"
	"github.com/stormctl/stormctl/internal/history"
	"github.com/stormctl/stormctl/internal/storm/stormdir"
	"github.com/stormctl/stormctl/scenarios"
)

// runtimeFixture is a run of the devkit engine cut from a real storm
// (testdata/devkit/<name>/): run.json says which run, of which storm, and
// how it was cut; events.jsonl is its final log and history.jsonl its
// history, in the storm's own formats.
type runtimeFixture struct {
	Run      string          `json:"run"`
	Cell     string          `json:"cell"`
	Scenario string          `json:"scenario"`
	Engine   string          `json:"engine"`
	Outcome  history.Outcome `json:"outcome"`
	Detail   string          `json:"detail"`
	Ended    time.Time       `json:"ended"`
}

// readRuntimeFixture reads the fixture in dir into the Input the pipeline
// would give explain for that run (pipeline.StoredCell: main's knobs, the
// engine that ran it, the scenario's program).
func readRuntimeFixture(t *testing.T, dir string) Input {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "run.json"))
	if err != nil {
		t.Fatal(err)
	}
	var fx runtimeFixture
	if err := json.Unmarshal(b, &fx); err != nil {
		t.Fatalf("%s/run.json: %v", dir, err)
	}
	sc, err := scenarios.Lookup(fx.Scenario)
	if err != nil {
		t.Fatal(err)
	}
	in := Input{RunID: fx.Run, Cell: fx.Cell, Outcome: fx.Outcome, Detail: fx.Detail, Ended: fx.Ended,
		Program: sc.Program, Steps: sc.Steps,
		Knobs: engine.Knobs{Scheme: eventlog.SchemeULID, Policy: engine.DefaultPolicy(), Engine: fx.Engine}}
	if err := stormdir.EachLine(filepath.Join(dir, "events.jsonl"), func(e eventlog.Event) error {
		in.Final = append(in.Final, e)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := stormdir.EachLine(filepath.Join(dir, "history.jsonl"), func(op history.Op) error {
		in.Ops = append(in.Ops, op)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return in
}

// TestRuntimeGolden explains every devkit-engine run of testdata/devkit,
// cut from real storms, and compares the class and narrative with its
// golden file (-update rewrites them). The fixture's name says the class
// it must get. None is judged by the model's replay: no reference replay,
// no missing event marked decisive, no reader's replay, never wake-order.
func TestRuntimeGolden(t *testing.T) {
	t.Parallel()
	dirs, err := filepath.Glob(filepath.Join("testdata", "devkit", "*", "run.json"))
	if err != nil || len(dirs) == 0 {
		t.Fatalf("no fixtures: %v", err)
	}
	for _, file := range dirs {
		dir := filepath.Dir(file)
		name := filepath.Base(dir)
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ex := Classify(readRuntimeFixture(t, dir))
			if want, _, _ := strings.Cut(name, "."); ex.Class != want {
				t.Errorf("class = %s, want %s\n%s", ex.Class, want, golden(ex))
			}
			if ex.Reference != nil {
				t.Errorf("a devkit run was judged by a reference replay: %+v", ex.Reference)
			}
			for _, m := range ex.Missing {
				if m.Decisive {
					t.Errorf("missing %s marked decisive without a replay", m.name())
				}
			}
			if d := ex.Disagreed; d != nil && d.Divergence != "" {
				t.Errorf("reader %s given a replay's divergence: %s", d.Actor, d.Divergence)
			}
			texttest.Golden(t, filepath.Join("testdata", "devkit", name+".golden"), golden(ex), *update)
		})
	}
}

// TestRuntimeStalePrefixInFlight pins what the recorded devkit-postgres
// run shows: inv-172's view was exactly the final log's first 170 events
// (two loads, every page a prefix), and the one event the final log
// places between it and the write the runtime's error names is step-106's
// step_completed, committed after inv-172's last page: a prefix extended
// underneath, not a view that was itself out of order.
func TestRuntimeStalePrefixInFlight(t *testing.T) {
	t.Parallel()
	in := readRuntimeFixture(t, filepath.Join("testdata", "devkit", "stale-prefix.inflight"))
	ex := Classify(in)
	if ex.View == nil || !ex.View.Prefix || ex.View.N != 170 || ex.View.Loads != 2 {
		t.Fatalf("view = %+v, want the exact 170-event prefix over 2 loads", ex.View)
	}
	if ex.Writer == nil || ex.Writer.Actor != "inv-172" || ex.Offending == nil || ex.Offending.Index != 174 {
		t.Fatalf("writer %+v, offending %+v: want inv-172's step_created at index 174", ex.Writer, ex.Offending)
	}
	if len(ex.Missing) != 1 {
		t.Fatalf("missing = %+v, want step-106's step_completed alone", ex.Missing)
	}
	m := ex.Missing[0]
	last := ex.View.Pages[len(ex.View.Pages)-1]
	if m.Type != eventlog.StepCompleted || m.Writer != "step-106" || m.Within || !m.CommittedAt.After(last.End) || !m.MintedAt.Before(ex.Offending.MintedAt) {
		t.Errorf("missing = %+v: want step-106's step_completed, minted before the write, committed after the last page (%s)", m, last.End)
	}
	if ex.EngineRelation != relOffending {
		t.Errorf("engine relation = %q, want %q", ex.EngineRelation, relOffending)
	}
}

// TestRuntimeEngineSwitch: what switches the model's replay off is the
// engine the input names: the same recorded run read as the model's (no
// engine named, or the model) is judged where the model's replay of its
// final log first disagrees, as every model run is, not where the
// runtime's error points.
func TestRuntimeEngineSwitch(t *testing.T) {
	t.Parallel()
	in := readRuntimeFixture(t, filepath.Join("testdata", "devkit", "stale-prefix.inflight"))
	for _, eng := range []string{"", builtinengines.Engines().Model()} {
		in.Engine = eng
		ex := Classify(in)
		if ex.Divergence == "" || ex.Divergence == runtimeNames {
			t.Errorf("engine %q: divergence %q, want the model replay's", eng, ex.Divergence)
		}
	}
}

// TestRuntimeStuckNoReplay: a stuck run is classed by a replay of its
// final log (a lost wake-up) only when explain has a reference replay of
// its engine: the same recorded run read as the devkit engine's is
// classed from its pending operations, never from the model's replay.
func TestRuntimeStuckNoReplay(t *testing.T) {
	t.Parallel()
	const lostWake = "a replay of the final log"
	in := readFixture(t, filepath.Join("testdata", "classify", "blocked-branch.lostwake.txt"))
	for _, tc := range []struct {
		engine string
		replay bool
	}{{"", true}, {builtinengines.Engines().Model(), true}, {builtinengines.Engines().Published(), false}} {
		in.Engine = tc.engine
		ex := Classify(in)
		replayed := slices.ContainsFunc(ex.Evidence, func(e string) bool { return strings.Contains(e, lostWake) })
		if replayed != tc.replay || ex.Class == "" {
			t.Errorf("engine %q: class %q, evidence %q: want it %s", tc.engine, ex.Class, ex.Evidence,
				map[bool]string{true: "judged by the replay", false: "judged without it"}[tc.replay])
		}
	}
}

// TestRuntimeEndedTwice: a run whose final log holds a second terminal
// event (world-local 4.4.1 let two run_failed in at once) says so in its
// evidence, as a world-layer finding; a run that ended once says nothing
// of it. (The fixture's log is cut before its end: the test ends it.)
func TestRuntimeEndedTwice(t *testing.T) {
	t.Parallel()
	in := readRuntimeFixture(t, filepath.Join("testdata", "devkit", "stale-prefix.inflight"))
	const says = "the world ended the run more than once"
	last := in.Final[len(in.Final)-1]
	end := func(id string) eventlog.Event {
		return eventlog.Event{ID: id, Type: eventlog.RunFailed, MintedAt: last.MintedAt, CommittedAt: last.CommittedAt}
	}
	for _, tc := range []struct {
		name string
		ends []eventlog.Event
		says bool
	}{
		{"ended once", []eventlog.Event{end("evnt_zz1")}, false},
		{"ended twice", []eventlog.Event{end("evnt_zz1"), end("evnt_zz2")}, true},
	} {
		in := in
		in.Final = append(slices.Clone(in.Final), tc.ends...)
		ex := Classify(in)
		got := slices.ContainsFunc(ex.Evidence, func(s string) bool { return strings.Contains(s, says) && strings.Contains(s, "evnt_zz2") })
		if got != tc.says {
			t.Errorf("%s: evidence %q; a line saying %q: %v, want %v", tc.name, ex.Evidence, says, got, tc.says)
		}
	}
}
