package stormdir_test

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/stormctl/stormctl/internal/history"
	"github.com/stormctl/stormctl/internal/storm/stormdir"
	"github.com/stormctl/stormctl/reports"
)

// runLine is one runs.jsonl line of cell local/control/main.
func runLine(t *testing.T, id string, idx int) string {
	t.Helper()
	b, err := json.Marshal(reports.RunRecord{CellKey: history.NewCellKey("local", "control", "main"), Index: idx, RunID: id, Outcome: history.Completed})
	if err != nil {
		t.Fatal(err)
	}
	return string(b) + "\n"
}

func opLine(id, kind string) string {
	return `{"op":"` + kind + `","run_id":"` + id + `","start":"2026-01-01T00:00:00Z","end":"2026-01-01T00:00:00Z"}` + "\n"
}

// TestResumeReadAndTrim: what an interrupted storm's directory holds, read
// back and trimmed for the runs still to run. Runs r1 and r2 finished; r3
// was in flight when the storm was stopped (its history, and maybe its
// final log, written; its runs.jsonl line not, or cut off).
func TestResumeReadAndTrim(t *testing.T) {
	tests := []struct {
		name string
		// runs is runs.jsonl's text; "{rN}" is the line of run rN at index N.
		runs        string
		history     string
		events      []string // final logs under events/local_control_main/
		wantRuns    []string
		wantCut     int
		wantErr     string
		wantHistory []string // run ids of the kept history lines, in order
		wantEvents  []string
		wantDropped int
	}{
		{name: "stopped between runs (Ctrl-C)", runs: "{r1}{r2}", history: opLine("r1", "append") + opLine("r2", "append"),
			events: []string{"r1", "r2"}, wantRuns: []string{"r1", "r2"}, wantHistory: []string{"r1", "r2"}, wantEvents: []string{"r1", "r2"}},
		{name: "killed with a run in flight", runs: "{r1}{r2}", history: opLine("r1", "append") + opLine("r3", "append") + opLine("r2", "read") + opLine("r3", "read"),
			events: []string{"r1", "r2", "r3"}, wantRuns: []string{"r1", "r2"}, wantHistory: []string{"r1", "r2"}, wantEvents: []string{"r1", "r2"}, wantDropped: 2},
		{name: "killed writing runs.jsonl", runs: "{r1}{r2}{r3-cut}", history: opLine("r1", "append") + opLine("r2", "append") + opLine("r3", "append"),
			events: []string{"r1", "r2", "r3"}, wantRuns: []string{"r1", "r2"}, wantCut: 3, wantHistory: []string{"r1", "r2"}, wantEvents: []string{"r1", "r2"}, wantDropped: 1},
		{name: "killed writing history.jsonl", runs: "{r1}", history: opLine("r1", "append") + strings.TrimSuffix(opLine("r1", "read"), "}\n"),
			events: []string{"r1"}, wantRuns: []string{"r1"}, wantHistory: []string{"r1"}, wantEvents: []string{"r1"}, wantDropped: 1},
		{name: "a last line that is not JSON", runs: "{r1}not json\n", history: opLine("r1", "append"),
			wantRuns: []string{"r1"}, wantCut: 2, wantHistory: []string{"r1"}},
		{name: "nothing finished", runs: "", history: opLine("r3", "append"), events: []string{"r3"}, wantDropped: 1},
		{name: "a malformed line before the last", runs: "{r1}not json\n{r2}", wantErr: "runs.jsonl:2: malformed line"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			runs := tc.runs
			for i, id := range []string{"r1", "r2", "r3"} {
				line := runLine(t, id, i+1)
				runs = strings.ReplaceAll(runs, "{"+id+"}", line)
				runs = strings.ReplaceAll(runs, "{"+id+"-cut}", line[:len(line)/2])
			}
			write := func(rel, text string) {
				t.Helper()
				path := filepath.Join(dir, rel)
				if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			write(stormdir.FileRuns, runs)
			write(stormdir.FileHistory, tc.history)
			for _, id := range tc.events {
				write(filepath.Join(stormdir.DirEvents, "local_control_main", id+".jsonl"), "{}\n")
			}

			rec, err := stormdir.ReadRecorded(dir)
			if tc.wantErr != "" {
				var ae *stormdir.ArtifactError
				if err == nil || !errors.As(err, &ae) || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("stormdir.ReadRecorded error = %v, want an *stormdir.ArtifactError with %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var ids []string
			for _, r := range rec.Runs {
				ids = append(ids, r.RunID)
			}
			if !slices.Equal(ids, tc.wantRuns) || rec.CutLine != tc.wantCut {
				t.Fatalf("recorded %v, cut line %d; want %v, %d", ids, rec.CutLine, tc.wantRuns, tc.wantCut)
			}

			trimmed, err := stormdir.TrimUnrecorded(dir, rec)
			if err != nil {
				t.Fatal(err)
			}
			if trimmed.HistoryLines != tc.wantDropped {
				t.Errorf("dropped %d history lines, want %d", trimmed.HistoryLines, tc.wantDropped)
			}
			b, _ := os.ReadFile(filepath.Join(dir, stormdir.FileRuns))
			var wantText string
			for _, id := range tc.wantRuns {
				wantText += runLine(t, id, int(id[1]-'0'))
			}
			if string(b) != wantText {
				t.Errorf("runs.jsonl after trimming =\n%s\nwant\n%s", b, wantText)
			}
			hist, err := current(dir).History()
			if err != nil {
				t.Fatal(err)
			}
			var histIDs []string
			for id, ops := range hist {
				for range ops {
					histIDs = append(histIDs, id)
				}
				if !reflect.DeepEqual(ops, trimmed.Ops[id]) {
					t.Errorf("stormdir.Trimmed.Ops[%s] = %v, history.jsonl has %v", id, trimmed.Ops[id], ops)
				}
			}
			slices.Sort(histIDs)
			if !slices.Equal(histIDs, tc.wantHistory) {
				t.Errorf("history.jsonl holds runs %v, want %v", histIDs, tc.wantHistory)
			}
			entries, _ := os.ReadDir(filepath.Join(dir, stormdir.DirEvents, "local_control_main"))
			var events []string
			for _, e := range entries {
				events = append(events, strings.TrimSuffix(e.Name(), ".jsonl"))
			}
			if !slices.Equal(events, tc.wantEvents) {
				t.Errorf("final logs %v, want %v", events, tc.wantEvents)
			}
		})
	}
}

// TestReadRecordedNotAStorm: a directory without runs.jsonl is refused
// with ErrNotStorm.
func TestReadRecordedNotAStorm(t *testing.T) {
	if _, err := stormdir.ReadRecorded(t.TempDir()); !errors.Is(err, stormdir.ErrNotStorm) {
		t.Fatalf("err = %v, want stormdir.ErrNotStorm", err)
	}
}

// TestAppendWriter: a resumed storm's writer appends to runs.jsonl and
// history.jsonl rather than starting them over.
func TestAppendWriter(t *testing.T) {
	dir := t.TempDir()
	w, err := stormdir.OpenWriter(dir, &stormdir.Meta{Schema: reports.SchemaVersion})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.WriteRun(reports.RunRecord{CellKey: history.NewCellKey("local", "control", "main"), RunID: "r1"}); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	w, err = stormdir.AppendWriter(dir, &stormdir.Meta{Schema: reports.SchemaVersion})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.WriteRun(reports.RunRecord{CellKey: history.NewCellKey("local", "control", "main"), RunID: "r2"}); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	runs, err := current(dir).Runs()
	if err != nil || len(runs) != 2 || runs[0].RunID != "r1" || runs[1].RunID != "r2" {
		t.Fatalf("runs.jsonl holds %+v, %v; want r1 then r2", runs, err)
	}
}

// TestTrimRemovesUnfinishedRunsFiles: readying an interrupted storm for
// more runs removes the final logs and the timelines of the runs
// runs.jsonl does not list, and keeps those of the runs it lists.
func TestTrimRemovesUnfinishedRunsFiles(t *testing.T) {
	dir := t.TempDir()
	files := map[string]bool{ // path: kept
		filepath.Join(stormdir.DirEvents, "local_control_main", "r1.jsonl"): true,
		filepath.Join(stormdir.DirEvents, "local_control_main", "r2.jsonl"): false,
		filepath.Join(stormdir.DirTimelines, "r1.html"):                     true,
		filepath.Join(stormdir.DirTimelines, "r2.html"):                     false,
	}
	for path := range files {
		if err := os.MkdirAll(filepath.Join(dir, filepath.Dir(path)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, path), []byte("{}\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, stormdir.FileRuns), []byte(runLine(t, "r1", 0)), 0o644); err != nil {
		t.Fatal(err)
	}
	rec, err := stormdir.ReadRecorded(dir)
	if err != nil {
		t.Fatal(err)
	}
	trimmed, err := stormdir.TrimUnrecorded(dir, rec)
	if err != nil {
		t.Fatal(err)
	}
	if trimmed.Events != 1 {
		t.Errorf("%d final logs removed, want 1", trimmed.Events)
	}
	for path, kept := range files {
		if _, err := os.Stat(filepath.Join(dir, path)); (err == nil) != kept {
			t.Errorf("%s: kept %v, want %v", path, err == nil, kept)
		}
	}
}
