package stormdir

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"unicode/utf8"

	"github.com/stormctl/stormctl/internal/eventlog"
	"github.com/stormctl/stormctl/internal/history"
	"github.com/stormctl/stormctl/reports"
)

// Dir is a storm directory opened for reading: its storm.json read whole
// (Meta), its runs.jsonl and history.jsonl read in the schema storm.json
// names, whichever this build reads (an older storm's keys read as this
// build's).
type Dir struct {
	Path string
	Meta *Meta
}

// Open opens the storm directory at path: it reads its storm.json
// (ReadMeta). A file is refused as not a directory (as LoadStorm does), a
// directory without storm.json with ErrNotStorm;
// errors are *ArtifactErrors.
func Open(path string) (*Dir, error) {
	if fi, err := os.Stat(path); err == nil && !fi.IsDir() {
		return nil, &ArtifactError{File: path, Err: errors.New("not a directory")}
	}
	if _, err := os.Stat(filepath.Join(path, FileStorm)); errors.Is(err, fs.ErrNotExist) {
		return nil, &ArtifactError{File: path, Err: ErrNotStorm}
	}
	m, err := ReadMeta(path)
	if err != nil {
		return nil, err
	}
	return &Dir{Path: path, Meta: m}, nil
}

// Runs reads runs.jsonl. It returns every record it could read and an
// error naming each malformed line: not JSON, or not a run record (no
// world, scenario or condition), as LoadStorm and ReadRecorded have it.
func (d *Dir) Runs() ([]reports.RunRecord, error) {
	path := filepath.Join(d.Path, FileRuns)
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		return nil, &ArtifactError{File: d.Path, Err: ErrNotStorm}
	}
	var out []reports.RunRecord
	err := eachLine(path, d.Meta.Schema, func(l runLine) error {
		out = append(out, l.rec)
		return nil
	})
	return out, err
}

// History reads history.jsonl grouped by run id.
func (d *Dir) History() (map[string][]history.Op, error) {
	out := map[string][]history.Op{}
	err := eachLine(filepath.Join(d.Path, FileHistory), d.Meta.Schema, func(op history.Op) error {
		out[op.RunID] = append(out[op.RunID], op)
		return nil
	})
	return out, err
}

// RunHistory reads the operations of one run from history.jsonl, in file
// order: those History groups under runID. It streams the file and decodes
// only the lines that may name the run, so one run of a large storm is
// read quickly.
func (d *Dir) RunHistory(runID string) ([]history.Op, error) {
	path := filepath.Join(d.Path, FileHistory)
	f, err := os.Open(path)
	if err != nil {
		return nil, &ArtifactError{File: path, Err: err}
	}
	defer f.Close()
	// Any line holding the run id as written is decoded, so a cut-off
	// line of this run is reported rather than skipped. A line without it
	// can still name the run in an escape (the writer escapes <, > and &)
	// or in bytes that are not UTF-8 (decoded as U+FFFD): only its run id
	// is decoded first, and a line that does not decode is not this
	// run's to report.
	needle := []byte(runID)
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), maxLine)
	var out []history.Op
	var bad []error
	line := 0
	for sc.Scan() {
		line++
		b := sc.Bytes()
		if blank(b) {
			continue
		}
		if !bytes.Contains(b, needle) {
			if bytes.IndexByte(b, '\\') < 0 && utf8.Valid(b) {
				continue
			}
			var probe struct {
				RunID string `json:"run_id"`
			}
			if json.Unmarshal(upgrade(d.Meta.Schema, b), &probe) != nil || probe.RunID != runID {
				continue
			}
		}
		var op history.Op
		if err := json.Unmarshal(upgrade(d.Meta.Schema, b), &op); err != nil {
			bad = append(bad, &ArtifactError{File: path, Line: line, Err: fmt.Errorf("malformed line (cut off or not JSON): %v", err)})
			continue
		}
		if op.RunID == runID {
			out = append(out, op)
		}
	}
	if err := sc.Err(); err != nil {
		bad = append(bad, &ArtifactError{File: path, Line: line + 1, Err: err})
	}
	return out, errors.Join(bad...)
}

// Events reads a run's final log from events/<cell>/<run>.jsonl (the
// events as the store holds them, in the event format of every schema). A
// run id that is not a file name (one holding a path separator, from a
// malformed or hostile runs.jsonl) is refused rather than followed out of
// the cell's directory.
func (d *Dir) Events(k history.CellKey, runID string) ([]eventlog.Event, error) {
	cellDir := filepath.Join(d.Path, DirEvents, k.Dir())
	if !RunFileName(runID) {
		return nil, &ArtifactError{File: cellDir, Err: fmt.Errorf("run id %q is not a file name: no final log of it is read", runID)}
	}
	var out []eventlog.Event
	err := EachLine(filepath.Join(cellDir, runID+".jsonl"), func(e eventlog.Event) error {
		out = append(out, e)
		return nil
	})
	return out, err
}
