package reports_test

import (
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/stormctl/stormctl/forensics"
	"github.com/stormctl/stormctl/internal/analysis/verdict"
	"github.com/stormctl/stormctl/internal/eventlog"
	"github.com/stormctl/stormctl/internal/history"
	"github.com/stormctl/stormctl/reports"
)

func TestCellAdd(t *testing.T) {
	t.Parallel()
	stats := history.RunStats{Invocations: 5, Divergences: 2, Recoveries: 1, Rejections: 3, Replays: 99}
	findings := forensics.RunFindings{
		Reads: 10, NonPrefixReads: 4, CursorSkips: 3, Inversions: 2, Displaced: 6, Gaps: 1, Duplicates: 7, Unpositioned: 99,
		DuplicateCreates: 409,
	}
	tests := []struct {
		name string
		runs []reports.RunRecord
		want reports.Cell
	}{
		{name: "nothing", want: reports.Cell{}},
		{
			name: "one run of each outcome",
			runs: func() []reports.RunRecord {
				var rs []reports.RunRecord
				for _, o := range history.Outcomes() {
					rs = append(rs, reports.RunRecord{Outcome: o})
				}
				return rs
			}(),
			want: reports.Cell{Runs: 8, Completed: 1, Corrupted: 1, Silent: 1, Gap: 1, Hole: 1, Stuck: 1, Failed: 1, Infra: 1},
		},
		{
			name: "an outcome no bucket knows counts as a run only",
			runs: []reports.RunRecord{{Outcome: "mystery"}},
			want: reports.Cell{Runs: 1},
		},
		{
			name: "counts and findings are summed",
			runs: []reports.RunRecord{
				{Outcome: history.Corrupted, Stats: stats, Findings: findings},
				{Outcome: history.Corrupted, Stats: stats, Findings: findings},
				{Outcome: history.Completed},
			},
			want: reports.Cell{
				Runs: 3, Completed: 1, Corrupted: 2,
				Rejections: 6, Divergences: 4, Recoveries: 2, Invocations: 10,
				RunFindings: forensics.RunFindings{
					Reads: 20, NonPrefixReads: 8, CursorSkips: 6, Inversions: 4, Displaced: 12, Gaps: 2, Duplicates: 14, Unpositioned: 198,
					DuplicateCreates: 818,
				},
			},
		},
		{
			name: "classes are counted, the first timelines of each class kept, recovered divergences summed",
			runs: func() []reports.RunRecord {
				rs := []reports.RunRecord{{Outcome: history.Completed, Stats: history.RunStats{Recovered: 2}}}
				for i := range 5 {
					rs = append(rs, reports.RunRecord{Outcome: history.Corrupted, Class: "stale-prefix",
						Timeline: fmt.Sprintf("timelines/r%d.html", i), Stats: history.RunStats{Recovered: 1}})
				}
				return append(rs, reports.RunRecord{Outcome: history.Silent, Class: "cursor-skip"})
			}(),
			want: reports.Cell{
				Runs: 7, Completed: 1, Corrupted: 5, Silent: 1, Recovered: 7,
				Classes:   map[string]int{"stale-prefix": 5, "cursor-skip": 1},
				Timelines: map[string][]string{"stale-prefix": {"timelines/r0.html", "timelines/r1.html", "timelines/r2.html"}},
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var c reports.Cell
			for _, r := range tc.runs {
				c.Add(r)
			}
			if !reflect.DeepEqual(c, tc.want) {
				t.Errorf("after Add:\n%+v\nwant\n%+v", c, tc.want)
			}
			total := 0
			for _, o := range history.Outcomes() {
				total += c.Count(o)
			}
			if unknown := countUnknown(tc.runs); total+unknown != c.Runs {
				t.Errorf("outcome counts sum to %d (+%d unknown), runs = %d", total, unknown, c.Runs)
			}
		})
	}
}

func countUnknown(rs []reports.RunRecord) int {
	n := 0
	for _, r := range rs {
		known := false
		for _, o := range history.Outcomes() {
			known = known || r.Outcome == o
		}
		if !known {
			n++
		}
	}
	return n
}

func TestCellCount(t *testing.T) {
	t.Parallel()
	c := reports.Cell{Completed: 1, Silent: 2, Corrupted: 3, Gap: 4, Stuck: 5, Failed: 6, Infra: 7}
	want := map[history.Outcome]int{
		history.Completed: 1, history.Silent: 2, history.Corrupted: 3, history.Gap: 4,
		history.Stuck: 5, history.Failed: 6, history.Infra: 7, "mystery": 0,
	}
	for o, n := range want {
		if got := c.Count(o); got != n {
			t.Errorf("Count(%s) = %d, want %d", o, got, n)
		}
	}
}

func TestCellCompact(t *testing.T) {
	t.Parallel()
	tests := []struct {
		cell reports.Cell
		want string
	}{
		{reports.Cell{}, "0 corrupted / 0 completed"},
		{reports.Cell{Corrupted: 23, Completed: 1}, "23 corrupted / 1 completed"},
		{reports.Cell{Completed: 24}, "0 corrupted / 24 completed"},
		{reports.Cell{Corrupted: 2, Silent: 1, Completed: 3}, "2 corrupted / 1 silent / 3 completed"},
		{reports.Cell{Infra: 4}, "0 corrupted / 4 infra / 0 completed"},
		{
			reports.Cell{Completed: 1, Silent: 2, Corrupted: 3, Gap: 4, Stuck: 5, Failed: 6, Infra: 7},
			"3 corrupted / 2 silent / 4 gap / 6 failed / 5 stuck / 7 infra / 1 completed",
		},
	}
	for _, tc := range tests {
		t.Run(tc.want, func(t *testing.T) {
			t.Parallel()
			if got := tc.cell.Compact(); got != tc.want {
				t.Errorf("Compact() = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestNewSummaryAndCell(t *testing.T) {
	t.Parallel()
	keys := []history.CellKey{
		{World: "local", Scenario: "step-storm", Condition: "main"},
		{World: "local", Scenario: "step-storm", Condition: "seq/wake=ordered"},
	}
	s := reports.NewSummary(keys)
	if s.Schema != reports.SchemaVersion {
		t.Errorf("Schema = %d, want %d", s.Schema, reports.SchemaVersion)
	}
	if len(s.Cells) != len(keys) {
		t.Fatalf("%d cells, want %d", len(s.Cells), len(keys))
	}
	for i, k := range keys {
		if got := s.Cells[i].Key(); got != k {
			t.Errorf("cell %d has key %v, want %v", i, got, k)
		}
		if c := s.Cell(k); c != s.Cells[i] {
			t.Errorf("Cell(%v) = %p, want cell %d", k, c, i)
		}
	}
	if c := s.Cell(history.CellKey{World: "local", Scenario: "control", Condition: "main"}); c != nil {
		t.Errorf("Cell of an unknown key = %+v, want nil", c)
	}
	if got, want := keys[1].String(), "local/step-storm/seq/wake=ordered"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
}

// TestSummaryWorldsAndConditions: each distinct value once, in the order
// its first cell comes.
func TestSummaryWorldsAndConditions(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name                  string
		keys                  []history.CellKey
		wantWorlds, wantConds []string
	}{
		{"no cells", nil, nil, nil},
		{"one cell", []history.CellKey{{World: "local", Scenario: "control", Condition: "main"}},
			[]string{"local"}, []string{"main"}},
		{"interleaved", []history.CellKey{
			{World: "postgres", Scenario: "step-storm", Condition: "seq"},
			{World: "local", Scenario: "step-storm", Condition: "main"},
			{World: "postgres", Scenario: "control", Condition: "main"},
			{World: "local", Scenario: "control", Condition: "seq"},
			{World: "vercel", Scenario: "control", Condition: "seq/wake=ordered"},
		}, []string{"postgres", "local", "vercel"}, []string{"seq", "main", "seq/wake=ordered"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := reports.NewSummary(tt.keys)
			if got := s.Worlds(); !slices.Equal(got, tt.wantWorlds) {
				t.Errorf("Worlds() = %q, want %q", got, tt.wantWorlds)
			}
			if got := s.Conditions(); !slices.Equal(got, tt.wantConds) {
				t.Errorf("Conditions() = %q, want %q", got, tt.wantConds)
			}
		})
	}
}

// TestCellJSON: a summary.json cell has the keys it had before Cell
// embedded forensics.RunFindings (the findings' fields inline, by their
// JSON names; unpositioned, which cells never listed, left out however
// many there were), plus any field a new checker adds to RunFindings; and
// it reads back as written.
func TestCellJSON(t *testing.T) {
	t.Parallel()
	tp := 3
	c := reports.Cell{
		CellKey: history.NewCellKey("local", "step-storm", "slot"), Runs: 9,
		Completed: 1, Corrupted: 1, Silent: 1, Gap: 1, Hole: 1, Stuck: 1, Failed: 1, Infra: 2,
		Rejections: 4, TruePositives: &tp, Benign: 1, UnknownVerdicts: 0,
		RunFindings: forensics.RunFindings{Reads: 5, NonPrefixReads: 1, CursorSkips: 2, Inversions: 6, Displaced: 7, Gaps: 1,
			Duplicates: 2, Unpositioned: 3, DuplicateCreates: 818, DuplicateEnds: 1, Refused: 4, Slot: &forensics.SlotFindings{HolesSeen: 2, Seals: 1, FillMillis: []float64{4}}},
		Divergences: 2, Recoveries: 1, Invocations: 30, Recovered: 1,
		Classes: map[string]int{"hole": 1}, Timelines: map[string][]string{"hole": {"timelines/r.html"}},
		Guard:   &history.GuardCounts{Evaluated: 2},
		Windows: map[eventlog.Type]forensics.Window{eventlog.StepCreated: {N: 1}},
		Pairs:   []forensics.PairCount{{TypePair: forensics.TypePair{Overtaking: eventlog.StepCompleted, Overtaken: eventlog.StepCreated}}},
		FillP50: 4, FillP99: 4, FillMax: 4,
		Faulted: map[history.Outcome]int{history.Infra: 2},
	}
	b, err := json.Marshal(&c)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	before := []string{"world", "scenario", "condition", "runs", "completed", "corrupted", "silent", "gap", "hole", "stuck",
		"failed", "infra", "rejections", "true_positives", "benign", "unknown_verdicts", "reads", "non_prefix_reads",
		"cursor_skips", "inversions", "gaps", "duplicates", "divergences", "recoveries", "invocations", "displaced",
		"recovered_divergences", "classes", "timelines", "guard", "windows", "pairs", "slot", "hole_fill_p50_ms",
		"hole_fill_p99_ms", "hole_fill_max_ms", "faulted"}
	want := map[string]bool{}
	for _, k := range before {
		want[k] = true
	}
	findings := reflect.TypeFor[forensics.RunFindings]()
	for i := range findings.NumField() {
		if name, _, _ := strings.Cut(findings.Field(i).Tag.Get("json"), ","); name != "unpositioned" {
			want[name] = true
		}
	}
	got := map[string]bool{}
	for k := range m {
		got[k] = true
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("summary.json cell keys %v, want %v", slices.Sorted(maps.Keys(got)), slices.Sorted(maps.Keys(want)))
	}
	if m["inversions"] != 6.0 || m["displaced"] != 7.0 || m["reads"] != 5.0 || m["duplicate_creates"] != 818.0 || m["duplicates"] != 2.0 {
		t.Errorf("findings written as %s", b)
	}
	var back reports.Cell
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	c.Unpositioned = 0
	if !reflect.DeepEqual(back, c) {
		t.Errorf("read back\n%+v\nwant\n%+v", back, c)
	}
}

// TestCellRejudge: a counted run judged later moves its rejections from
// unknown to their verdicts, and the split still sums to the rejections.
func TestCellRejudge(t *testing.T) {
	k := history.NewCellKey("devkit-local", "step-storm", "main")
	j := func(v verdict.Verdict) verdict.Judgement { return verdict.Judgement{Verdict: v} }
	pending := []verdict.Judgement{j(verdict.Unknown), j(verdict.Unknown), j(verdict.Unknown)}
	c := &reports.Cell{CellKey: k}
	c.Add(reports.RunRecord{CellKey: k, Outcome: history.Corrupted, Judged: true, Verdicts: pending, Stats: history.RunStats{Rejections: 3}})
	c.Rejudge(pending, []verdict.Judgement{j(verdict.TruePositive), j(verdict.Benign), j(verdict.Unknown)})
	if *c.TruePositives != 1 || c.Benign != 1 || c.UnknownVerdicts != 1 || c.Rejections != 3 {
		t.Errorf("after Rejudge: %d rejections, %d true positive, %d benign, %d unknown; want 3 = 1 + 1 + 1", c.Rejections, *c.TruePositives, c.Benign, c.UnknownVerdicts)
	}
	// A write refused after the run was counted: one more rejection.
	judged := []verdict.Judgement{j(verdict.TruePositive), j(verdict.Benign), j(verdict.Unknown)}
	c.Rejudge(judged, append(judged, j(verdict.Benign)))
	if c.Rejections != 4 || c.Benign != 2 {
		t.Errorf("after a late rejection: %d rejections, %d benign; want 4, 2", c.Rejections, c.Benign)
	}
}

// TestCellCountsSpecVersions: a cell counts its runs per contract version,
// and runs with none stamped leave it absent.
func TestCellCountsSpecVersions(t *testing.T) {
	k := history.NewCellKey("devkit-local", "step-storm", "main")
	three, five := 3, 5
	c := &reports.Cell{CellKey: k}
	c.Add(reports.RunRecord{CellKey: k, Outcome: history.Completed})
	if c.SpecVersions != nil {
		t.Errorf("no stamp counted: %v", c.SpecVersions)
	}
	for _, v := range []*int{&three, &three, &five} {
		c.Add(reports.RunRecord{CellKey: k, Outcome: history.Completed, SpecVersion: v})
	}
	if c.SpecVersions[3] != 2 || c.SpecVersions[5] != 1 || len(c.SpecVersions) != 2 {
		t.Errorf("SpecVersions = %v, want 3:2 5:1", c.SpecVersions)
	}
}
