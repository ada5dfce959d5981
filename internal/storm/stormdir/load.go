package stormdir

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/stormctl/stormctl/internal/base/plural"
	"github.com/stormctl/stormctl/internal/history"
	"github.com/stormctl/stormctl/reports"
)

// This file reads stored storms back (LoadStorm: the summary rebuilt from
// runs.jsonl, which report, compare, gate, merge and fidelity --from use;
// ReadMeta: storm.json, which every command reads through).

// Stored is a storm read back from its directory.
type Stored struct {
	Dir string
	// Summary is rebuilt from runs.jsonl, one cell per storm.json cell in
	// its order (cells no run reached have 0 runs).
	Summary *reports.Summary
	// Runs are runs.jsonl's records, in file order.
	Runs []reports.RunRecord
	// Shard is storm.json's shard ("i/n"), "" for a whole storm.
	Shard string
	// Nemesis lists the fault kinds storm.json's config.nemesis names
	// (storm --nemesis); none for a storm run without one.
	Nemesis []string
	// Notes are disagreements that do not stop a report, e.g. summary.json
	// counting other runs than runs.jsonl holds.
	Notes []string
	// Lines are runs.jsonl's lines, one per Runs record, as written in
	// this build's schema (merge copies them).
	Lines []json.RawMessage
	// Meta is storm.json, read whole (ReadMeta); nil when it could not be
	// read.
	Meta *Meta
}

// runLine is one runs.jsonl line, decoded and as written.
type runLine struct {
	rec reports.RunRecord
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

// LoadStorm reads a storm directory back, storm.json read whole
// (ReadMeta: a value of the wrong type anywhere in it is an error). The summary is rebuilt from runs.jsonl (Cell.Add over
// every record) in the cell order of storm.json, never taken from
// summary.json, except for each cell's windows and type pairs (computed
// from events/ and history.jsonl, which runs.jsonl does not hold); when
// summary.json exists and counts other runs, Notes say so. It returns what
// it could read together with an error joining an *ArtifactError per
// malformed artifact (a cut-off or non-JSON line of runs.jsonl with its
// line number, a malformed storm.json or one of an unknown schema version,
// an unknown schema version in summary.json, a cell listed twice, a null
// cell in summary.json); it returns a nil *Stored only when dir holds no
// runs.jsonl.
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

	meta, err := ReadMeta(dir)
	metaOK := err == nil
	if err != nil {
		problems = append(problems, err)
	} else {
		st.Meta, st.Shard, st.Nemesis = meta, meta.Config.Shard.String(), meta.nemesisKinds()
	}

	// runs.jsonl is read in storm.json's schema; without one, in this
	// build's.
	schema := reports.SchemaVersion
	if metaOK {
		schema = meta.Schema
	}
	if err := eachLine(runsPath, schema, func(l runLine) error {
		st.Runs = append(st.Runs, l.rec)
		st.Lines = append(st.Lines, l.raw)
		return nil
	}); err != nil {
		problems = append(problems, err)
	}

	var stored *reports.Summary
	sumPath := filepath.Join(dir, FileSummary)
	if _, err := os.Stat(sumPath); err == nil {
		var s reports.Summary
		if err := ReadDocument(sumPath, &s, func() int { return s.Schema }); err != nil {
			problems = append(problems, err)
		} else {
			// A null cell is no cell (the storm never writes one): it is
			// named and left out, not dereferenced.
			if n := len(s.Cells); slices.Contains(s.Cells, nil) {
				s.Cells = slices.DeleteFunc(s.Cells, func(c *reports.Cell) bool { return c == nil })
				null := n - len(s.Cells)
				problems = append(problems, &ArtifactError{File: sumPath,
					Err: fmt.Errorf("%d of its %s %s null (left out)", null, plural.Count(n, "cell"), plural.Word(null, "is", "are"))})
			}
			stored = &s
		}
	}

	var keys []history.CellKey
	keysFrom := ""
	switch {
	case metaOK:
		keys, keysFrom = meta.Cells, filepath.Join(dir, FileStorm)
	case stored != nil:
		for _, c := range stored.Cells {
			keys = append(keys, c.Key())
		}
		keysFrom = sumPath
	}
	// A storm never lists a cell twice (--world, --scenario and
	// --condition refuse a repeated item): a second one is named and
	// dropped, or its runs would be counted in the first and the second
	// listed with none.
	var once []history.CellKey
	listed := make(map[history.CellKey]bool, len(keys))
	for _, k := range keys {
		if listed[k] {
			problems = append(problems, &ArtifactError{File: keysFrom, Err: fmt.Errorf("cell %s is listed twice", k)})
			continue
		}
		listed[k] = true
		once = append(once, k)
	}
	sum := reports.NewSummary(once)
	sum.Started = time.Time{}
	// The summary of an older storm is of its schema (summary.json's
	// layout is the same in every schema this build reads), so a summary
	// written back (forensics) leaves the directory of one schema.
	sum.Schema = schema
	for _, r := range st.Runs {
		k := r.CellKey
		c := sum.Cell(k)
		if c == nil {
			if metaOK {
				problems = append(problems, &ArtifactError{File: runsPath,
					Err: fmt.Errorf("run %s is of cell %s, which %s does not list", r.RunID, k, FileStorm)})
			}
			c = &reports.Cell{CellKey: k}
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
	if metaOK && !meta.Started.IsZero() {
		sum.Started = meta.Started
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
func countNotes(stored, rebuilt *reports.Summary) []string {
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

func sameCounts(a, b *reports.Cell) bool {
	if a.Runs != b.Runs {
		return false
	}
	for _, o := range history.Outcomes() {
		if a.Count(o) != b.Count(o) {
			return false
		}
	}
	// The verdicts too: a storm judges its refusals after counting its
	// runs, and rewrites runs.jsonl before summary.json.
	tp := func(c *reports.Cell) int {
		if c.TruePositives == nil {
			return 0
		}
		return *c.TruePositives
	}
	return a.Rejections == b.Rejections && tp(a) == tp(b) && a.Benign == b.Benign && a.UnknownVerdicts == b.UnknownVerdicts
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

// readDoc decodes a JSON document, naming the line of a syntax error. A
// document of an older schema this build reads is read as this build's
// (upgrade, which keeps its lines where they were).
func readDoc(path string, v any) ([]byte, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, &ArtifactError{File: path, Err: err}
	}
	// A document json.Unmarshal cannot read a schema from is decoded as
	// it is: decoding it names what is wrong.
	var probe struct {
		Schema int `json:"schema"`
	}
	if json.Unmarshal(b, &probe) == nil {
		b = upgrade(probe.Schema, b)
	}
	if err := json.Unmarshal(b, v); err != nil {
		var se *json.SyntaxError
		var te *json.UnmarshalTypeError
		switch {
		case errors.As(err, &se):
			return nil, &ArtifactError{File: path, Line: lineAt(b, se.Offset), Err: fmt.Errorf("malformed (cut off or not JSON): %v", err)}
		case errors.As(err, &te):
			return nil, &ArtifactError{File: path, Line: lineAt(b, te.Offset), Err: fmt.Errorf("malformed (a value of the wrong type): %v", err)}
		default:
			// Well-formed JSON whose value a field refused (its own
			// UnmarshalJSON or UnmarshalText, e.g. a shard "4/3").
			return nil, &ArtifactError{File: path, Err: fmt.Errorf("malformed (a value this build refuses): %v", err)}
		}
	}
	return b, nil
}

// checkSchema refuses a document of a schema version this build does not
// read, naming the line of its "schema" field.
func checkSchema(path string, b []byte, schema int) error {
	if readable(schema) {
		return nil
	}
	return &ArtifactError{File: path, Line: schemaLine(b), Err: fmt.Errorf("unknown schema version %d (this build reads %d and %d)", schema, camelSchema, reports.SchemaVersion)}
}

// schemaLine is the line of the member of b's top-level object that
// json.Unmarshal took the schema version from: the last named "schema"
// without regard to case. It is 0 when there is none. A "schema" text
// anywhere else (a nested member, a string) is not it.
func schemaLine(b []byte) int {
	dec := json.NewDecoder(bytes.NewReader(b))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return 0
	}
	line := 0
	for dec.More() {
		key, err := dec.Token()
		if err != nil {
			return line
		}
		if name, _ := key.(string); strings.EqualFold(name, "schema") {
			line = lineAt(b, dec.InputOffset())
		}
		var value json.RawMessage
		if err := dec.Decode(&value); err != nil {
			return line
		}
	}
	return line
}

// lineAt is the 1-based line of byte offset off.
func lineAt(b []byte, off int64) int {
	off = min(max(off, 0), int64(len(b)))
	return bytes.Count(b[:off], []byte("\n")) + 1
}

// EachHistoryLine calls fn with every line of the storm's history.jsonl,
// as this build's schema spells it (Lines are runs.jsonl's).
func (st *Stored) EachHistoryLine(fn func(json.RawMessage) error) error {
	schema := reports.SchemaVersion
	if st.Meta != nil {
		schema = st.Meta.Schema
	}
	return eachLine(filepath.Join(st.Dir, FileHistory), schema, fn)
}
