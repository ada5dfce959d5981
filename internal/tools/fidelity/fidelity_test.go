package fidelity_test

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stormctl/stormctl/internal/history"
	"github.com/stormctl/stormctl/internal/tools/fidelity"
	"github.com/stormctl/stormctl/reports"
)

// claimCase is one case of testdata/claims.txt (its format is described at
// the top of that file).
type claimCase struct {
	name, line string
	worlds     []string
	evaluate   []string
	cells      map[history.CellKey]*reports.Cell
	order      []history.CellKey
	checks     []check
}

// check is a want, measured or note line.
type check struct {
	kind, world, claim, verdict, text string
	line                              int
}

func parseCell(t *testing.T, at string, k history.CellKey, kvs []string) *reports.Cell {
	t.Helper()
	c := &reports.Cell{CellKey: k}
	for _, kv := range kvs {
		key, val, _ := strings.Cut(kv, "=")
		n, err := strconv.Atoi(val)
		if err != nil {
			t.Fatalf("%s: %q: %v", at, kv, err)
		}
		if key == "rejections" {
			c.Rejections = n
			continue
		}
		if !slices.Contains(history.Outcomes(), history.Outcome(key)) {
			t.Fatalf("%s: unknown key %q", at, key)
		}
		for range n {
			c.Add(reports.RunRecord{Outcome: history.Outcome(key)})
		}
	}
	return c
}

// readCases reads testdata/claims.txt.
func readCases(t *testing.T) []*claimCase {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", "claims.txt"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	type baseCell struct {
		scenario, condition string
		kvs                 []string
	}
	var base []baseCell
	var cases []*claimCase
	var cur *claimCase
	type edit struct {
		op   string
		k    history.CellKey
		kvs  []string
		line int
	}
	edits := map[*claimCase][]edit{}
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		fields := strings.Fields(sc.Text())
		if len(fields) == 0 || strings.HasPrefix(fields[0], "#") {
			continue
		}
		at := fmt.Sprintf("claims.txt:%d", n)
		if fields[0] != "base" && fields[0] != "case" && cur == nil {
			t.Fatalf("%s: %s before the first case", at, fields[0])
		}
		switch fields[0] {
		case "base":
			base = append(base, baseCell{fields[1], fields[2], fields[3:]})
		case "case":
			cur = &claimCase{name: strings.Join(fields[1:], " "), line: at, worlds: []string{"postgres"}}
			cases = append(cases, cur)
		case "worlds":
			cur.worlds = fields[1:]
		case "evaluate":
			cur.evaluate = fields[1:]
		case "cell", "drop":
			if len(fields) < 4 {
				t.Fatalf("%s: want %s WORLD SCENARIO CONDITION", at, fields[0])
			}
			edits[cur] = append(edits[cur], edit{fields[0], history.CellKey{World: fields[1], Scenario: fields[2], Condition: fields[3]}, fields[4:], n})
		case "want":
			if len(fields) < 4 {
				t.Fatalf("%s: want WORLD CLAIM VERDICT [text]", at)
			}
			cur.checks = append(cur.checks, check{"want", fields[1], fields[2], fields[3], strings.Join(fields[4:], " "), n})
		case "measured", "note":
			if len(fields) < 4 {
				t.Fatalf("%s: want %s WORLD CLAIM text", at, fields[0])
			}
			cur.checks = append(cur.checks, check{kind: fields[0], world: fields[1], claim: fields[2], text: strings.Join(fields[3:], " "), line: n})
		default:
			t.Fatalf("%s: unknown directive %q", at, fields[0])
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	for _, c := range cases {
		c.cells = map[history.CellKey]*reports.Cell{}
		put := func(k history.CellKey, cell *reports.Cell) {
			if _, ok := c.cells[k]; !ok {
				c.order = append(c.order, k)
			}
			c.cells[k] = cell
		}
		for _, w := range c.worlds {
			for _, b := range base {
				k := history.CellKey{World: w, Scenario: b.scenario, Condition: b.condition}
				put(k, parseCell(t, "claims.txt base", k, b.kvs))
			}
		}
		for _, e := range edits[c] {
			at := fmt.Sprintf("claims.txt:%d", e.line)
			if e.op == "drop" {
				if _, ok := c.cells[e.k]; !ok {
					t.Fatalf("%s: no cell %s to drop", at, e.k)
				}
				delete(c.cells, e.k)
				c.order = slices.DeleteFunc(c.order, func(k history.CellKey) bool { return k == e.k })
				continue
			}
			put(e.k, parseCell(t, at, e.k, e.kvs))
		}
	}
	return cases
}

func TestEvaluate(t *testing.T) {
	for _, tc := range readCases(t) {
		t.Run(tc.name, func(t *testing.T) {
			s := &reports.Summary{}
			for _, k := range tc.order {
				s.Cells = append(s.Cells, tc.cells[k])
			}
			results := fidelity.Evaluate(s, tc.evaluate...)
			find := func(c check) *fidelity.Result {
				for i := range results {
					if results[i].World == c.world && results[i].Claim == c.claim {
						return &results[i]
					}
				}
				t.Fatalf("claims.txt:%d: no result for %s %s; results: %+v", c.line, c.world, c.claim, results)
				return nil
			}
			wanted := map[[2]string]bool{}
			for _, c := range tc.checks {
				r := find(c)
				switch c.kind {
				case "want":
					wanted[[2]string{c.world, c.claim}] = true
					if string(r.Verdict) != c.verdict || !strings.Contains(r.Reason, c.text) {
						t.Errorf("claims.txt:%d: %s %s = %s (%s), want %s with a reason containing %q", c.line, c.world, c.claim, r.Verdict, r.Reason, c.verdict, c.text)
					}
				case "measured":
					if !strings.Contains(r.Measured, c.text) {
						t.Errorf("claims.txt:%d: %s %s measured %q, want it to contain %q", c.line, c.world, c.claim, r.Measured, c.text)
					}
				case "note":
					if !strings.Contains(r.Note, c.text) {
						t.Errorf("claims.txt:%d: %s %s note %q, want it to contain %q", c.line, c.world, c.claim, r.Note, c.text)
					}
				}
			}
			for _, r := range results {
				if !wanted[[2]string{r.World, r.Claim}] && r.Verdict != fidelity.Pass {
					t.Errorf("%s: %s %s = %s (%s), want pass (no want line)", tc.line, r.World, r.Claim, r.Verdict, r.Reason)
				}
				if r.Reason == "" || r.Measured == "" || r.Reference == "" || r.Text == "" {
					t.Errorf("%s: %s %s has an empty field: %+v", tc.line, r.World, r.Claim, r)
				}
			}
		})
	}
}

// TestCellsFor pins the reference cells each world runs: the union of the
// cells its claims read, and nothing else.
func TestCellsFor(t *testing.T) {
	all := map[string][]string{
		"step-storm": {"main", "callsite", "seq", "seq+callsite+ordered"},
		"hook-storm": {"main", "callsite", "seq", "tail-fence", "seq+callsite+ordered"},
		"control":    {"main", "callsite", "seq", "tail-fence", "seq+callsite+ordered"},
	}
	for _, world := range []string{"local", "postgres", "vercel"} {
		t.Run(world, func(t *testing.T) {
			var want []history.CellKey
			for _, s := range []string{"step-storm", "hook-storm", "control"} {
				for _, c := range all[s] {
					if world == "vercel" && c == "seq" && s != "control" {
						continue // the seq claims hold on postgres and local only
					}
					want = append(want, history.CellKey{World: world, Scenario: s, Condition: c})
				}
			}
			if got := fidelity.CellsFor(world); !slices.Equal(got, want) {
				t.Errorf("CellsFor(%s) =\n%v\nwant\n%v", world, got, want)
			}
			var ids []string
			for _, c := range fidelity.Claims() {
				if c.AppliesTo(world) {
					ids = append(ids, c.ID)
				}
			}
			wantIDs := []string{"main-step-corrupted", "control-clean", "callsite-step", "callsite-hook", "tail-fence-hook-not-better", "target-clean"}
			switch world {
			case "postgres":
				wantIDs = slices.Insert(wantIDs, 4, "seq-step", "seq-hook-not-worse")
			case "local":
				wantIDs = slices.Insert(wantIDs, 4, "seq-step-local-not-better", "seq-hook-local-not-worse")
			}
			if !slices.Equal(ids, wantIDs) {
				t.Errorf("claims on %s = %v, want %v", world, ids, wantIDs)
			}
		})
	}
}
