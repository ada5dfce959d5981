package reports

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/stormctl/stormctl/history"
)

// This file reads back what an interrupted storm recorded and readies its
// directory for the runs still missing (storm --resume DIR).

// Recorded is what runs.jsonl of an interrupted storm holds: the runs that
// finished, in file order.
type Recorded struct {
	Runs []RunRecord
	// Size is the length of runs.jsonl's complete lines: what stays.
	Size int64
	// CutLine is the line number of a cut-off last line, dropped (0: none).
	CutLine int
}

// ReadRecorded reads runs.jsonl of a storm stopped in any way (Ctrl-C,
// kill -9, a reboot). A last line cut off by the kill (no newline, or not
// JSON) is dropped and named in CutLine: the run it recorded is run again.
// A malformed line before the last is an *ArtifactError: that is damage,
// not an interruption.
func ReadRecorded(dir string) (*Recorded, error) {
	path := filepath.Join(dir, FileRuns)
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, &ArtifactError{File: dir, Err: ErrNotStorm}
	}
	if err != nil {
		return nil, &ArtifactError{File: path, Err: err}
	}
	defer f.Close()
	rec := &Recorded{}
	br := bufio.NewReaderSize(f, 1<<20)
	var bad *ArtifactError
	for line := 1; ; line++ {
		b, err := br.ReadBytes('\n')
		if err != nil && !errors.Is(err, io.EOF) {
			return nil, &ArtifactError{File: path, Line: line, Err: err}
		}
		if len(b) == 0 {
			break
		}
		if bad != nil { // a malformed line with more after it
			return nil, bad
		}
		complete := b[len(b)-1] == '\n'
		var l runLine
		if !complete {
			rec.CutLine = line
			break
		}
		if !blank(b) {
			if jerr := json.Unmarshal(b, &l); jerr != nil {
				bad = &ArtifactError{File: path, Line: line, Err: fmt.Errorf("malformed line (cut off or not JSON): %v", jerr)}
				rec.CutLine = line
				continue
			}
			rec.Runs = append(rec.Runs, l.rec)
		}
		rec.Size += int64(len(b))
	}
	return rec, nil
}

// Trimmed says what TrimUnrecorded dropped, and holds the history of the
// recorded runs.
type Trimmed struct {
	// HistoryLines counts the history.jsonl lines dropped: operations of
	// runs that never finished, and a cut-off last line.
	HistoryLines int
	// Events counts the final logs removed (runs that never finished).
	Events int
	// Ops is history.jsonl's operations of the recorded runs, by run id.
	Ops map[string][]history.Op
}

// TrimUnrecorded readies dir to take more runs: it cuts runs.jsonl to
// rec's complete lines, keeps only the history.jsonl lines of recorded runs
// (an unfinished run's partial history would otherwise count again when it
// is run again, under the same run id), and removes the final logs under
// events/ of runs not recorded.
func TrimUnrecorded(dir string, rec *Recorded) (*Trimmed, error) {
	ids := make(map[string]bool, len(rec.Runs))
	for _, r := range rec.Runs {
		ids[r.RunID] = true
	}
	if err := os.Truncate(filepath.Join(dir, FileRuns), rec.Size); err != nil {
		return nil, fmt.Errorf("cut %s to its complete lines: %w", FileRuns, err)
	}
	t := &Trimmed{Ops: map[string][]history.Op{}}
	if err := t.history(dir, ids); err != nil {
		return nil, err
	}
	cells, err := os.ReadDir(filepath.Join(dir, DirEvents))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("read %s: %w", DirEvents, err)
	}
	for _, c := range cells {
		if !c.IsDir() {
			continue
		}
		cdir := filepath.Join(dir, DirEvents, c.Name())
		files, err := os.ReadDir(cdir)
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", cdir, err)
		}
		for _, f := range files {
			if id, ok := strings.CutSuffix(f.Name(), ".jsonl"); ok && !ids[id] {
				if err := os.Remove(filepath.Join(cdir, f.Name())); err != nil {
					return nil, fmt.Errorf("remove the final log of unfinished run %s: %w", id, err)
				}
				t.Events++
			}
		}
	}
	return t, nil
}

// history rewrites history.jsonl with the lines of recorded runs only.
func (t *Trimmed) history(dir string, ids map[string]bool) error {
	path := filepath.Join(dir, FileHistory)
	in, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read %s: %w", FileHistory, err)
	}
	defer in.Close()
	err = WriteLines(path+".tmp", func(w *bufio.Writer) error {
		br := bufio.NewReaderSize(in, 1<<20)
		for {
			b, err := br.ReadBytes('\n')
			if err != nil && !errors.Is(err, io.EOF) {
				return fmt.Errorf("read %s: %w", FileHistory, err)
			}
			if len(b) == 0 {
				return nil
			}
			var op history.Op
			if b[len(b)-1] != '\n' || json.Unmarshal(b, &op) != nil || !ids[op.RunID] {
				t.HistoryLines++
				continue
			}
			t.Ops[op.RunID] = append(t.Ops[op.RunID], op)
			if _, err := w.Write(b); err != nil {
				return fmt.Errorf("write %s: %w", FileHistory, err)
			}
		}
	})
	if err != nil {
		os.Remove(path + ".tmp")
		return err
	}
	if err := os.Rename(path+".tmp", path); err != nil {
		return fmt.Errorf("write %s: %w", FileHistory, err)
	}
	return nil
}

// AppendWriter reopens a storm directory readied by TrimUnrecorded: it
// writes meta as storm.json again and appends to runs.jsonl and
// history.jsonl.
func AppendWriter(dir string, meta any) (*Writer, error) {
	return openWriter(dir, meta, os.O_WRONLY|os.O_CREATE|os.O_APPEND)
}
