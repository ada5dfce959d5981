package cli_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stormctl/stormctl/forensics"
	"github.com/stormctl/stormctl/internal/cli"
	"github.com/stormctl/stormctl/internal/engine"
	"github.com/stormctl/stormctl/internal/engine/conditions"
	"github.com/stormctl/stormctl/internal/eventlog"
	"github.com/stormctl/stormctl/internal/history"
	"github.com/stormctl/stormctl/internal/storm/stormdir"
	"github.com/stormctl/stormctl/reports"
)

// TestForensicsSchemeFromStormJSON: forensics DIR reads each run by the
// scheme storm.json gives its condition, whatever the events look like: a
// slot run gets slot findings, and a ulid run whose events happen to carry
// seqs with a gap is read by id (no density checked). Reading the scheme off
// the data would call both seq.
func TestForensicsSchemeFromStormJSON(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "storm")
	meta := stormdir.Meta{Schema: reports.SchemaVersion, Conditions: map[string]conditions.Condition{
		"slot": {Name: "slot", Knobs: engine.Knobs{Scheme: eventlog.SchemeSlot}},
		"main": {Name: "main", Knobs: engine.Knobs{Scheme: eventlog.SchemeULID}},
	}}
	w, err := stormdir.OpenWriter(dir, &meta)
	if err != nil {
		t.Fatal(err)
	}
	ev := func(id string, seq int64, typ eventlog.Type) eventlog.Event {
		return eventlog.Event{ID: id, Seq: seq, Type: typ}
	}
	runs := []struct {
		condition string
		final     []eventlog.Event
	}{
		{"slot", []eventlog.Event{ev(eventlog.SlotID(1), 1, eventlog.RunCreated), ev(eventlog.SlotID(2), 2, eventlog.Noop), ev(eventlog.SlotID(3), 3, eventlog.RunCompleted)}},
		{"main", []eventlog.Event{ev("wevt_a", 1, eventlog.RunCreated), ev("wevt_b", 3, eventlog.RunCompleted)}},
	}
	for _, r := range runs {
		rec := reports.RunRecord{CellKey: history.NewCellKey("local", "control", r.condition), RunID: "wrun_" + r.condition, Outcome: history.Completed}
		k := rec.CellKey
		if err := w.WriteEvents(k, rec.RunID, r.final); err != nil {
			t.Fatal(err)
		}
		if err := w.WriteRun(rec); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}

	code, stdout, stderr := run(t.Context(), "forensics", dir, "--format", "json")
	if code != cli.ExitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var rep struct {
		Cells []struct {
			Condition string                `json:"condition"`
			Runs      int                   `json:"runs"`
			Findings  forensics.RunFindings `json:"findings"`
		} `json:"cells"`
	}
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
		t.Fatalf("%v:\n%s", err, stdout)
	}
	if len(rep.Cells) != 2 {
		t.Fatalf("%d cells, want 2:\n%s", len(rep.Cells), stdout)
	}
	for _, c := range rep.Cells {
		switch f := c.Findings; c.Condition {
		case "slot":
			if f.Slot == nil || f.Slot.Seals != 1 {
				t.Errorf("slot cell: findings %+v (slot %+v), want one seal", f, f.Slot)
			}
		case "main":
			if f.Slot != nil || f.Gaps != 0 {
				t.Errorf("ulid cell: findings %+v, want no density checked", f)
			}
		}
	}

	t.Run("without storm.json", func(t *testing.T) {
		if err := os.Remove(filepath.Join(dir, stormdir.FileStorm)); err != nil {
			t.Fatal(err)
		}
		code, stdout, stderr := run(t.Context(), "forensics", dir)
		if code != cli.ExitUsage || !strings.Contains(stderr, stormdir.FileStorm) || stdout != "" {
			t.Errorf("exit %d, stderr %q, stdout %q; want a usage error naming %s", code, stderr, stdout, stormdir.FileStorm)
		}
	})
}

// TestForensicsCellOrder: forensics DIR lists its cells in the order report
// does for the same storm, storm.json's, not in the order runs.jsonl first
// met them (runs of interleaved cells finish in any order).
func TestForensicsCellOrder(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "storm")
	cells := []history.CellKey{
		{World: "local", Scenario: "control", Condition: "main"},
		{World: "local", Scenario: "step-storm", Condition: "main"},
		{World: "local", Scenario: "control", Condition: "seq"},
		{World: "local", Scenario: "step-storm", Condition: "seq"},
	}
	meta := stormdir.Meta{Schema: reports.SchemaVersion, Cells: cells, Conditions: map[string]conditions.Condition{
		"main": {Name: "main", Knobs: engine.Knobs{Scheme: eventlog.SchemeULID}},
		"seq":  {Name: "seq", Knobs: engine.Knobs{Scheme: eventlog.SchemeSeq}},
	}}
	w, err := stormdir.OpenWriter(dir, &meta)
	if err != nil {
		t.Fatal(err)
	}
	// The order the runs finished in, as a storm of these cells recorded it.
	for i, c := range []int{1, 0, 2, 1, 3, 0} {
		k := cells[c]
		rec := reports.RunRecord{CellKey: history.NewCellKey(k.World, k.Scenario, k.Condition), Index: i,
			RunID: fmt.Sprintf("wrun_%d", i), Outcome: history.Completed}
		final := []eventlog.Event{{ID: "wevt_a", Seq: 1, Type: eventlog.RunCreated}, {ID: "wevt_b", Seq: 2, Type: eventlog.RunCompleted}}
		if err := w.WriteEvents(k, rec.RunID, final); err != nil {
			t.Fatal(err)
		}
		if err := w.WriteRun(rec); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}

	order := func(cmd string) []history.CellKey {
		t.Helper()
		code, stdout, stderr := run(t.Context(), cmd, dir, "--format", "json")
		if code != cli.ExitOK {
			t.Fatalf("%s: exit %d: %s", cmd, code, stderr)
		}
		var doc struct {
			Cells []history.CellKey `json:"cells"`
		}
		if err := json.Unmarshal([]byte(stdout), &doc); err != nil {
			t.Fatalf("%s: %v:\n%s", cmd, err, stdout)
		}
		return doc.Cells
	}
	report, got := order("report"), order("forensics")
	if !slices.Equal(report, cells) {
		t.Fatalf("report lists %v, want storm.json's %v", report, cells)
	}
	if !slices.Equal(got, report) {
		t.Errorf("forensics lists %v, report %v", got, report)
	}
}

// TestForensicsDuplicateCreates: forensics DIR counts the creations of an
// entity beyond its first (dup creates) apart from two events at one seq
// (dup seqs), in its JSON and its table: a run whose world let one step in
// three times and one wait twice counts 3 under dup creates and 0 under
// dup seqs (its seqs are dense), and 1 under dup ends for its second
// run_completed; a run without duplicates counts 0 under each.
func TestForensicsDuplicateCreates(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "storm")
	cells := []history.CellKey{
		{World: "local", Scenario: "step-storm", Condition: "seq"},
		{World: "devkit-local", Scenario: "step-storm", Condition: "seq"},
	}
	meta := stormdir.Meta{Schema: reports.SchemaVersion, Cells: cells, Conditions: map[string]conditions.Condition{
		"seq": {Name: "seq", Knobs: engine.Knobs{Scheme: eventlog.SchemeSeq}},
	}}
	w, err := stormdir.OpenWriter(dir, &meta)
	if err != nil {
		t.Fatal(err)
	}
	ev := func(seq int64, typ eventlog.Type, corr string) eventlog.Event {
		return eventlog.Event{ID: fmt.Sprintf("wevt_%02d", seq), Seq: seq, Type: typ, CorrelationID: corr}
	}
	finals := [][]eventlog.Event{
		{ev(1, eventlog.RunCreated, ""), ev(2, eventlog.StepCreated, "s1"), ev(3, eventlog.WaitCreated, "w1"),
			ev(4, eventlog.StepCompleted, "s1"), ev(5, eventlog.RunCompleted, "")},
		{ev(1, eventlog.RunCreated, ""), ev(2, eventlog.StepCreated, "s1"), ev(3, eventlog.WaitCreated, "w1"),
			ev(4, eventlog.StepCreated, "s1"), ev(5, eventlog.WaitCreated, "w1"), ev(6, eventlog.StepCreated, "s1"),
			ev(7, eventlog.StepCompleted, "s1"), ev(8, eventlog.RunCompleted, ""), ev(9, eventlog.RunCompleted, "")},
	}
	for i, k := range cells {
		rec := reports.RunRecord{CellKey: history.NewCellKey(k.World, k.Scenario, k.Condition), Index: i,
			RunID: fmt.Sprintf("wrun_%d", i), Outcome: history.Completed}
		if err := w.WriteEvents(k, rec.RunID, finals[i]); err != nil {
			t.Fatal(err)
		}
		if err := w.WriteRun(rec); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}

	code, stdout, stderr := run(t.Context(), "forensics", dir, "--format", "json")
	if code != cli.ExitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var rep struct {
		Cells []struct {
			World    string                     `json:"world"`
			Findings map[string]json.RawMessage `json:"findings"`
		} `json:"cells"`
	}
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil || len(rep.Cells) != 2 {
		t.Fatalf("%v: want 2 cells in\n%s", err, stdout)
	}
	want := map[string]string{"local": "0", "devkit-local": "3"}
	for _, c := range rep.Cells {
		if got := string(c.Findings["duplicate_creates"]); got != want[c.World] || string(c.Findings["duplicates"]) != "0" {
			t.Errorf("%s: duplicate_creates %s, duplicates %s; want %s and 0", c.World, got, c.Findings["duplicates"], want[c.World])
		}
		if got, want := string(c.Findings["duplicate_ends"]), map[string]string{"local": "", "devkit-local": "1"}[c.World]; got != want {
			t.Errorf("%s: duplicate_ends %q, want %q (omitted at 0)", c.World, got, want)
		}
	}

	code, stdout, stderr = run(t.Context(), "forensics", dir, "--format", "markdown")
	if code != cli.ExitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	header, rows := "", map[string][]string{}
	for _, line := range strings.Split(stdout, "\n") {
		cols := strings.Split(strings.Trim(line, "| "), "|")
		for i := range cols {
			cols[i] = strings.TrimSpace(cols[i])
		}
		switch {
		case len(cols) > 0 && cols[0] == "cell" && header == "":
			header = strings.Join(cols, ",")
		case len(cols) > 1 && strings.HasSuffix(cols[0], "/step-storm/seq"):
			rows[cols[0]] = cols
		}
	}
	if !strings.HasSuffix(header, "dup seqs,dup creates,dup ends,refused") {
		t.Fatalf("table header %q does not end with dup seqs, dup creates, dup ends, refused:\n%s", header, stdout)
	}
	for cell, n := range map[string][2]string{"local/step-storm/seq": {"0", "0"}, "devkit-local/step-storm/seq": {"3", "1"}} {
		r := rows[cell]
		if len(r) < 4 || r[len(r)-3] != n[0] || r[len(r)-4] != "0" || r[len(r)-2] != n[1] {
			t.Errorf("%s: row %q, want dup seqs 0, dup creates %s, dup ends %s", cell, r, n[0], n[1])
		}
	}
}
