package compare_test

import (
	"bytes"
	"maps"
	"strings"
	"testing"

	"github.com/stormctl/stormctl/internal/history"
	"github.com/stormctl/stormctl/reports"
	"github.com/stormctl/stormctl/reports/compare"
)

// cellOf builds a cell from outcome counts and faulted counts.
func cellOf(cond string, counts, faulted map[history.Outcome]int) *reports.Cell {
	c := &reports.Cell{CellKey: history.NewCellKey("local", "hook-storm", cond)}
	for o, n := range counts {
		for i := range n {
			r := reports.RunRecord{CellKey: history.NewCellKey(c.World, c.Scenario, cond), Outcome: o}
			if i < faulted[o] {
				r.Faults = []string{"latency#1"}
			}
			c.Add(r)
		}
	}
	return c
}

type oc = map[history.Outcome]int

// TestMisclassified: the definition in docs/faults.md ("Misclassified
// runs"), row by row: the rows docs/results/2026-12-03-nemesis.md measured
// at 0 and the ways a run is misclassified.
func TestMisclassified(t *testing.T) {
	t.Parallel()
	const (
		co, si, ga, ho = history.Completed, history.Silent, history.Gap, history.Hole
		cr, st, fa, in = history.Corrupted, history.Stuck, history.Failed, history.Infra
	)
	tests := []struct {
		name          string
		base          *reports.Cell
		head          *reports.Cell
		target        bool
		want          int
		wantOutcomes  oc
		wantUnknown   bool
		wantFaultedOf int
	}{
		{"measured local hook-storm main: corrupted turned silent is the cell's own",
			cellOf("main", oc{co: 7, cr: 5}, nil), cellOf("main", oc{co: 2, cr: 4, si: 6}, oc{co: 2, cr: 4, si: 6}), false, 0, nil, false, 12},
		{"measured target: every run completed under faults",
			cellOf("seq+callsite+ordered", oc{co: 12}, nil), cellOf("seq+callsite+ordered", oc{co: 12}, oc{co: 12}), true, 0, nil, false, 12},
		{"measured redis hook-storm: a faulted infra run is infra, rightly",
			cellOf("main/guard=count-index", oc{co: 9, cr: 2, si: 1}, nil), cellOf("main/guard=count-index", oc{co: 6, cr: 2, si: 3, in: 1}, oc{co: 5, cr: 2, si: 3, in: 1}), false, 0, nil, false, 11},
		{"a faulted wrong run in a cell never wrong without the nemesis",
			cellOf("main", oc{co: 12}, nil), cellOf("main", oc{co: 10, cr: 1, ga: 1}, oc{co: 10, cr: 1, ga: 1}), false, 2, oc{cr: 1, ga: 1}, false, 12},
		{"an unfaulted wrong run is a finding, not a misclassification",
			cellOf("main", oc{co: 12}, nil), cellOf("main", oc{co: 11, cr: 1}, oc{co: 11}), false, 0, nil, false, 11},
		{"under the target any faulted wrong run counts, even one base had",
			cellOf("seq+callsite+ordered", oc{co: 11, si: 1}, nil), cellOf("seq+callsite+ordered", oc{co: 10, si: 1, ho: 1}, oc{co: 10, si: 1, ho: 1}), true, 2, oc{si: 1, ho: 1}, false, 12},
		{"faulted stuck and failed runs the cell never had",
			cellOf("main", oc{co: 10, cr: 2}, nil), cellOf("main", oc{co: 8, cr: 2, st: 1, fa: 1}, oc{co: 8, st: 1, fa: 1}), false, 2, oc{st: 1, fa: 1}, false, 10},
		{"a faulted stuck run where the cell had stuck runs without the nemesis",
			cellOf("main", oc{co: 10, st: 2}, nil), cellOf("main", oc{co: 11, st: 1}, oc{co: 11, st: 1}), false, 0, nil, false, 12},
		{"an infra run no fault overlapped",
			cellOf("main", oc{co: 12}, nil), cellOf("main", oc{co: 9, in: 3}, oc{co: 9, in: 1}), false, 2, oc{in: 2}, false, 10},
		{"base measured nothing: unknown", cellOf("main", oc{in: 12}, nil), cellOf("main", oc{cr: 12}, oc{cr: 12}), false, 0, nil, true, 0},
		{"head has no runs: unknown", cellOf("main", oc{co: 12}, nil), cellOf("main", nil, nil), false, 0, nil, true, 0},
		{"a side missing: unknown", nil, cellOf("main", oc{co: 12}, oc{co: 12}), false, 0, nil, true, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			m := compare.Misclassified(tt.base, tt.head, tt.target)
			if tt.wantUnknown {
				if m != nil {
					t.Fatalf("Misclassified = %+v, want nil (unknown)", m)
				}
				return
			}
			if m == nil {
				t.Fatal("Misclassified = nil, want a count")
			}
			if m.Count != tt.want || !maps.Equal(m.Outcomes, tt.wantOutcomes) {
				t.Errorf("Misclassified = %d %v, want %d %v", m.Count, m.Outcomes, tt.want, tt.wantOutcomes)
			}
			if m.Faulted != tt.wantFaultedOf || m.Runs != tt.head.Runs {
				t.Errorf("faulted %d/%d, want %d/%d", m.Faulted, m.Runs, tt.wantFaultedOf, tt.head.Runs)
			}
		})
	}
}

// TestCountMisclassified: the count is made only with a nemesis head and
// a base without, and is printed as its own table; otherwise a note says
// why, or (no nemesis head) nothing changes.
func TestCountMisclassified(t *testing.T) {
	t.Parallel()
	base := &reports.Summary{Cells: []*reports.Cell{cellOf("main", oc{history.Completed: 12}, nil)}}
	head := &reports.Summary{Cells: []*reports.Cell{cellOf("main", oc{history.Completed: 11, history.Infra: 1}, oc{history.Completed: 11})}}
	isTarget := func(string) bool { return false }
	tests := []struct {
		name                     string
		baseNemesis, headNemesis bool
		wantTotal                int // -1: not counted
		wantOut                  string
	}{
		{"nemesis head against a base without", false, true, 1, "misclassified under faults (head ran under --nemesis, base without): 1"},
		{"both under the nemesis", true, true, -1, "not counted: base ran under --nemesis too"},
		{"no nemesis head", false, false, -1, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cmp := compare.Compare(base, head)
			cmp.CountMisclassified(tt.baseNemesis, tt.headNemesis, isTarget)
			switch {
			case tt.wantTotal < 0 && cmp.MisclassifiedTotal != nil:
				t.Errorf("total %d, want none", *cmp.MisclassifiedTotal)
			case tt.wantTotal >= 0 && (cmp.MisclassifiedTotal == nil || *cmp.MisclassifiedTotal != tt.wantTotal):
				t.Errorf("total %v, want %d", cmp.MisclassifiedTotal, tt.wantTotal)
			}
			for _, write := range []func(*bytes.Buffer) error{
				func(b *bytes.Buffer) error { return cmp.Table(b) },
				func(b *bytes.Buffer) error { return cmp.Markdown(b) },
			} {
				var b bytes.Buffer
				if err := write(&b); err != nil {
					t.Fatal(err)
				}
				has := strings.Contains(b.String(), "misclassified")
				if tt.wantOut == "" && has || tt.wantOut != "" && !strings.Contains(b.String(), tt.wantOut) {
					t.Errorf("output, want %q:\n%s", tt.wantOut, b.String())
				}
			}
		})
	}
}
