package cli_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stormctl/stormctl/internal/cli"
	"github.com/stormctl/stormctl/reports/compare"
)

func TestCompareCommand(t *testing.T) {
	base, head := fixtureStorm(t, "clean"), fixtureStorm(t, "seq-worse")
	want := map[string]string{
		"local/step-storm/main":                 compare.NoEvidence,
		"local/control/main":                    compare.NoEvidence,
		"local/step-storm/seq+callsite+ordered": compare.Worse,
		"local/control/seq+callsite+ordered":    compare.NoEvidence,
		"local/hook-storm/seq+callsite+ordered": compare.OnlyHead,
	}
	code, stdout, stderr := run(t.Context(), "compare", base, head, "--format", "json")
	if code != cli.ExitOK || stderr != "" {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	var cmp compare.Comparison
	if err := json.Unmarshal([]byte(stdout), &cmp); err != nil {
		t.Fatalf("not a comparison: %v\n%s", err, stdout)
	}
	if cmp.Base != base || cmp.Head != head || len(cmp.Cells) != len(want) {
		t.Fatalf("comparison of %s and %s with %d cells, want %d:\n%s", cmp.Base, cmp.Head, len(cmp.Cells), len(want), stdout)
	}
	for _, cc := range cmp.Cells {
		if w := want[cc.CellKey.String()]; cc.Verdict != w {
			t.Errorf("%s: verdict %q, want %q", cc.CellKey, cc.Verdict, w)
		}
	}
	worse := cmp.Cells[2].Corrupted
	if worse == nil || worse.P == nil || worse.RunsNeeded == nil || *worse.RunsNeeded != 33 ||
		worse.Base.Hi < 0.137 || worse.Base.Hi > 0.139 {
		t.Errorf("the worse cell's statistics: %+v", worse)
	}

	for _, format := range []string{"table", "markdown"} {
		code, stdout, _ := run(t.Context(), "compare", base, head, "--format", format)
		if code != cli.ExitOK {
			t.Errorf("%s: exit %d", format, code)
		}
		for _, w := range []string{"worse", "only in head", "0/24 0.0% [0.0, 13.8]", "5/24 20.8% [9.2, 40.5]", "+20.8 pp", "0.0496", "33", "—"} {
			if !strings.Contains(stdout, w) {
				t.Errorf("%s output lacks %q:\n%s", format, w, stdout)
			}
		}
	}
}
