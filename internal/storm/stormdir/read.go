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

// EachLine decodes every line of a JSONL file of this build's schema into
// a fresh T and calls fn. A blank line (white space only) holds nothing and
// is skipped, as ReadRecorded skips it. A line that does not decode is
// reported as an *ArtifactError and skipped, so the rest of the file is
// still read; all such errors are joined.
func EachLine[T any](path string, fn func(T) error) error {
	return eachLine(path, reports.SchemaVersion, fn)
}

// eachLine is EachLine over a file of a storm of schema: each line is read
// as this build's (upgrade) before it is decoded.
func eachLine[T any](path string, schema int, fn func(T) error) error {
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
		if err := json.Unmarshal(upgrade(schema, b), &v); err != nil {
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

// RunFileName reports whether a run id can name the run's files in a storm
// directory (events/<cell>/<run>.jsonl, timelines/<run>.html): not empty,
// and no path separator that would lead out of their directory. Run ids
// come from runs.jsonl, which may be malformed or hostile.
func RunFileName(runID string) bool {
	return runID != "" && !strings.ContainsRune(runID, '/') && !strings.ContainsRune(runID, filepath.Separator)
}
