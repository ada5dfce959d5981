package stormdir_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stormctl/stormctl/forensics"
	"github.com/stormctl/stormctl/internal/analysis/verdict"
	"github.com/stormctl/stormctl/internal/eventlog"
	"github.com/stormctl/stormctl/internal/history"
	"github.com/stormctl/stormctl/internal/storm/stormdir"
	"github.com/stormctl/stormctl/reports"
)

// The fuzz targets below feed the readers of a storm directory arbitrary
// bytes, laid out as a storm writes them: artifacts are copied between
// machines and uploaded by CI, so a reader must answer a malformed or
// hostile one with an error naming the file (and the line), never a
// panic. Each target also checks the reader's own rules against an oracle
// written from its documentation, and that what it read survives being
// written by Writer and read again.

// current is dir read as a storm directory of this build's schema (the
// fuzzed directories have no storm.json to name one).
func current(dir string) *stormdir.Dir {
	return &stormdir.Dir{Path: dir, Meta: &stormdir.Meta{Schema: reports.SchemaVersion}}
}

// fuzzDir writes files (path under the directory: content) into a fresh
// directory and returns it.
func fuzzDir(t *testing.T, files map[string][]byte) string {
	t.Helper()
	dir := t.TempDir()
	for rel, b := range files {
		path := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// scanLines splits a JSONL file's data into lines as its readers do
// (bufio.ScanLines): at each '\n', a trailing '\r' dropped, no empty line
// after a final '\n'.
func scanLines(data []byte) [][]byte {
	lines := bytes.Split(data, []byte("\n"))
	if len(lines[len(lines)-1]) == 0 {
		lines = lines[:len(lines)-1]
	}
	for i, l := range lines {
		lines[i] = bytes.TrimSuffix(l, []byte("\r"))
	}
	return lines
}

// decodeLines is the oracle of a JSONL reader: the values the lines of
// data hold, in order, and the numbers of the lines it must report
// (valid says whether a line holds a T). Blank lines hold nothing.
func decodeLines[T any](data []byte, valid func(T) bool) (vals []T, bad []int) {
	for i, l := range scanLines(data) {
		if len(bytes.TrimSpace(l)) == 0 {
			continue
		}
		var v T
		if err := json.Unmarshal(l, &v); err != nil || !valid(v) {
			bad = append(bad, i+1)
			continue
		}
		vals = append(vals, v)
	}
	return vals, bad
}

// isRun is what makes a runs.jsonl line a run record: its cell.
func isRun(r reports.RunRecord) bool { return r.World != "" && r.Scenario != "" && r.Condition != "" }

// anyValue takes every value a line decodes to (operations, events).
func anyValue[T any](T) bool { return true }

// flatten lists the errors joined in err, joins within joins included.
func flatten(err error) []error {
	var out []error
	for _, e := range unjoin(err) {
		if _, ok := e.(interface{ Unwrap() []error }); ok {
			out = append(out, flatten(e)...)
		} else {
			out = append(out, e)
		}
	}
	return out
}

// errorLines checks that every error joined in err is an *ArtifactError
// naming path, its text starting with the path (and ":line:" when it has
// a line), and returns the lines named (0 for the whole file).
func errorLines(t *testing.T, err error, path string) []int {
	t.Helper()
	var lines []int
	for _, e := range flatten(err) {
		var ae *stormdir.ArtifactError
		if !errors.As(e, &ae) || ae.File != path {
			t.Fatalf("error %q is not an *stormdir.ArtifactError naming %s", e, path)
		}
		prefix := path + ": "
		if ae.Line > 0 {
			prefix = fmt.Sprintf("%s:%d: ", path, ae.Line)
		}
		if !strings.HasPrefix(e.Error(), prefix) {
			t.Fatalf("error %q does not start with %q", e, prefix)
		}
		lines = append(lines, ae.Line)
	}
	return lines
}

// sameJSON fails unless got and want marshal alike: the artifacts' own
// encoding is the equality that matters (times in other zones, payloads
// as written).
func sameJSON(t *testing.T, what string, got, want any) {
	t.Helper()
	g, err := json.Marshal(got)
	if err != nil {
		t.Fatalf("%s: encode: %v", what, err)
	}
	w, err := json.Marshal(want)
	if err != nil {
		t.Fatalf("%s: encode: %v", what, err)
	}
	if !bytes.Equal(g, w) {
		t.Fatalf("%s =\n%s\nwant\n%s", what, g, w)
	}
}

// writeBack writes through fill, with a fresh Writer, a storm
// directory and returns it.
func writeBack(t *testing.T, fill func(*stormdir.Writer) error) string {
	t.Helper()
	dir := t.TempDir()
	w, err := stormdir.OpenWriter(dir, &stormdir.Meta{Schema: reports.SchemaVersion})
	if err != nil {
		t.Fatal(err)
	}
	if err := fill(w); err != nil {
		t.Fatalf("write back what was read: %v", err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return dir
}

// addFixtures seeds f with the name file of every testdata storm.
func addFixtures(f *testing.F, name string) {
	paths, err := filepath.Glob(filepath.Join("testdata", "storms", "*", name))
	if err != nil || len(paths) == 0 {
		f.Fatalf("no %s among the storm fixtures: %v", name, err)
	}
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
}

// jsonl is values as the writer writes them, one JSON line each.
func jsonl[T any](f *testing.F, vals ...T) []byte {
	var b bytes.Buffer
	for _, v := range vals {
		if err := json.NewEncoder(&b).Encode(v); err != nil {
			f.Fatal(err)
		}
	}
	return b.Bytes()
}

var fuzzTime = time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC)

// fullRun is a run record with every field set.
func fullRun() reports.RunRecord {
	tp := verdict.Judgement{Actor: "inv-1", At: fuzzTime, Expected: 3, Actual: 4, Verdict: verdict.TruePositive, Reason: "stale <read> & \"more\""}
	return reports.RunRecord{CellKey: history.NewCellKey("vercel", "hook-storm", "seq/wake=ordered"), Index: 7, RunID: "wrun_01KAB",
		Outcome: history.Silent, Detail: "wrong output", Started: fuzzTime, Ended: fuzzTime.Add(time.Minute), Millis: 60000, Events: 40,
		Stats:        history.RunStats{Invocations: 9, Replays: 8, Divergences: 1, Recoveries: 1, Rejections: 2, Recovered: 1},
		CommitSource: "store", Guard: &history.GuardCounts{Evaluated: 5, Passed: 4, Rejected: 1},
		Findings: forensics.RunFindings{Reads: 10, NonPrefixReads: 2, Inversions: 3, Slot: &forensics.SlotFindings{HolesSeen: 1,
			SealedBy: map[string]int{"inv": 1}, FillMillis: []float64{1.5, 0.25}}},
		Verdicts: []verdict.Judgement{tp, {Actor: "step-1", Verdict: verdict.Benign}}, Judged: true,
		Class: "stale-prefix", Timeline: "timelines/wrun_01KAB.html", Faults: []string{"pg-restart#1"}}
}

// FuzzReadRuns: Dir.Runs returns the run record of every line that holds
// one, in order, and an error naming runs.jsonl and each other non-blank
// line; LoadStorm reads the same runs and faults the same lines; the runs
// read, written again, read back the same.
func FuzzReadRuns(f *testing.F) {
	addFixtures(f, stormdir.FileRuns)
	full := jsonl(f, fullRun())
	f.Add(full)
	f.Add(append(bytes.Repeat(full, 2), full[:len(full)/2]...))
	// Found Dir.Runs taking null and {} for runs (LoadStorm refuses them)
	// and LoadStorm calling a line of spaces malformed (ReadRecorded skips
	// it).
	f.Add([]byte("null\n{}\n \n\r\n[]\n\"x\"\n" + string(full)))
	f.Add(bytes.ReplaceAll(full, []byte("\n"), []byte("\r\n")))
	f.Fuzz(func(t *testing.T, data []byte) {
		dir := fuzzDir(t, map[string][]byte{stormdir.FileRuns: data})
		path := filepath.Join(dir, stormdir.FileRuns)
		runs, err := current(dir).Runs()
		want, bad := decodeLines(data, isRun)
		sameJSON(t, "runs", runs, want)
		if got := errorLines(t, err, path); !slices.Equal(got, bad) {
			t.Fatalf("lines reported %v, want %v (%v)", got, bad, err)
		}

		st, err := stormdir.LoadStorm(dir)
		if st == nil {
			t.Fatalf("stormdir.LoadStorm = nil, %v", err)
		}
		sameJSON(t, "stormdir.LoadStorm's runs", st.Runs, runs)
		var loadBad []int
		for _, e := range flatten(err) {
			if ae := (*stormdir.ArtifactError)(nil); errors.As(e, &ae) && ae.File == path {
				loadBad = append(loadBad, ae.Line)
			}
		}
		if !slices.Equal(loadBad, bad) {
			t.Fatalf("stormdir.LoadStorm reports runs.jsonl lines %v, stormdir.ReadRuns %v", loadBad, bad)
		}
		for i, l := range st.Lines {
			var r reports.RunRecord
			if err := json.Unmarshal(l, &r); err != nil {
				t.Fatalf("stormdir.Stored.Lines[%d] %q: %v", i, l, err)
			}
			sameJSON(t, fmt.Sprintf("stormdir.Stored.Lines[%d]", i), r, st.Runs[i])
		}

		back := writeBack(t, func(w *stormdir.Writer) error {
			for _, r := range runs {
				if err := w.WriteRun(r); err != nil {
					return err
				}
			}
			return nil
		})
		again, err := current(back).Runs()
		if err != nil {
			t.Fatalf("the runs read, written again: %v", err)
		}
		sameJSON(t, "runs read again", again, runs)
	})
}

// fuzzOps are history.jsonl operations of two runs, every field set
// somewhere.
func fuzzOps() []history.Op {
	return []history.Op{
		{Kind: history.OpList, Actor: "inv-1", RunID: "wrun_a", Start: fuzzTime, End: fuzzTime.Add(time.Millisecond), Limit: 100,
			After: eventlog.Cursor{ID: "evnt_1", Seq: 1}, Read: &history.ReadSummary{N: 2, First: eventlog.Cursor{Seq: 2}, Last: eventlog.Cursor{Seq: 3}, SetHash: 1 << 63, More: true}},
		{Kind: history.OpAppend, Actor: "step-1", RunID: "wrun_b", Start: fuzzTime, End: fuzzTime, Expected: 3, Actual: 4, Err: "conflict",
			ErrText: `pq: duplicate key "events_pkey" <&>`, Wrote: []history.OpEvent{{Type: eventlog.StepCreated, CorrelationID: "step_1", ID: "evnt_2", Seq: 2,
				MintedAt: fuzzTime, CommittedAt: fuzzTime, Token: "t", Dedup: "d", Payload: json.RawMessage(`{"name":"x"}`)}}},
		{Kind: history.OpList, Actor: "driver", RunID: "wrun_a", Start: fuzzTime, End: fuzzTime, Err: "hole", Slot: 4, Above: 5, Sealed: true, ReservedAt: fuzzTime},
	}
}

// FuzzReadHistory: Dir.History groups the operation of every line that
// holds one by run, in file order, and names each other non-blank line of
// history.jsonl; Dir.RunHistory, which skips the lines that cannot be of
// its run, reads the same operations for every run and reports no line
// Dir.History does not; what was read, written again, reads back the same.
func FuzzReadHistory(f *testing.F) {
	ops := jsonl(f, fuzzOps()...)
	f.Add(ops)
	f.Add(ops[:len(ops)-9])
	// Found Dir.RunHistory missing an operation whose run id is escaped,
	// and, for the run id "", calling the empty line malformed.
	f.Add([]byte(`{"op":"list","run_id":"wrun_\u0061"}` + "\n" + `{"op":"list","run_id":"wrun_a"` + "\n\n null \n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		dir := fuzzDir(t, map[string][]byte{stormdir.FileHistory: data})
		path := filepath.Join(dir, stormdir.FileHistory)
		byRun, err := current(dir).History()
		all, bad := decodeLines(data, anyValue[history.Op])
		want := map[string][]history.Op{}
		for _, op := range all {
			want[op.RunID] = append(want[op.RunID], op)
		}
		sameJSON(t, "history", byRun, want)
		if got := errorLines(t, err, path); !slices.Equal(got, bad) {
			t.Fatalf("lines reported %v, want %v (%v)", got, bad, err)
		}

		ids := append(slices.Sorted(maps.Keys(byRun)), "", "wrun_a", "wrun_none")
		for _, id := range ids {
			got, err := current(dir).RunHistory(id)
			sameJSON(t, fmt.Sprintf("RunHistory(%q)", id), got, byRun[id])
			for _, l := range errorLines(t, err, path) {
				if !slices.Contains(bad, l) {
					t.Fatalf("RunHistory(%q) reports line %d, which holds an operation (%v)", id, l, err)
				}
			}
		}

		back := writeBack(t, func(w *stormdir.Writer) error { return w.WriteHistory(all) })
		again, err := current(back).History()
		if err != nil {
			t.Fatalf("the history read, written again: %v", err)
		}
		sameJSON(t, "history read again", again, byRun)
		for _, id := range ids {
			got, err := current(back).RunHistory(id)
			if err != nil {
				t.Fatalf("RunHistory(%q) of the history written again: %v", id, err)
			}
			sameJSON(t, fmt.Sprintf("RunHistory(%q) of the history written again", id), got, byRun[id])
		}
	})
}

// FuzzReadEvents: Dir.Events returns the event of every line of a run's
// final log that holds one, in order, and names the file and each other
// non-blank line; a run id that is not a file name (runs.jsonl is as
// untrusted as the logs) is refused, naming the cell's directory, and
// never followed out of it; the events read, written again, read back
// the same.
func FuzzReadEvents(f *testing.F) {
	evs := []eventlog.Event{
		{RunID: "wrun_a", ID: "evnt_1", Seq: 1, Type: eventlog.RunCreated, Payload: json.RawMessage(`{"input":[1, 2]}`), MintedAt: fuzzTime, CommittedAt: fuzzTime},
		{RunID: "wrun_a", ID: "evnt_2", Seq: 2, Type: eventlog.StepCreated, CorrelationID: "step_1", Token: "t", Dedup: "d", MintedAt: fuzzTime},
	}
	full := jsonl(f, evs...)
	f.Add(full, "wrun_a")
	f.Add(full[:len(full)-7], "wrun_01KABCDEFGHJKMNPQRSTVWXYZ")
	f.Add([]byte(`{"eventId":"x","payload":null}`+"\n"+`{"payload":{`+"\n"), "..")
	// A path out of the storm, which Dir.Events followed; the fuzzer then
	// found "/" passing a first check (testdata/fuzz/FuzzReadEvents).
	f.Add(full, "../../../../../../../tmp/x")
	f.Add(full, "")
	k := history.CellKey{World: "local", Scenario: "control", Condition: "seq+callsite"}
	f.Fuzz(func(t *testing.T, data []byte, runID string) {
		cellDir := filepath.Join(stormdir.DirEvents, k.Dir())
		name := runID
		if !fileName(runID) {
			name = "elsewhere" // the final log is where a path would lead
		}
		// A name the system refuses (a NUL, too long) is not written:
		// reading it fails, naming it.
		unwritable := strings.ContainsRune(name, 0) || len(name+".jsonl") > 255
		files := map[string][]byte{}
		if !unwritable {
			files[filepath.Join(cellDir, name+".jsonl")] = data
		}
		dir := fuzzDir(t, files)
		path := filepath.Join(dir, cellDir, name+".jsonl")
		got, err := current(dir).Events(k, runID)
		if !fileName(runID) {
			if lines := errorLines(t, err, filepath.Join(dir, cellDir)); len(lines) != 1 || got != nil {
				t.Fatalf("run id %q: %d events, %v; want an error naming %s", runID, len(got), err, cellDir)
			}
			return
		}
		if unwritable {
			if lines := errorLines(t, err, path); len(lines) != 1 {
				t.Fatalf("run id %q: %v; want an error naming its final log", runID, err)
			}
			return
		}
		want, bad := decodeLines(data, anyValue[eventlog.Event])
		sameJSON(t, "events", got, want)
		if lines := errorLines(t, err, path); !slices.Equal(lines, bad) {
			t.Fatalf("lines reported %v, want %v (%v)", lines, bad, err)
		}
		back := writeBack(t, func(w *stormdir.Writer) error { return w.WriteEvents(k, runID, got) })
		again, err := current(back).Events(k, runID)
		if err != nil {
			t.Fatalf("the events read, written again: %v", err)
		}
		sameJSON(t, "events read again", again, got)
	})
}

// fileName reports whether a run id names a file of its own: not empty,
// no path separator.
func fileName(runID string) bool {
	return runID != "" && !strings.ContainsRune(runID, '/') && !strings.ContainsRune(runID, filepath.Separator)
}

// FuzzReadRecorded: ReadRecorded (storm --resume) keeps every run line
// and drops at most the last line, when it is cut off (no newline) or
// does not hold a run, naming it in CutLine; any other line that does not
// hold a run is an error naming runs.jsonl and the line. Size covers the
// lines kept: runs.jsonl cut to it, as TrimUnrecorded cuts it, reads back
// the same runs with nothing cut, and LoadStorm reads those runs from it
// without a fault.
func FuzzReadRecorded(f *testing.F) {
	addFixtures(f, stormdir.FileRuns)
	full := jsonl(f, fullRun())
	f.Add(full)
	f.Add(append(slices.Clone(full), full[:len(full)/2]...))
	f.Add(append(slices.Clone(full), "not json\n"...))
	f.Add(append([]byte("{}\n"), full...))
	// Found LoadStorm faulting a line of spaces ReadRecorded skips.
	f.Add([]byte("\n \n" + string(full) + "  "))
	f.Fuzz(func(t *testing.T, data []byte) {
		dir := fuzzDir(t, map[string][]byte{stormdir.FileRuns: data})
		path := filepath.Join(dir, stormdir.FileRuns)
		rec, err := stormdir.ReadRecorded(dir)

		// The oracle: the first line that does not hold a run (a last
		// line without a newline never does) is dropped when it is the
		// last, an error otherwise.
		lines := bytes.SplitAfter(data, []byte("\n"))
		if len(lines[len(lines)-1]) == 0 {
			lines = lines[:len(lines)-1]
		}
		var want []reports.RunRecord
		first, size := 0, 0
		for i, l := range lines {
			_, bad := decodeLines(l, isRun)
			if len(bad) > 0 || !bytes.HasSuffix(l, []byte("\n")) {
				first = i + 1
				break
			}
			if r, _ := decodeLines(l, isRun); len(r) > 0 {
				want = append(want, r[0])
			}
			size += len(l)
		}
		if first > 0 && first < len(lines) {
			if got := errorLines(t, err, path); !slices.Equal(got, []int{first}) {
				t.Fatalf("error %v, want one naming line %d", err, first)
			}
			return
		}
		if err != nil {
			t.Fatalf("ReadRecorded: %v", err)
		}
		sameJSON(t, "runs", rec.Runs, want)
		if rec.CutLine != first || rec.Size != int64(size) {
			t.Fatalf("cut line %d, size %d; want %d, %d", rec.CutLine, rec.Size, first, size)
		}

		if err := os.Truncate(path, rec.Size); err != nil {
			t.Fatal(err)
		}
		again, err := stormdir.ReadRecorded(dir)
		if err != nil || again.CutLine != 0 || again.Size != rec.Size {
			t.Fatalf("runs.jsonl cut to %d bytes: %+v, %v; want nothing cut", rec.Size, again, err)
		}
		sameJSON(t, "runs of runs.jsonl cut to its size", again.Runs, rec.Runs)
		st, err := stormdir.LoadStorm(dir)
		if st == nil {
			t.Fatalf("stormdir.LoadStorm = nil, %v", err)
		}
		for _, e := range flatten(err) {
			if ae := (*stormdir.ArtifactError)(nil); errors.As(e, &ae) && ae.File == path {
				t.Fatalf("stormdir.LoadStorm faults what stormdir.ReadRecorded read whole: %v", e)
			}
		}
		sameJSON(t, "stormdir.LoadStorm's runs", st.Runs, rec.Runs)
	})
}

// fullSummary is a summary.json whose cell has every field set.
func fullSummary(f *testing.F) []byte {
	s := reports.NewSummary([]history.CellKey{{World: "vercel", Scenario: "hook-storm", Condition: "seq/wake=ordered"}})
	s.Started, s.Ended, s.Interrupted = fuzzTime, fuzzTime.Add(time.Hour), true
	c := s.Cells[0]
	c.Add(fullRun())
	c.Windows = map[eventlog.Type]forensics.Window{eventlog.StepCreated: {N: 3, P50: 31e6, P90: 1e9, P99: 2e9, Max: 2e9}}
	c.Pairs = []forensics.PairCount{{TypePair: forensics.TypePair{Overtaking: eventlog.StepCompleted, Overtaken: eventlog.StepCreated},
		PairStat: forensics.PairStat{Count: 2, MeanDelta: time.Millisecond, MaxDelta: 2 * time.Millisecond}}}
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		f.Fatal(err)
	}
	return append(b, '\n')
}

// topLevelLine is the line of the member of the top-level object in doc
// that json.Unmarshal decodes into a field tagged key (the last one whose
// name matches without regard to case), 0 when there is none. It walks
// every token, counting depth, and takes every other token at depth 1
// for a member's name.
func topLevelLine(doc []byte, key string) int {
	dec := json.NewDecoder(bytes.NewReader(doc))
	depth, line, isName := 0, 0, false
	for {
		tok, err := dec.Token()
		if err != nil {
			return line
		}
		wasName := depth == 1 && isName
		if name, _ := tok.(string); wasName && strings.EqualFold(name, key) {
			line = bytes.Count(doc[:dec.InputOffset()], []byte("\n")) + 1
		}
		switch tok {
		case json.Delim('{'), json.Delim('['):
			if depth == 0 && tok != json.Delim('{') {
				return 0
			}
			depth++
		case json.Delim('}'), json.Delim(']'):
			depth--
		}
		if depth == 1 {
			// After a name comes its value; after the object's opening,
			// a scalar value or a value closed, a name.
			isName = !wasName
		}
	}
}

// FuzzReadDocument: ReadDocument decodes a JSON artifact (summary.json
// here) or returns an error naming the file and a line within it: the
// line of a syntax error, or of the "schema" member that holds an unknown
// version; a document it decodes, written again, reads back the same.
func FuzzReadDocument(f *testing.F) {
	addFixtures(f, stormdir.FileSummary)
	addFixtures(f, stormdir.FileStorm)
	full := fullSummary(f)
	f.Add(full)
	f.Add(full[:len(full)/2])
	// testdata/fuzz/FuzzReadDocument holds the input that found the
	// schema error naming a "schema" that was no member of the document.
	f.Add([]byte(`{"cells":[{"world":"schema"}],"schema":2}`))
	f.Add([]byte("{\n\"Schema\": 1,\n\"cells\": [null]\n}"))
	f.Fuzz(func(t *testing.T, data []byte) {
		dir := fuzzDir(t, map[string][]byte{stormdir.FileSummary: data})
		path := filepath.Join(dir, stormdir.FileSummary)
		var s reports.Summary
		err := stormdir.ReadDocument(path, &s, func() int { return s.Schema })
		if err != nil {
			lines := errorLines(t, err, path)
			if len(lines) != 1 || lines[0] > bytes.Count(data, []byte("\n"))+1 {
				t.Fatalf("error %v names lines %v; the file has %d", err, lines, bytes.Count(data, []byte("\n"))+1)
			}
			if json.Unmarshal(data, new(reports.Summary)) == nil {
				if want := topLevelLine(data, "schema"); lines[0] != want {
					t.Fatalf("schema error %v names line %d, want %d", err, lines[0], want)
				}
			}
			return
		}
		if s.Schema != reports.SchemaVersion && s.Schema != 1 {
			t.Fatalf("schema %d read without an error (this build reads 1 and %d)", s.Schema, reports.SchemaVersion)
		}
		back := filepath.Join(t.TempDir(), stormdir.FileSummary)
		if err := stormdir.WriteJSON(back, &s); err != nil {
			t.Fatalf("write back what was read: %v", err)
		}
		var again reports.Summary
		if err := stormdir.ReadDocument(back, &again, func() int { return again.Schema }); err != nil {
			t.Fatalf("the document read, written again: %v", err)
		}
		sameJSON(t, "document read again", &again, &s)
	})
}

// FuzzLoadStorm: LoadStorm reads any storm.json, runs.jsonl and
// summary.json back (a nil *Stored only without runs.jsonl), each fault an
// *ArtifactError naming one of them; its summary counts every run it
// read, once, in a cell; and a storm it read without a fault, written
// again (its runs.jsonl lines and its summary), reads back the same.
func FuzzLoadStorm(f *testing.F) {
	dirs, err := filepath.Glob(filepath.Join("testdata", "storms", "*"))
	if err != nil || len(dirs) == 0 {
		f.Fatalf("no storm fixtures: %v", err)
	}
	for _, d := range dirs {
		var files [3][]byte
		for i, name := range []string{stormdir.FileStorm, stormdir.FileRuns, stormdir.FileSummary} {
			files[i], _ = os.ReadFile(filepath.Join(d, name)) // a fixture without summary.json seeds none
		}
		f.Add(files[0], files[1], files[2])
	}
	stormJSON := []byte(`{"schema":1,"cells":[{"world":"vercel","scenario":"hook-storm","condition":"seq/wake=ordered"}],"config":{"shard":"1/2"}}`)
	f.Add(stormJSON, jsonl(f, fullRun()), fullSummary(f))
	// Found LoadStorm panicking on a null cell in summary.json.
	f.Add(stormJSON, jsonl(f, fullRun()), []byte(`{"schema":1,"cells":[null]}`))
	// Found a cell storm.json lists twice summarized in two rows, which
	// did not read back the same.
	cell := `{"world":"a","scenario":"b","condition":"c"}`
	f.Add([]byte(`{"schema":1,"cells":[`+cell+`,`+cell+`]}`), []byte(cell+"\n"), []byte{})
	f.Fuzz(func(t *testing.T, stormDoc, runs, summary []byte) {
		files := map[string][]byte{stormdir.FileStorm: stormDoc, stormdir.FileRuns: runs}
		if len(summary) > 0 {
			files[stormdir.FileSummary] = summary
		}
		dir := fuzzDir(t, files)
		st, err := stormdir.LoadStorm(dir)
		if st == nil {
			t.Fatalf("stormdir.LoadStorm = nil, %v", err)
		}
		for _, e := range flatten(err) {
			var ae *stormdir.ArtifactError
			if !errors.As(e, &ae) || !slices.Contains([]string{stormdir.FileStorm, stormdir.FileRuns, stormdir.FileSummary}, filepath.Base(ae.File)) ||
				filepath.Dir(ae.File) != dir || !strings.HasPrefix(e.Error(), ae.File+":") {
				t.Fatalf("fault %q does not name one of the storm's artifacts", e)
			}
		}
		if len(st.Lines) != len(st.Runs) {
			t.Fatalf("%d lines for %d runs", len(st.Lines), len(st.Runs))
		}
		counted := 0
		for _, c := range st.Summary.Cells {
			counted += c.Runs
		}
		if counted != len(st.Runs) {
			t.Fatalf("the summary counts %d runs, runs.jsonl holds %d", counted, len(st.Runs))
		}
		for _, r := range st.Runs {
			if st.Summary.Cell(r.CellKey) == nil {
				t.Fatalf("run %s has no cell in the summary", r.RunID)
			}
		}
		if err != nil {
			return
		}

		var lines []byte
		for _, l := range st.Lines {
			lines = append(append(lines, l...), '\n')
		}
		back := fuzzDir(t, map[string][]byte{stormdir.FileStorm: stormDoc, stormdir.FileRuns: lines})
		if err := stormdir.WriteJSON(filepath.Join(back, stormdir.FileSummary), st.Summary); err != nil {
			t.Fatalf("write back the summary read: %v", err)
		}
		again, err := stormdir.LoadStorm(back)
		if err != nil || len(again.Notes) > 0 {
			t.Fatalf("the storm read, written again: %v, notes %q", err, again.Notes)
		}
		sameJSON(t, "summary read again", again.Summary, st.Summary)
		sameJSON(t, "runs read again", again.Runs, st.Runs)
		if again.Shard != st.Shard {
			t.Fatalf("shard %q read again, was %q", again.Shard, st.Shard)
		}
	})
}
