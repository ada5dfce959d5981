package stormdir

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sync"

	"github.com/stormctl/stormctl/internal/eventlog"
	"github.com/stormctl/stormctl/internal/history"
	"github.com/stormctl/stormctl/reports"
)

// Artifact file names inside a storm directory. **contract**
const (
	FileStorm   = "storm.json"
	FileRuns    = "runs.jsonl"
	FileHistory = "history.jsonl"
	FileSummary = "summary.json"
	FileMD      = "summary.md"
	DirEvents   = "events"
	// DirTimelines holds the HTML timelines of explained runs.
	DirTimelines = "timelines"
)

// Writer appends a storm's files as it goes, so an interrupted storm keeps
// everything it measured. Safe for concurrent use.
type Writer struct {
	dir string
	// created says OpenWriter made dir itself (it did not exist).
	created bool
	mu      sync.Mutex
	runs    *os.File
	history *os.File
	hbuf    *bufio.Writer
}

// OpenWriter creates a storm directory, writes meta as storm.json and opens
// runs.jsonl and history.jsonl for appending.
func OpenWriter(dir string, meta *Meta) (*Writer, error) {
	return openWriter(dir, meta, os.O_WRONLY|os.O_CREATE|os.O_TRUNC)
}

// openWriter writes meta as storm.json and opens runs.jsonl and
// history.jsonl with flag (truncated for a new storm, appended to for a
// resumed one).
func openWriter(dir string, meta *Meta, flag int) (*Writer, error) {
	_, statErr := os.Stat(dir)
	if err := os.MkdirAll(filepath.Join(dir, DirEvents), 0o755); err != nil {
		return nil, fmt.Errorf("create %s: %w", dir, err)
	}
	if err := WriteJSON(filepath.Join(dir, FileStorm), meta); err != nil {
		return nil, err
	}
	a := &Writer{dir: dir, created: errors.Is(statErr, fs.ErrNotExist)}
	var err error
	if a.runs, err = os.OpenFile(filepath.Join(dir, FileRuns), flag, 0o644); err != nil {
		return nil, fmt.Errorf("create %s: %w", FileRuns, err)
	}
	if a.history, err = os.OpenFile(filepath.Join(dir, FileHistory), flag, 0o644); err != nil {
		a.runs.Close()
		return nil, fmt.Errorf("create %s: %w", FileHistory, err)
	}
	a.hbuf = bufio.NewWriterSize(a.history, 1<<20)
	return a, nil
}

// WriteRun appends one line to runs.jsonl; the line is on disk when it returns.
func (a *Writer) WriteRun(r reports.RunRecord) error {
	b, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("encode run %s: %w", r.RunID, err)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if _, err := a.runs.Write(append(b, '\n')); err != nil {
		return fmt.Errorf("write %s: %w", FileRuns, err)
	}
	return nil
}

// ReplaceRuns rewrites runs.jsonl with recs in place of the lines of the
// same runs (records whose verdicts were judged after they were written),
// every other line byte for byte as it was. The file is replaced whole (a
// new one renamed over it): an interruption leaves the old or the new.
func (a *Writer) ReplaceRuns(recs map[string]reports.RunRecord) error {
	if len(recs) == 0 {
		return nil
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	path := filepath.Join(a.dir, FileRuns)
	old, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("rewrite %s: %w", FileRuns, err)
	}
	var out bytes.Buffer
	for line := range bytes.Lines(old) {
		var id struct {
			RunID string `json:"run_id"`
		}
		if json.Unmarshal(line, &id) == nil {
			if rec, ok := recs[id.RunID]; ok {
				b, err := json.Marshal(rec)
				if err != nil {
					return fmt.Errorf("encode run %s: %w", rec.RunID, err)
				}
				line = append(b, '\n')
			}
		}
		out.Write(line)
	}
	if err := WriteFile(path, out.Bytes()); err != nil {
		return fmt.Errorf("rewrite %s: %w", FileRuns, err)
	}
	// The old file's handle writes to the unlinked file: reopen the new.
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("reopen %s: %w", FileRuns, err)
	}
	a.runs.Close()
	a.runs = f
	return nil
}

// WriteHistory appends ops to history.jsonl.
func (a *Writer) WriteHistory(ops []history.Op) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	enc := json.NewEncoder(a.hbuf)
	for _, op := range ops {
		if err := enc.Encode(op); err != nil {
			return fmt.Errorf("write %s: %w", FileHistory, err)
		}
	}
	return a.hbuf.Flush()
}

// WriteEvents stores a run's final log as events/<cell>/<run>.jsonl.
func (a *Writer) WriteEvents(k history.CellKey, runID string, evs []eventlog.Event) error {
	if !RunFileName(runID) {
		return fmt.Errorf("write final log: run id %q is not a file name", runID)
	}
	dir := filepath.Join(a.dir, DirEvents, k.Dir())
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("create %s: %w", dir, err)
	}
	f, err := os.Create(filepath.Join(dir, runID+".jsonl"))
	if err != nil {
		return fmt.Errorf("write final log of %s: %w", runID, err)
	}
	w := bufio.NewWriter(f)
	enc := json.NewEncoder(w)
	for _, e := range evs {
		if err := enc.Encode(e); err != nil {
			f.Close()
			return fmt.Errorf("write final log of %s: %w", runID, err)
		}
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return fmt.Errorf("write final log of %s: %w", runID, err)
	}
	return f.Close()
}

// Close flushes and closes the appended files.
func (a *Writer) Close() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	err1 := a.hbuf.Flush()
	err2 := a.history.Close()
	err3 := a.runs.Close()
	for _, err := range []error{err1, err2, err3} {
		if err != nil {
			return fmt.Errorf("close artifacts: %w", err)
		}
	}
	return nil
}

// Discard closes the files of a new storm that measured nothing and
// removes what OpenWriter made of it: the artifacts it writes and, when
// OpenWriter created it, the directory itself, so the same command can run
// again as it was. Whatever else the directory holds stays. It is for a
// storm that stopped before its first run (a store unreachable, a
// prerequisite missing), never for a resumed one.
func (a *Writer) Discard() error {
	closeErr := a.Close()
	var errs []error
	for _, name := range []string{FileStorm, FileRuns, FileHistory, FileSummary, FileMD} {
		if err := os.Remove(filepath.Join(a.dir, name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	for _, name := range []string{DirEvents, DirTimelines} {
		// Empty when nothing ran; a directory with files in it stays.
		if err := os.Remove(filepath.Join(a.dir, name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	if a.created {
		if err := os.Remove(a.dir); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("remove the storm directory %s, which measured nothing: %w", a.dir, err)
	}
	return closeErr
}

// WriteSummary writes summary.json and summary.md (atomically each).
func (a *Writer) WriteSummary(s *reports.Summary, md []byte) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if err := WriteJSON(filepath.Join(a.dir, FileSummary), s); err != nil {
		return err
	}
	return WriteFile(filepath.Join(a.dir, FileMD), md)
}

// Dir returns the storm directory.
func (a *Writer) Dir() string { return a.dir }

// WriteJSON writes v to path via a temp file and rename, so a reader never
// sees half a file.
func WriteJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("encode %s: %w", filepath.Base(path), err)
	}
	return WriteFile(path, append(b, '\n'))
}

// WriteFile writes b to path atomically: a temp file renamed over it.
func WriteFile(path string, b []byte) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return fmt.Errorf("write %s: %w", filepath.Base(path), err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("write %s: %w", filepath.Base(path), err)
	}
	return nil
}

// WriteLines creates path and fills it through fill (a JSONL file written
// whole, not appended to).
func WriteLines(path string, fill func(*bufio.Writer) error) error {
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

// WriteTimeline writes the timeline of run runID, as render writes it, to
// dir/timelines/<run>.html (atomically) and returns its path relative to
// dir, as summary.md and runs.jsonl link it.
func WriteTimeline(dir, runID string, render func(io.Writer) error) (string, error) {
	if !RunFileName(runID) {
		return "", fmt.Errorf("timeline: run id %q is not a file name: no timeline written", runID)
	}
	rel := filepath.Join(DirTimelines, runID+".html")
	if err := os.MkdirAll(filepath.Join(dir, DirTimelines), 0o755); err != nil {
		return "", fmt.Errorf("create %s: %w", DirTimelines, err)
	}
	var b bytes.Buffer
	if err := render(&b); err != nil {
		return "", fmt.Errorf("timeline of %s: %w", runID, err)
	}
	if err := WriteFile(filepath.Join(dir, rel), b.Bytes()); err != nil {
		return "", err
	}
	return filepath.ToSlash(rel), nil
}
