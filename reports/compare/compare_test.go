package compare_test

import (
	"bytes"
	"encoding/json"
	"io"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stormctl/stormctl/internal/base/filetest"
	"github.com/stormctl/stormctl/internal/history"
	"github.com/stormctl/stormctl/reports"
	"github.com/stormctl/stormctl/reports/compare"
)

// compareCase is one testdata/compare/*.json fixture.
type compareCase struct {
	About string          `json:"about"`
	Base  []*reports.Cell `json:"base"`
	Head  []*reports.Cell `json:"head"`
	Want  []struct {
		Cell    string   `json:"cell"`
		Verdict string   `json:"verdict"`
		CorrP   *float64 `json:"corrupted_p"`
		BadP    *float64 `json:"bad_p"`
		Needed  *int     `json:"corrupted_runs_needed"`
	} `json:"want"`
}

func TestCompare(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob(filepath.Join("testdata", "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no compare fixtures: %v", err)
	}
	for _, file := range files {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".json"), func(t *testing.T) {
			t.Parallel()
			var tc compareCase
			filetest.ReadJSON(t, file, &tc)
			cmp := compare.Compare(&reports.Summary{Cells: tc.Base}, &reports.Summary{Cells: tc.Head})
			if len(cmp.Cells) != len(tc.Want) {
				t.Fatalf("%d cells compared, want %d (every cell of both sides, none dropped)", len(cmp.Cells), len(tc.Want))
			}
			for i, w := range tc.Want {
				cc := cmp.Cells[i]
				if cc.CellKey.String() != w.Cell {
					t.Errorf("cell %d = %s, want %s", i, cc.CellKey, w.Cell)
					continue
				}
				if cc.Verdict != w.Verdict {
					t.Errorf("%s: verdict %q, want %q", w.Cell, cc.Verdict, w.Verdict)
				}
				checkP := func(name string, m *compare.MetricDiff, want *float64) {
					t.Helper()
					switch {
					case want == nil && m != nil && m.P != nil:
						t.Errorf("%s: %s p = %g, want none", w.Cell, name, *m.P)
					case want != nil && (m == nil || m.P == nil):
						t.Errorf("%s: %s has no p, want %g", w.Cell, name, *want)
					case want != nil && !near(*m.P, *want, 1e-6):
						t.Errorf("%s: %s p = %.10g, want %.10g", w.Cell, name, *m.P, *want)
					}
				}
				checkP("corrupted", cc.Corrupted, w.CorrP)
				checkP("corrupted+silent", cc.Bad, w.BadP)
				if w.Needed != nil && (cc.Corrupted == nil || cc.Corrupted.RunsNeeded == nil || *cc.Corrupted.RunsNeeded != *w.Needed) {
					t.Errorf("%s: runs needed %+v, want %d", w.Cell, cc.Corrupted, *w.Needed)
				}
				if m := cc.Corrupted; m != nil && m.P != nil && m.Diff == 0 && m.RunsNeeded != nil {
					t.Errorf("%s: runs needed %d for a difference of 0", w.Cell, *m.RunsNeeded)
				}
			}

			// Table and markdown render every cell; JSON round-trips.
			for _, r := range []struct {
				format string
				write  func(io.Writer) error
			}{{"table", cmp.Table}, {"markdown", cmp.Markdown}} {
				var buf bytes.Buffer
				if err := r.write(&buf); err != nil {
					t.Fatalf("%s: %v", r.format, err)
				}
				out := buf.String()
				for _, w := range tc.Want {
					if !strings.Contains(out, w.Verdict) {
						t.Errorf("%s output lacks verdict %q:\n%s", r.format, w.Verdict, out)
					}
				}
				if !strings.Contains(out, "Wilson") || !strings.Contains(out, "Fisher") {
					t.Errorf("%s output does not say which statistics it shows:\n%s", r.format, out)
				}
			}
			b, err := json.Marshal(cmp)
			var back compare.Comparison
			if err == nil {
				err = json.Unmarshal(b, &back)
			}
			if err != nil || len(back.Cells) != len(cmp.Cells) {
				t.Errorf("json does not round-trip: %v\n%s", err, b)
			}
		})
	}
}

// near compares with a relative tolerance (absolute near 0).
func near(got, want, rel float64) bool {
	return math.Abs(got-want) <= rel*math.Max(math.Abs(want), 1e-12)
}

// TestCompareShowsUndecided: every format shows each side's stuck and
// infra runs, which decided nothing (a stuck run counts in n as not
// corrupted, so a reader must see how many there were).
func TestCompareShowsUndecided(t *testing.T) {
	t.Parallel()
	cell := func(completed, stuck, infra int) []*reports.Cell {
		c := &reports.Cell{CellKey: history.NewCellKey("local", "step-storm", "seq")}
		for o, n := range map[history.Outcome]int{history.Completed: completed, history.Stuck: stuck, history.Infra: infra} {
			for range n {
				c.Add(reports.RunRecord{Outcome: o})
			}
		}
		return []*reports.Cell{c}
	}
	cmp := compare.Compare(&reports.Summary{Cells: cell(21, 2, 1)}, &reports.Summary{Cells: cell(9, 12, 3)})
	var tbl, md bytes.Buffer
	if err := cmp.Table(&tbl); err != nil {
		t.Fatal(err)
	}
	if err := cmp.Markdown(&md); err != nil {
		t.Fatal(err)
	}
	// The statistics table, in both formats: runs, stuck and infra as
	// base / head, in that order after the cell's name.
	for _, out := range []string{tbl.String(), md.String()} {
		header, row := "", ""
		for _, l := range strings.Split(out, "\n") {
			switch {
			case strings.Contains(l, "corrupted base") && header == "":
				header = l
			case strings.Contains(l, "24 / 24") && row == "":
				row = l
			}
		}
		// Columns are separated by | (markdown) or │ (a terminal's box).
		fields := func(l string) []string {
			var out []string
			for _, f := range strings.FieldsFunc(l, func(r rune) bool { return r == '|' || r == '│' }) {
				out = append(out, strings.TrimSpace(f))
			}
			return out
		}
		h, r := fields(header), fields(row)
		if len(h) < 6 || len(r) < 6 {
			t.Fatalf("no statistics table with runs, stuck and infra columns:\n%s", out)
		}
		for i, want := range [][2]string{{"runs", "24 / 24"}, {"stuck", "2 / 12"}, {"infra", "1 / 3"}} {
			if h[3+i] != want[0] || r[3+i] != want[1] {
				t.Errorf("column %d = %q: %q, want %q: %q in\n%s", 4+i, h[3+i], r[3+i], want[0], want[1], out)
			}
		}
	}
	if !strings.Contains(md.String(), "2 stuck") || !strings.Contains(md.String(), "12 stuck / 3 infra") {
		t.Errorf("markdown's seed table does not name each side's stuck and infra runs:\n%s", md.String())
	}
	b, err := json.Marshal(cmp)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Cells []struct {
			Base, Head struct{ Stuck, Infra int }
		}
	}
	if err := json.Unmarshal(b, &doc); err != nil || len(doc.Cells) != 1 {
		t.Fatalf("json: %v\n%s", err, b)
	}
	if c := doc.Cells[0]; c.Base.Stuck != 2 || c.Base.Infra != 1 || c.Head.Stuck != 12 || c.Head.Infra != 3 {
		t.Errorf("json cells[0] base/head stuck, infra = %+v, want 2, 1 / 12, 3:\n%s", c, b)
	}
}
