package stormdir_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stormctl/stormctl/internal/analysis/verdict"
	"github.com/stormctl/stormctl/internal/history"
	"github.com/stormctl/stormctl/internal/storm/stormdir"
	"github.com/stormctl/stormctl/reports"
)

// TestReplaceRuns: the judged records replace their lines, every other
// line stays byte for byte, and runs written after go on the new file.
func TestReplaceRuns(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "storm")
	w, err := stormdir.OpenWriter(dir, &stormdir.Meta{Schema: reports.SchemaVersion})
	if err != nil {
		t.Fatal(err)
	}
	k := history.NewCellKey("devkit-local", "step-storm", "main")
	pending := verdict.Judgement{Actor: "inv-1", Verdict: verdict.Unknown, Pending: true}
	for _, id := range []string{"wrun_a", "wrun_b", "wrun_c"} {
		if err := w.WriteRun(reports.RunRecord{CellKey: k, RunID: id, Outcome: history.Completed, Verdicts: []verdict.Judgement{pending}}); err != nil {
			t.Fatal(err)
		}
	}
	before := lines(t, filepath.Join(dir, stormdir.FileRuns))
	judged := reports.RunRecord{CellKey: k, RunID: "wrun_b", Outcome: history.Completed,
		Verdicts: []verdict.Judgement{{Actor: "inv-1", Verdict: verdict.TruePositive, Reason: "admitted, it diverges"}}}
	if err := w.ReplaceRuns(map[string]reports.RunRecord{"wrun_b": judged}); err != nil {
		t.Fatal(err)
	}
	if err := w.WriteRun(reports.RunRecord{CellKey: k, RunID: "wrun_d", Outcome: history.Completed}); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	after := lines(t, filepath.Join(dir, stormdir.FileRuns))
	if len(after) != 4 {
		t.Fatalf("runs.jsonl has %d lines, want 4 (three, one replaced, and one written after)", len(after))
	}
	if !bytes.Equal(after[0], before[0]) || !bytes.Equal(after[2], before[2]) {
		t.Errorf("lines not judged changed:\n%s\n%s", after[0], after[2])
	}
	var got reports.RunRecord
	if err := json.Unmarshal(after[1], &got); err != nil {
		t.Fatal(err)
	}
	if got.RunID != "wrun_b" || len(got.Verdicts) != 1 || got.Verdicts[0].Verdict != verdict.TruePositive || got.Verdicts[0].Pending {
		t.Errorf("line 2 = %s, want wrun_b judged", after[1])
	}
	if err := json.Unmarshal(after[3], &got); err != nil || got.RunID != "wrun_d" {
		t.Errorf("line 4 = %s, want wrun_d, written after the rewrite", after[3])
	}
}

func lines(t *testing.T, path string) [][]byte {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out [][]byte
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		out = append(out, bytes.Clone(sc.Bytes()))
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}
