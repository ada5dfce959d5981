package fidelity_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stormctl/stormctl/forensics"
	"github.com/stormctl/stormctl/internal/eventlog"
	"github.com/stormctl/stormctl/internal/history"
	"github.com/stormctl/stormctl/internal/tools/fidelity"
	"github.com/stormctl/stormctl/reports"
	"github.com/stormctl/stormctl/worlds"
)

// refCell is a cell of outcome counts and read findings.
func refCell(outcomes map[history.Outcome]int, reads, nonPrefix int) *reports.Cell {
	c := &reports.Cell{CellKey: history.NewCellKey("devkit-local", fidelity.StepStorm, fidelity.Main)}
	for o, n := range outcomes {
		for range n {
			c.Add(reports.RunRecord{Outcome: o})
		}
	}
	c.Reads, c.NonPrefixReads = reads, nonPrefix
	return c
}

func figure(t *testing.T, figs []fidelity.Figure, name string) fidelity.Figure {
	t.Helper()
	for _, f := range figs {
		if f.Name == name {
			return f
		}
	}
	t.Fatalf("no figure %q in %d figures", name, len(figs))
	return fidelity.Figure{}
}

func TestCompareGaps(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name        string
		model, real *reports.Cell
		figure      string
		wantGap     fidelity.Gap
		wantSep     bool
		wantRatio   float64
	}{
		{"model far above, separated", refCell(nil, 1000, 340), refCell(nil, 1000, 8), "non-prefix reads of reads", fidelity.Off, true, 42.5},
		{"within 2x", refCell(nil, 100, 30), refCell(nil, 100, 20), "non-prefix reads of reads", fidelity.Within, false, 1.5},
		{"off but intervals overlap at this size", refCell(nil, 10, 3), refCell(nil, 10, 1), "non-prefix reads of reads", fidelity.Off, false, 3},
		{"both zero", refCell(nil, 50, 0), refCell(nil, 60, 0), "non-prefix reads of reads", fidelity.BothZero, false, 0},
		{"real zero, model not: off", refCell(nil, 50, 5), refCell(nil, 60, 0), "non-prefix reads of reads", fidelity.Off, false, 0},
		{"real zero, model far above: off and separated", refCell(nil, 50, 25), refCell(nil, 60, 0), "non-prefix reads of reads", fidelity.Off, true, 0},
		{"no reads on one side: unknown", refCell(nil, 50, 5), refCell(nil, 0, 0), "non-prefix reads of reads", fidelity.NoMeasure, false, 0},
		{"real side not stormed: unknown", refCell(nil, 50, 5), nil, "non-prefix reads of reads", fidelity.NoMeasure, false, 0},
		{"bad rate over decided runs only",
			refCell(map[history.Outcome]int{history.Corrupted: 6, history.Completed: 6}, 1, 0),
			refCell(map[history.Outcome]int{history.Corrupted: 3, history.Completed: 3, history.Stuck: 6}, 1, 0),
			"corrupted+silent of decided runs", fidelity.Within, false, 1},
		{"every real run stuck: bad rate unknown",
			refCell(map[history.Outcome]int{history.Corrupted: 6}, 1, 0),
			refCell(map[history.Outcome]int{history.Stuck: 6}, 1, 0),
			"corrupted+silent of decided runs", fidelity.NoMeasure, false, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			figs := fidelity.Compare([]fidelity.Pair{{World: "devkit-local", Scenario: fidelity.StepStorm, Model: tt.model, Real: tt.real}})
			f := figure(t, figs, tt.figure)
			if f.Gap != tt.wantGap || f.Separated != tt.wantSep {
				t.Errorf("gap %s separated %v, want %s %v (model %+v, real %+v)", f.Gap, f.Separated, tt.wantGap, tt.wantSep, f.Model, f.Real)
			}
			if diff := f.Ratio - tt.wantRatio; diff > 1e-9 || diff < -1e-9 {
				t.Errorf("ratio %v, want %v", f.Ratio, tt.wantRatio)
			}
		})
	}
}

func TestCompareNotesUndecidedRuns(t *testing.T) {
	t.Parallel()
	model := refCell(map[history.Outcome]int{history.Corrupted: 12}, 1, 0)
	real := refCell(map[history.Outcome]int{history.Corrupted: 5, history.Stuck: 5, history.Infra: 2}, 1, 0)
	f := figure(t, fidelity.Compare([]fidelity.Pair{{World: "w", Scenario: "s", Model: model, Real: real}}), "corrupted+silent of decided runs")
	if !strings.Contains(f.Note, "real: 7 of 12 runs decided nothing") || !strings.Contains(f.Note, "thin evidence") {
		t.Errorf("note %q does not name the real side's undecided runs and the thin evidence", f.Note)
	}
	if f.Real.Text != "5/5 100.0% [56.6%, 100.0%]" {
		t.Errorf("real side %q", f.Real.Text)
	}
}

func TestCompareClassMixAndWindows(t *testing.T) {
	t.Parallel()
	model := refCell(map[history.Outcome]int{history.Corrupted: 4}, 1, 0)
	model.Classes = map[string]int{"stale-prefix": 3, "cursor-skip": 1}
	model.Windows = map[eventlog.Type]forensics.Window{eventlog.StepCreated: {N: 40, P50: 31 * time.Millisecond, P90: 90 * time.Millisecond}}
	real := refCell(map[history.Outcome]int{history.Corrupted: 4}, 1, 0)
	real.Classes = map[string]int{"duplicate-create": 4}
	real.Windows = map[eventlog.Type]forensics.Window{eventlog.StepCreated: {N: 50, P50: 1500 * time.Microsecond, P90: 3 * time.Millisecond}}
	figs := fidelity.Compare([]fidelity.Pair{{World: "w", Scenario: "s", Model: model, Real: real}})
	mix := figure(t, figs, "class mix of wrong and stuck runs")
	if mix.Model.Text != "stale-prefix 3, cursor-skip 1" || mix.Real.Text != "duplicate-create 4" || mix.Note != "total variation distance 1.00" {
		t.Errorf("class mix %+v", mix)
	}
	w := figure(t, figs, "mint-to-commit p50 step_created")
	if w.Gap != fidelity.Off || w.Ratio < 20 || w.Ratio > 21 {
		t.Errorf("window figure %+v, want off at 20.7x", w)
	}
}

func TestReferenceReportNeedsEvidence(t *testing.T) {
	t.Parallel()
	if fidelity.NewReferenceReport(nil, nil).Evidenced() {
		t.Error("a report of no figures is evidence")
	}
	figs := fidelity.Compare([]fidelity.Pair{{World: "w", Scenario: "s", Model: refCell(nil, 10, 1), Real: nil}})
	rep := fidelity.NewReferenceReport(figs, nil)
	if rep.Evidenced() || rep.Unknown == 0 {
		t.Errorf("a report missing its real side: evidenced %v, unknown %d", rep.Evidenced(), rep.Unknown)
	}
	var b bytes.Buffer
	if err := rep.Table(&b); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "unknown") || !strings.Contains(b.String(), "not measured") {
		t.Errorf("table does not say the real side is not measured:\n%s", b.String())
	}
}

func TestDeriveProfile(t *testing.T) {
	t.Parallel()
	a := refCell(nil, 0, 0)
	a.Windows = map[eventlog.Type]forensics.Window{
		eventlog.StepCreated:   {N: 10, P50: 2 * time.Millisecond, P90: 4 * time.Millisecond, Max: 9 * time.Millisecond},
		eventlog.StepCompleted: {N: 10, P50: time.Millisecond, P90: time.Millisecond, Max: 2 * time.Millisecond},
	}
	b := refCell(nil, 0, 0)
	b.Windows = map[eventlog.Type]forensics.Window{
		eventlog.StepCreated: {N: 30, P50: 2 * time.Millisecond, P90: 4 * time.Millisecond, Max: 20 * time.Millisecond},
		eventlog.RunCreated:  {N: 5, P50: 0, P90: 0, Max: 0}, // a clock coarser than the mint
	}
	prof, err := fidelity.DeriveProfile([]*reports.Cell{a, b}, "test storm")
	if err != nil {
		t.Fatal(err)
	}
	rows := map[string]worlds.Window{}
	for _, w := range prof.Windows {
		rows[w.Type] = w
	}
	sc := rows[string(eventlog.StepCreated)]
	if sc.Median != 2*time.Millisecond || sc.Max != 20*time.Millisecond || sc.Sigma < 0.54 || sc.Sigma > 0.55 {
		t.Errorf("step_created row %+v, want median 2ms, sigma ln2/z90 = 0.541, max 20ms", sc)
	}
	if rc := rows[string(eventlog.RunCreated)]; rc.Median != time.Microsecond {
		t.Errorf("a 0 window derives median %s, want the 1µs floor", rc.Median)
	}
	for _, class := range []string{"decision", "fact"} {
		if _, ok := rows[class]; !ok {
			t.Errorf("no %s row", class)
		}
	}
	// The file parses back into a profile that draws within its rows.
	data, err := json.Marshal(prof)
	if err != nil {
		t.Fatal(err)
	}
	p, err := worlds.ParseProfileFile(data, "file:x", 1)
	if err != nil {
		t.Fatalf("derived profile does not parse: %v\n%s", err, data)
	}
	for range 500 {
		if d := p.Delay(eventlog.StepCreated); d < 0 || d > 20*time.Millisecond {
			t.Fatalf("draw %s outside [0, 20ms]", d)
		}
	}

	if _, err := fidelity.DeriveProfile([]*reports.Cell{refCell(nil, 0, 0)}, "x"); !errors.Is(err, fidelity.ErrNoRealWindows) {
		t.Errorf("no windows: err %v, want ErrNoRealWindows", err)
	}
	onlyFacts := refCell(nil, 0, 0)
	onlyFacts.Windows = map[eventlog.Type]forensics.Window{eventlog.StepCompleted: {N: 3, P50: time.Millisecond, P90: time.Millisecond, Max: time.Millisecond}}
	if _, err := fidelity.DeriveProfile([]*reports.Cell{onlyFacts}, "x"); err == nil || !strings.Contains(err.Error(), "decision") {
		t.Errorf("no decision window: err %v, want one naming decision", err)
	}
}

// A clean pair (control) is evidence: no bad run on either side and a
// window type only one engine writes are shown, never unknown.
func TestCompareCleanPairIsEvidence(t *testing.T) {
	t.Parallel()
	model := refCell(map[history.Outcome]int{history.Completed: 4}, 20, 0)
	model.Windows = map[eventlog.Type]forensics.Window{eventlog.StepCreated: {N: 4, P50: time.Millisecond, P90: time.Millisecond}}
	real := refCell(map[history.Outcome]int{history.Completed: 4}, 20, 0)
	real.Windows = map[eventlog.Type]forensics.Window{
		eventlog.StepCreated:         {N: 4, P50: -time.Millisecond}, // under the clock's resolution
		eventlog.Type("run_started"): {N: 4, P50: time.Millisecond},
	}
	rep := fidelity.NewReferenceReport(fidelity.Compare([]fidelity.Pair{{World: "w", Scenario: "control", Model: model, Real: real}}), nil)
	if !rep.Evidenced() {
		for _, f := range rep.Figures {
			t.Logf("%s: %s", f.Name, f.Gap)
		}
		t.Fatalf("a clean pair with both sides measured is not evidence (%d unknown)", rep.Unknown)
	}
	if f := figure(t, rep.Figures, "mint-to-commit p50 run_started"); f.Gap != fidelity.Shown || !strings.Contains(f.Note, "one engine only") {
		t.Errorf("run_started %+v", f)
	}
	if f := figure(t, rep.Figures, "mint-to-commit p50 step_created"); f.Gap != fidelity.Shown || !strings.Contains(f.Note, "resolution") {
		t.Errorf("step_created %+v", f)
	}
}

// A type the model never writes gets no row and no weight in a class; the
// profile's source names it.
func TestDeriveProfileLeavesOutTypesTheModelDoesNotWrite(t *testing.T) {
	t.Parallel()
	c := refCell(nil, 0, 0)
	c.Windows = map[eventlog.Type]forensics.Window{
		eventlog.StepCreated:           {N: 4, P50: time.Millisecond, P90: time.Millisecond, Max: time.Millisecond},
		eventlog.StepCompleted:         {N: 4, P50: time.Millisecond, P90: time.Millisecond, Max: time.Millisecond},
		eventlog.Type("run_started"):   {N: 4, P50: time.Second, P90: time.Second, Max: time.Second},
		eventlog.Type("run_cancelled"): {N: 4, P50: time.Second, P90: time.Second, Max: time.Second},
	}
	prof, err := fidelity.DeriveProfile([]*reports.Cell{c}, "s")
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range prof.Windows {
		if w.Max > time.Millisecond {
			t.Errorf("row %s weighs a type the model does not write: %+v", w.Type, w)
		}
	}
	if !strings.Contains(prof.Source, "run_cancelled, run_started") {
		t.Errorf("source %q does not name the types left out", prof.Source)
	}
	data, _ := json.Marshal(prof)
	if _, err := worlds.ParseProfileFile(data, "file:x", 1); err != nil {
		t.Errorf("the derived profile does not parse: %v", err)
	}
}

// A cell with wrong runs and no class recorded is not shown as "none".
func TestClassMixNotClassified(t *testing.T) {
	t.Parallel()
	model := refCell(map[history.Outcome]int{history.Corrupted: 2}, 1, 0)
	real := refCell(map[history.Outcome]int{history.Completed: 2}, 1, 0)
	mix := figure(t, fidelity.Compare([]fidelity.Pair{{World: "w", Scenario: "s", Model: model, Real: real}}), "class mix of wrong and stuck runs")
	if mix.Model.Text != "not classified" || mix.Real.Text != "none" {
		t.Errorf("class mix model %q real %q, want not classified / none", mix.Model.Text, mix.Real.Text)
	}
}
