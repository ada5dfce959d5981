package reports

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"
)

// This file reads stored storms back (LoadStorm: the summary rebuilt from
// runs.jsonl, which report, compare and gate use) and combines the shards of
// one storm into a whole storm (Merge).

// Stored is a storm read back from its directory.
type Stored struct {
	Dir string
	// Summary is rebuilt from runs.jsonl, one cell per storm.json cell in
	// its order (cells no run reached have 0 runs).
	Summary *Summary
	// Runs are runs.jsonl's records, in file order.
	Runs []RunRecord
	// Shard is storm.json's shard ("i/n"), "" for a whole storm.
	Shard string
	// Notes are disagreements that do not stop a report, e.g. summary.json
	// counting other runs than runs.jsonl holds.
	Notes []string
	raw   []json.RawMessage // runs.jsonl's lines as written
}

// stormHeader is what reading a storm back needs of storm.json (the storm
// package owns the whole document).
type stormHeader struct {
	Schema  int       `json:"schema"`
	Cells   []CellKey `json:"cells"`
	Started time.Time `json:"started"`
	Config  struct {
		Shard string `json:"shard"`
	} `json:"config"`
}

// runLine is one runs.jsonl line, decoded and as written.
type runLine struct {
	rec RunRecord
	raw json.RawMessage
}

func (l *runLine) UnmarshalJSON(b []byte) error {
	l.raw = slices.Clone(b)
	if err := json.Unmarshal(b, &l.rec); err != nil {
		return err
	}
	if l.rec.World == "" || l.rec.Scenario == "" || l.rec.Condition == "" {
		return errors.New("not a run record (no world, scenario or condition)")
	}
	return nil
}

// LoadStorm reads a storm directory back. The summary is rebuilt from
// runs.jsonl (Cell.Add over every record) in the cell order of storm.json,
// never taken from summary.json, except for each cell's windows and type
// pairs (computed from events/ and history.jsonl, which runs.jsonl does not
// hold); when summary.json exists and counts other runs, Notes say so. It returns what it could read together with an error
// joining an *ArtifactError per malformed artifact (a cut-off or non-JSON
// line of runs.jsonl with its line number, an unknown schema version in
// storm.json or summary.json); it returns a nil *Stored only when dir holds
// no runs.jsonl.
func LoadStorm(dir string) (*Stored, error) {
	if fi, err := os.Stat(dir); err == nil && !fi.IsDir() {
		return nil, &ArtifactError{File: dir, Err: errors.New("not a directory")}
	}
	runsPath := filepath.Join(dir, FileRuns)
	if _, err := os.Stat(runsPath); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, &ArtifactError{File: dir, Err: ErrNotStorm}
		}
		return nil, &ArtifactError{File: runsPath, Err: err}
	}
	st := &Stored{Dir: dir}
	var problems []error

	var hdr stormHeader
	hdrOK := false
	if err := ReadDocument(filepath.Join(dir, FileStorm), &hdr, func() int { return hdr.Schema }); err != nil {
		problems = append(problems, err)
	} else {
		hdrOK = true
		st.Shard = hdr.Config.Shard
	}

	if err := eachLine(runsPath, func(l runLine) error {
		st.Runs = append(st.Runs, l.rec)
		st.raw = append(st.raw, l.raw)
		return nil
	}); err != nil {
		problems = append(problems, err)
	}

	var stored *Summary
	sumPath := filepath.Join(dir, FileSummary)
	if _, err := os.Stat(sumPath); err == nil {
		var s Summary
		if err := ReadDocument(sumPath, &s, func() int { return s.Schema }); err != nil {
			problems = append(problems, err)
		} else {
			stored = &s
		}
	}

	var keys []CellKey
	switch {
	case hdrOK:
		keys = hdr.Cells
	case stored != nil:
		for _, c := range stored.Cells {
			keys = append(keys, c.Key())
		}
	}
	sum := NewSummary(keys)
	sum.Started = time.Time{}
	for _, r := range st.Runs {
		k := CellKey{r.World, r.Scenario, r.Condition}
		c := sum.Cell(k)
		if c == nil {
			if hdrOK {
				problems = append(problems, &ArtifactError{File: runsPath,
					Err: fmt.Errorf("run %s is of cell %s, which %s does not list", r.RunID, k, FileStorm)})
			}
			c = &Cell{World: k.World, Scenario: k.Scenario, Condition: k.Condition}
			sum.Cells = append(sum.Cells, c)
		}
		c.Add(r)
		if sum.Started.IsZero() || r.Started.Before(sum.Started) {
			sum.Started = r.Started
		}
		if r.Ended.After(sum.Ended) {
			sum.Ended = r.Ended
		}
	}
	if hdrOK && !hdr.Started.IsZero() {
		sum.Started = hdr.Started
	}
	if stored != nil {
		sum.Started, sum.Ended, sum.Interrupted = stored.Started, stored.Ended, stored.Interrupted
		st.Notes = append(st.Notes, countNotes(stored, sum)...)
		// Windows and type pairs come from the events and the history, not
		// from runs.jsonl: they are taken as summary.json has them.
		for _, c := range stored.Cells {
			if rc := sum.Cell(c.Key()); rc != nil {
				rc.Windows, rc.Pairs = c.Windows, c.Pairs
				// Classes computed after the storm (stormctl forensics
				// DIR on a storm whose runs have none) live only there.
				if rc.Classes == nil {
					rc.Classes, rc.Timelines = c.Classes, c.Timelines
				}
			}
		}
	}
	st.Summary = sum
	return st, errors.Join(problems...)
}

// countNotes names every cell whose counts summary.json and the rebuilt
// summary disagree on.
func countNotes(stored, rebuilt *Summary) []string {
	var notes []string
	for _, c := range rebuilt.Cells {
		sc := stored.Cell(c.Key())
		if sc == nil {
			if c.Runs > 0 {
				notes = append(notes, fmt.Sprintf("%s has no cell %s; %s has %d runs of it: reporting %s", FileSummary, c.Key(), FileRuns, c.Runs, FileRuns))
			}
			continue
		}
		if !sameCounts(sc, c) {
			notes = append(notes, fmt.Sprintf("%s counts %d runs (%s) for %s, %s has %d (%s): reporting %s",
				FileSummary, sc.Runs, sc.Compact(), c.Key(), FileRuns, c.Runs, c.Compact(), FileRuns))
		}
	}
	for _, sc := range stored.Cells {
		if rebuilt.Cell(sc.Key()) == nil && sc.Runs > 0 {
			notes = append(notes, fmt.Sprintf("%s counts %d runs for %s, %s has none", FileSummary, sc.Runs, sc.Key(), FileRuns))
		}
	}
	return notes
}

func sameCounts(a, b *Cell) bool {
	if a.Runs != b.Runs {
		return false
	}
	for _, o := range Outcomes() {
		if a.Count(o) != b.Count(o) {
			return false
		}
	}
	return true
}

// ReadDocument decodes the JSON artifact at path into v and checks its
// schema version, which schema reads from v once it is decoded. Errors are
// *ArtifactErrors naming the file and, where it can be told, the line.
func ReadDocument(path string, v any, schema func() int) error {
	b, err := readDoc(path, v)
	if err != nil {
		return err
	}
	return checkSchema(path, b, schema())
}

// readDoc decodes a JSON document, naming the line of a syntax error.
func readDoc(path string, v any) ([]byte, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, &ArtifactError{File: path, Err: err}
	}
	if err := json.Unmarshal(b, v); err != nil {
		line := 0
		var se *json.SyntaxError
		var te *json.UnmarshalTypeError
		switch {
		case errors.As(err, &se):
			line = lineAt(b, se.Offset)
		case errors.As(err, &te):
			line = lineAt(b, te.Offset)
		}
		return nil, &ArtifactError{File: path, Line: line, Err: fmt.Errorf("malformed (cut off or not JSON): %v", err)}
	}
	return b, nil
}

// checkSchema refuses a document of another schema version, naming the line
// of its "schema" field.
func checkSchema(path string, b []byte, schema int) error {
	if schema == SchemaVersion {
		return nil
	}
	line := 0
	if i := bytes.Index(b, []byte(`"schema"`)); i >= 0 {
		line = lineAt(b, int64(i))
	}
	return &ArtifactError{File: path, Line: line, Err: fmt.Errorf("unknown schema version %d (this build reads %d)", schema, SchemaVersion)}
}

// lineAt is the 1-based line of byte offset off.
func lineAt(b []byte, off int64) int {
	off = min(max(off, 0), int64(len(b)))
	return bytes.Count(b[:off], []byte("\n")) + 1
}

// MergeShard is one shard directory given to Merge.
type MergeShard struct {
	Dir string
	// Name is the shard as "i/n", for messages.
	Name string
	// Owns reports whether the shard runs run index r; a run of another
	// index in its runs.jsonl means the directory is not the shard it says.
	Owns func(r int) bool
}

// MergeResult is a merged storm and the check of its run counts.
type MergeResult struct {
	// Summary is the merged storm's, read back from what Merge wrote.
	Summary *Summary
	// Shards are each shard's summary rebuilt from its runs.jsonl, in the
	// order given, with Names their names.
	Shards []*Summary
	Names  []string
	// Notes are disagreements that did not stop the merge.
	Notes []string
}

// CountLines says, per cell, that the merged runs are the sum of the
// shards': "local/control/main: 4 runs = 2 (1/2) + 2 (2/2)".
func (m *MergeResult) CountLines() []string {
	var out []string
	for _, c := range m.Summary.Cells {
		var parts []string
		for i, s := range m.Shards {
			n := 0
			if sc := s.Cell(c.Key()); sc != nil {
				n = sc.Runs
			}
			parts = append(parts, fmt.Sprintf("%d (%s)", n, m.Names[i]))
		}
		out = append(out, fmt.Sprintf("%s: %d runs = %s", c.Key(), c.Runs, strings.Join(parts, " + ")))
	}
	return out
}

// Merge combines shard directories of one storm into out (which must not
// exist or be empty): storm.json (meta), runs.jsonl (every shard's lines as
// written, in the order a whole storm starts them: run index, then cell),
// history.jsonl, events/, summary.json and summary.md. It refuses a shard
// with a malformed artifact, a run of a cell not in cells or of a run index
// its shard does not own, a (cell, run index) or run id found twice, and
// checks that every cell's merged counts, read back from out, equal the sum
// of the shards'. The caller checks that the shards are of one storm
// (storm.MergeMeta).
func Merge(out string, meta any, cells []CellKey, shards []MergeShard) (*MergeResult, error) {
	if entries, err := os.ReadDir(out); err == nil && len(entries) > 0 {
		return nil, fmt.Errorf("--out %s exists and is not empty", out)
	}
	res := &MergeResult{}
	pos := map[CellKey]int{}
	for i, k := range cells {
		pos[k] = i
	}
	type slot struct {
		k   CellKey
		idx int
	}
	bySlot := map[slot]string{}
	byID := map[string]string{}
	type line struct {
		rec RunRecord
		raw json.RawMessage
	}
	var lines []line
	for _, sh := range shards {
		st, err := LoadStorm(sh.Dir)
		if err != nil {
			return nil, fmt.Errorf("cannot merge shard %s (%s): %w", sh.Name, sh.Dir, err)
		}
		for _, n := range st.Notes {
			res.Notes = append(res.Notes, fmt.Sprintf("%s: %s", sh.Dir, n))
		}
		for i, r := range st.Runs {
			k := CellKey{r.World, r.Scenario, r.Condition}
			if _, ok := pos[k]; !ok {
				return nil, fmt.Errorf("cannot merge: %s: run %s is of cell %s, which is not a cell of the storm", filepath.Join(sh.Dir, FileRuns), r.RunID, k)
			}
			if !sh.Owns(r.Index) {
				return nil, fmt.Errorf("cannot merge: %s: run %s has run index %d, which shard %s does not run", filepath.Join(sh.Dir, FileRuns), r.RunID, r.Index, sh.Name)
			}
			if prev, ok := bySlot[slot{k, r.Index}]; ok {
				return nil, fmt.Errorf("cannot merge: run index %d of %s is in %s and in %s", r.Index, k, prev, sh.Dir)
			}
			bySlot[slot{k, r.Index}] = sh.Dir
			if prev, ok := byID[r.RunID]; ok {
				return nil, fmt.Errorf("cannot merge: run id %s is in %s and in %s (the shards minted the same id: their histories cannot be told apart)", r.RunID, prev, sh.Dir)
			}
			byID[r.RunID] = sh.Dir
			lines = append(lines, line{r, st.raw[i]})
		}
		res.Shards = append(res.Shards, st.Summary)
		res.Names = append(res.Names, sh.Name)
	}
	sort.SliceStable(lines, func(i, j int) bool {
		a, b := lines[i].rec, lines[j].rec
		if a.Index != b.Index {
			return a.Index < b.Index
		}
		return pos[CellKey{a.World, a.Scenario, a.Condition}] < pos[CellKey{b.World, b.Scenario, b.Condition}]
	})

	sum := NewSummary(cells)
	sum.Started, sum.Ended = time.Time{}, time.Time{}
	for _, s := range res.Shards {
		if sum.Started.IsZero() || (!s.Started.IsZero() && s.Started.Before(sum.Started)) {
			sum.Started = s.Started
		}
		if s.Ended.After(sum.Ended) {
			sum.Ended = s.Ended
		}
		sum.Interrupted = sum.Interrupted || s.Interrupted
	}
	for _, l := range lines {
		sum.Cell(CellKey{l.rec.World, l.rec.Scenario, l.rec.Condition}).Add(l.rec)
	}

	if err := writeMerged(out, meta, sum, shards, func(w *bufio.Writer) error {
		for _, l := range lines {
			if _, err := w.Write(append(slices.Clip(l.raw), '\n')); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		os.RemoveAll(out)
		var ae *ArtifactError
		if errors.As(err, &ae) {
			return nil, err // a shard's history is malformed: the input's fault
		}
		return nil, &OutputError{Err: err}
	}

	back, err := LoadStorm(out)
	if err != nil {
		return nil, &OutputError{Err: fmt.Errorf("the merged storm does not read back: %w", err)}
	}
	res.Summary = back.Summary
	var bad []string
	for _, c := range back.Summary.Cells {
		runs, counts := 0, map[Outcome]int{}
		for _, s := range res.Shards {
			if sc := s.Cell(c.Key()); sc != nil {
				runs += sc.Runs
				for _, o := range Outcomes() {
					counts[o] += sc.Count(o)
				}
			}
		}
		same := c.Runs == runs
		for _, o := range Outcomes() {
			same = same && c.Count(o) == counts[o]
		}
		if !same {
			bad = append(bad, fmt.Sprintf("%s: merged %d runs (%s), the shards %d", c.Key(), c.Runs, c.Compact(), runs))
		}
	}
	if len(bad) > 0 {
		return res, &OutputError{Err: fmt.Errorf("the merged run counts are not the sum of the shards': %s", strings.Join(bad, "; "))}
	}
	return res, nil
}

// OutputError is a merge that failed on its output, not on its inputs: the
// merged storm could not be written (disk full), or does not read back as
// the sum of its shards (a bug).
type OutputError struct{ Err error }

// Error is the failure's own text.
func (e *OutputError) Error() string { return e.Err.Error() }

// Unwrap returns the failure.
func (e *OutputError) Unwrap() error { return e.Err }

// writeMerged writes the merged storm's files into out.
func writeMerged(out string, meta any, sum *Summary, shards []MergeShard, writeRuns func(*bufio.Writer) error) error {
	if err := os.MkdirAll(filepath.Join(out, DirEvents), 0o755); err != nil {
		return fmt.Errorf("create %s: %w", out, err)
	}
	if err := writeJSON(filepath.Join(out, FileStorm), meta); err != nil {
		return err
	}
	if err := writeLines(filepath.Join(out, FileRuns), writeRuns); err != nil {
		return err
	}
	if err := writeLines(filepath.Join(out, FileHistory), func(w *bufio.Writer) error {
		for _, sh := range shards {
			path := filepath.Join(sh.Dir, FileHistory)
			if err := eachLine(path, func(op json.RawMessage) error {
				_, err := w.Write(append(op, '\n'))
				return err
			}); err != nil {
				return fmt.Errorf("cannot merge shard %s: %w", sh.Name, err)
			}
		}
		return nil
	}); err != nil {
		return err
	}
	for _, sh := range shards {
		for _, d := range []struct{ dir, what string }{{DirEvents, "final logs"}, {DirTimelines, "timelines"}} {
			src := filepath.Join(sh.Dir, d.dir)
			if _, err := os.Stat(src); errors.Is(err, fs.ErrNotExist) {
				continue
			}
			if err := os.CopyFS(filepath.Join(out, d.dir), os.DirFS(src)); err != nil {
				return fmt.Errorf("copy the %s of shard %s: %w", d.what, sh.Name, err)
			}
		}
	}
	var md bytes.Buffer
	if err := Render(&md, sum, FormatMarkdown); err != nil {
		return err
	}
	if err := writeJSON(filepath.Join(out, FileSummary), sum); err != nil {
		return err
	}
	return WriteFile(filepath.Join(out, FileMD), md.Bytes())
}

// writeLines creates path and fills it through fill.
func writeLines(path string, fill func(*bufio.Writer) error) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("write %s: %w", filepath.Base(path), err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	if err := fill(w); err != nil {
		f.Close()
		return err
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", filepath.Base(path), err)
	}
	return f.Close()
}
