package table_test

import (
	"bytes"
	"encoding/json"
	"io"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/stormctl/stormctl/forensics"
	"github.com/stormctl/stormctl/internal/history"
	"github.com/stormctl/stormctl/reports"
	"github.com/stormctl/stormctl/reports/table"
)

// testSummary is a small summary with every field of a cell set.
func testSummary(interrupted bool) *reports.Summary {
	tp := 2
	return &reports.Summary{
		Schema:      reports.SchemaVersion,
		Started:     time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC),
		Ended:       time.Date(2026, 1, 2, 3, 9, 5, 0, time.UTC),
		Interrupted: interrupted,
		Cells: []*reports.Cell{
			{
				CellKey: history.NewCellKey("local", "step-storm", "main"),
				Runs:    24, Completed: 1, Corrupted: 23,
				Rejections:  0,
				RunFindings: forensics.RunFindings{Reads: 812, NonPrefixReads: 97, CursorSkips: 41, Inversions: 63, Displaced: 12, DuplicateCreates: 818, DuplicateEnds: 9},
				Divergences: 30, Recoveries: 5, Invocations: 480,
			},
			{
				CellKey: history.NewCellKey("local", "step-storm", "seq+callsite+ordered"),
				Runs:    24, Completed: 22, Silent: 1, Gap: 1, Stuck: 0, Failed: 0, Infra: 0,
				Rejections: 7, TruePositives: &tp, RunFindings: forensics.RunFindings{Reads: 790},
				Invocations: 470,
			},
		},
	}
}

// tableHeaders are the columns of the table and of the markdown details.
var tableHeaders = []string{
	"world", "scenario", "condition", "runs",
	"completed", "corrupted", "silent", "gap", "stuck", "failed", "infra",
	"rejections", "reads", "non-prefix", "cursor skips", "inversions", "gaps", "dup seqs", "dup creates",
}

func TestRender(t *testing.T) {
	t.Parallel()
	compact := []string{
		"local step-storm main: 23 corrupted / 1 completed (world layer: 9 terminal events beyond a run's first)",
		"local step-storm seq+callsite+ordered: 0 corrupted / 1 silent / 1 gap / 22 completed (7 rejections: 2 true positive, 0 benign, 0 unknown)",
	}
	tests := []struct {
		format string
		write  func(table.Summary, io.Writer) error
		check  func(t *testing.T, out string, s *reports.Summary)
	}{
		{"table", table.Summary.Table, func(t *testing.T, out string, _ *reports.Summary) {
			containsAll(t, out, tableHeaders...)
			containsAll(t, out, "812", "97", "41", "63", "818")
			for _, line := range compact {
				if !hasLine(out, line) {
					t.Errorf("no line %q in\n%s", line, out)
				}
			}
		}},
		{"markdown", table.Summary.Markdown, func(t *testing.T, out string, _ *reports.Summary) {
			seed := "| world | scenario | condition | result |\n|---|---|---|---|\n"
			if !strings.HasPrefix(out, seed) {
				t.Errorf("markdown does not start with the seed-style table %q:\n%s", seed, out)
			}
			for _, line := range compact {
				parts := strings.SplitN(line, ": ", 2)
				row := "| " + strings.ReplaceAll(parts[0], " ", " | ") + " | " + parts[1] + " |"
				if !hasLine(out, row) {
					t.Errorf("no row %q in\n%s", row, out)
				}
			}
			open, end := strings.Index(out, "<details>"), strings.Index(out, "</details>")
			if open < 0 || end < open {
				t.Fatalf("no <details>...</details> block in\n%s", out)
			}
			details := out[open:end]
			containsAll(t, details, "<summary>")
			containsAll(t, details, tableHeaders...)
			containsAll(t, details, "812", "97", "41", "63", "818")
		}},
		{"json", writeJSON, func(t *testing.T, out string, s *reports.Summary) {
			var back reports.Summary
			if err := json.Unmarshal([]byte(out), &back); err != nil {
				t.Fatalf("not JSON: %v\n%s", err, out)
			}
			if !reflect.DeepEqual(&back, s) {
				t.Errorf("JSON does not round-trip:\n got %+v\nwant %+v", back, *s)
			}
			if want, err := json.MarshalIndent(s, "", "  "); err != nil || out != string(want)+"\n" {
				t.Errorf("the JSON of a table.Summary is not its summary's (summary.json): %v\n%s", err, out)
			}
			checkSummaryContract(t, []byte(out), s)
		}},
	}
	for _, tc := range tests {
		for _, interrupted := range []bool{false, true} {
			name := tc.format
			if interrupted {
				name += "/interrupted"
			}
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				s := testSummary(interrupted)
				var buf bytes.Buffer
				if err := tc.write(table.Summary{Summary: s}, &buf); err != nil {
					t.Fatalf("%s: %v", tc.format, err)
				}
				tc.check(t, buf.String(), s)
			})
		}
	}
}

// TestWriteMarkdownCompact: cells as given, unpadded, under a "---"
// alignment row.
func TestWriteMarkdownCompact(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		header []string
		rows   [][]string
		want   string
	}{
		{"no rows", []string{"a", "bb"}, nil, "| a | bb |\n|---|---|\n"},
		{"rows of unequal widths", []string{"world", "store"}, [][]string{{"local", "one file per event"}, {"postgres", "pg"}},
			"| world | store |\n|---|---|\n| local | one file per event |\n| postgres | pg |\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var b strings.Builder
			if err := table.Write(&b, table.MarkdownCompact, tt.header, tt.rows); err != nil {
				t.Fatal(err)
			}
			if b.String() != tt.want {
				t.Errorf("got\n%s\nwant\n%s", b.String(), tt.want)
			}
		})
	}
}

// writeJSON writes s as a command's --format json does: its own encoding,
// which must be the summary's.
func writeJSON(s table.Summary, w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(s)
}

// checkSummaryContract checks summary.json against ARCHITECTURE.md: an
// object whose cells array holds one object per cell with every contract
// field.
func checkSummaryContract(t *testing.T, raw []byte, s *reports.Summary) {
	t.Helper()
	var doc map[string]any
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	if doc["interrupted"] != nil && doc["interrupted"] != true {
		t.Errorf("interrupted = %v", doc["interrupted"])
	}
	cells, ok := doc["cells"].([]any)
	if !ok || len(cells) != len(s.Cells) {
		t.Fatalf("cells = %v, want an array of %d", doc["cells"], len(s.Cells))
	}
	strs := []string{"world", "scenario", "condition"}
	counts := []string{
		"runs", "completed", "corrupted", "silent", "gap", "stuck", "failed", "infra",
		"rejections", "reads", "non_prefix_reads", "cursor_skips", "inversions", "gaps", "duplicates", "duplicate_creates",
	}
	for i, raw := range cells {
		cell, ok := raw.(map[string]any)
		if !ok {
			t.Fatalf("cells[%d] = %v, want an object", i, raw)
		}
		for _, k := range strs {
			if _, ok := cell[k].(string); !ok {
				t.Errorf("cells[%d].%s = %#v, want a string", i, k, cell[k])
			}
		}
		for _, k := range counts {
			if _, ok := cell[k].(float64); !ok {
				t.Errorf("cells[%d].%s = %#v, want a number", i, k, cell[k])
			}
		}
		// true_positives is present, null until verdicts are computed.
		tp, present := cell["true_positives"]
		if !present {
			t.Errorf("cells[%d] has no true_positives", i)
		}
		if want := s.Cells[i].TruePositives; (want == nil) != (tp == nil) || (want != nil && tp != float64(*want)) {
			t.Errorf("cells[%d].true_positives = %#v, want %v", i, tp, want)
		}
	}
	first := cells[0].(map[string]any)
	for k, want := range map[string]any{
		"world": "local", "condition": "main", "runs": 24.0, "corrupted": 23.0,
		"non_prefix_reads": 97.0, "cursor_skips": 41.0, "inversions": 63.0,
	} {
		if first[k] != want {
			t.Errorf("cells[0].%s = %#v, want %#v", k, first[k], want)
		}
	}
}

func containsAll(t *testing.T, out string, want ...string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(out, w) {
			t.Errorf("output does not contain %q:\n%s", w, out)
		}
	}
}

func hasLine(out, line string) bool {
	for l := range strings.SplitSeq(out, "\n") {
		if strings.TrimSpace(l) == line {
			return true
		}
	}
	return false
}

// TestHarnessColumns checks that a storm with cells of an engine that
// reports its health shows the harness-health columns and a harness note
// per such cell, "-" for the others, and that a storm without shows none.
func TestHarnessColumns(t *testing.T) {
	t.Parallel()
	real := &reports.Cell{CellKey: history.NewCellKey("devkit-local", "step-storm", "main")}
	real.Add(reports.RunRecord{Outcome: history.Corrupted, Stats: history.RunStats{Harness: &history.Harness{Samples: 20, ELUP50: 0.55, ELUP99: 0.98,
		DelayP99Ms: 140, HostCPUMs: 9000, StormctlCPUMs: 300, RecordingMs: 270}}})
	real.Add(reports.RunRecord{Outcome: history.Infra, Stats: history.RunStats{Harness: &history.Harness{Samples: 20, ELUP50: 1, ELUP99: 1, Saturated: 0.95, StarvedAtCut: true,
		DelayP99Ms: 900, HostCPUMs: 11000, StormctlCPUMs: 100, RecordingMs: 330}}})
	model := &reports.Cell{CellKey: history.NewCellKey("devkit-local", "step-storm", "main/engine=model")}
	model.Add(reports.RunRecord{Outcome: history.Corrupted})
	var b strings.Builder
	if err := (table.Summary{Summary: &reports.Summary{Cells: []*reports.Cell{real, model}}}).Table(&b); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{"host busy p50/p99", "loop delay p99 ms", "CPU-s a run host/stormctl", "recording", "starved",
		"100%/100%", "10.0/0.20", "3.0%",
		"(harness: host busy p50 100% p99 100%, loop delay p99 900 ms, 10.0 CPU-s a run on the host and 0.20 in stormctl, recording 3.0% of the host's busy loop; 1 run STARVED by the harness, reported infra: no evidence about the runtime)"} {
		if !strings.Contains(out, want) {
			t.Errorf("the table lacks %q:\n%s", want, out)
		}
	}
	b.Reset()
	if err := (table.Summary{Summary: &reports.Summary{Cells: []*reports.Cell{model}}}).Table(&b); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), "host busy") || strings.Contains(b.String(), "harness:") {
		t.Errorf("a storm of the model shows harness columns:\n%s", b.String())
	}
}

// TestSpecNote: a cell's line says the contract its runs were created
// under, and says so loudly when they differ.
func TestSpecNote(t *testing.T) {
	k := history.NewCellKey("devkit-local", "step-storm", "main")
	for _, tc := range []struct {
		name  string
		specs map[int]int
		want  string // in the cell's line; "" means no spec word at all
	}{
		{"one contract", map[int]int{3: 6}, "(spec 3)"},
		{"two contracts", map[int]int{3: 5, 5: 1}, "(specs 3 x5, 5 x1: runs of different contracts)"},
		{"none stamped", nil, ""},
	} {
		s := &reports.Summary{Cells: []*reports.Cell{{CellKey: k, Runs: 6, Completed: 6, SpecVersions: tc.specs}}}
		md, err := table.SummaryMarkdown(s, nil)
		if err != nil {
			t.Fatal(err)
		}
		got := string(md)
		if tc.want == "" && strings.Contains(got, "spec") || tc.want != "" && !strings.Contains(got, tc.want) {
			t.Errorf("%s: %q, want %q in it", tc.name, got, tc.want)
		}
	}
}
