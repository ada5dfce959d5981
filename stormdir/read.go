package stormdir

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"unicode/utf8"

	"github.com/stormctl/stormctl/eventlog"
	"github.com/stormctl/stormctl/history"
	"github.com/stormctl/stormctl/reports"
)

// ArtifactError names a malformed artifact: the file, the line (0 for the
// whole file) and what is wrong with it.
type ArtifactError struct {
	File string
	Line int
	Err  error
}

func (e *ArtifactError) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("%s:%d: %v", e.File, e.Line, e.Err)
	}
	return fmt.Sprintf("%s: %v", e.File, e.Err)
}

func (e *ArtifactError) Unwrap() error { return e.Err }

// ErrNotStorm is returned for a directory without storm artifacts.
var ErrNotStorm = errors.New("not a storm directory (no storm.json or runs.jsonl)")

// maxLine bounds one JSONL line (a final log line or an op).
const maxLine = 16 << 20

// EachLine decodes every line of a JSONL file into a fresh T and calls fn.
// A blank line (white space only) holds nothing and is skipped, as
// ReadRecorded skips it. A line that does not decode is reported as an
// *ArtifactError and skipped, so the rest of the file is still read; all
// such errors are joined.
func EachLine[T any](path string, fn func(T) error) error {
	f, err := os.Open(path)
	if err != nil {
		return &ArtifactError{File: path, Err: err}
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), maxLine)
	var bad []error
	line := 0
	for sc.Scan() {
		line++
		b := sc.Bytes()
		if blank(b) {
			continue
		}
		var v T
		if err := json.Unmarshal(b, &v); err != nil {
			bad = append(bad, &ArtifactError{File: path, Line: line, Err: fmt.Errorf("malformed line (cut off or not JSON): %v", err)})
			continue
		}
		if err := fn(v); err != nil {
			return err
		}
	}
	if err := sc.Err(); err != nil && !errors.Is(err, io.EOF) {
		bad = append(bad, &ArtifactError{File: path, Line: line + 1, Err: err})
	}
	return errors.Join(bad...)
}

// blank reports whether a JSONL line holds nothing: white space only.
func blank(line []byte) bool { return len(bytes.TrimSpace(line)) == 0 }

// ReadRuns reads runs.jsonl. It returns every record it could read and an
// error naming each malformed line: not JSON, or not a run record (no
// world, scenario or condition), as LoadStorm and ReadRecorded have it.
func ReadRuns(dir string) ([]reports.RunRecord, error) {
	path := filepath.Join(dir, FileRuns)
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		return nil, &ArtifactError{File: dir, Err: ErrNotStorm}
	}
	var out []reports.RunRecord
	err := EachLine(path, func(l runLine) error {
		out = append(out, l.rec)
		return nil
	})
	return out, err
}

// ReadHistory reads history.jsonl grouped by run id.
func ReadHistory(dir string) (map[string][]history.Op, error) {
	out := map[string][]history.Op{}
	err := EachLine(filepath.Join(dir, FileHistory), func(op history.Op) error {
		out[op.RunID] = append(out[op.RunID], op)
		return nil
	})
	return out, err
}

// ReadRunHistory reads the operations of one run from history.jsonl, in
// file order: those ReadHistory groups under runID. It streams the file and
// decodes only the lines that may name the run, so one run of a large
// storm is read quickly.
func ReadRunHistory(dir, runID string) ([]history.Op, error) {
	path := filepath.Join(dir, FileHistory)
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
				RunID string `json:"runId"`
			}
			if json.Unmarshal(b, &probe) != nil || probe.RunID != runID {
				continue
			}
		}
		var op history.Op
		if err := json.Unmarshal(b, &op); err != nil {
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

// RunFileName reports whether a run id can name the run's files in a storm
// directory (events/<cell>/<run>.jsonl, timelines/<run>.html): not empty,
// and no path separator that would lead out of their directory. Run ids
// come from runs.jsonl, which may be malformed or hostile.
func RunFileName(runID string) bool {
	return runID != "" && !strings.ContainsRune(runID, '/') && !strings.ContainsRune(runID, filepath.Separator)
}

// ReadEvents reads a run's final log from events/<cell>/<run>.jsonl. A run
// id that is not a file name (one holding a path separator, from a
// malformed or hostile runs.jsonl) is refused rather than followed out of
// the cell's directory.
func ReadEvents(dir string, k history.CellKey, runID string) ([]eventlog.Event, error) {
	cellDir := filepath.Join(dir, DirEvents, k.Dir())
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
