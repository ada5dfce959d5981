package stormdir

import (
	"bufio"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/stormctl/stormctl/internal/engine/conditions"
	"github.com/stormctl/stormctl/internal/history"
	"github.com/stormctl/stormctl/reports"
	"github.com/stormctl/stormctl/scenarios"
)

// This file reads back what an interrupted storm recorded and readies its
// directory for the runs still missing (storm --resume DIR).

// Recorded is what runs.jsonl of an interrupted storm holds: the runs that
// finished, in file order.
type Recorded struct {
	Runs []reports.RunRecord
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
// events/ and the timelines of runs not recorded.
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
		n, err := removeUnrecorded(filepath.Join(dir, DirEvents, c.Name()), ".jsonl", "final log", ids)
		t.Events += n
		if err != nil {
			return nil, err
		}
	}
	if _, err := removeUnrecorded(filepath.Join(dir, DirTimelines), ".html", "timeline", ids); err != nil {
		return nil, err
	}
	return t, nil
}

// removeUnrecorded removes the files <run><ext> of dir (a run's final log,
// its timeline: what) of every run not in ids, and says how many it
// removed. A dir that does not exist holds none.
func removeUnrecorded(dir, ext, what string, ids map[string]bool) (int, error) {
	files, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("read %s: %w", dir, err)
	}
	n := 0
	for _, f := range files {
		if id, ok := strings.CutSuffix(f.Name(), ext); ok && !ids[id] {
			if err := os.Remove(filepath.Join(dir, f.Name())); err != nil {
				return n, fmt.Errorf("remove the %s of unfinished run %s: %w", what, id, err)
			}
			n++
		}
	}
	return n, nil
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
func AppendWriter(dir string, meta *Meta) (*Writer, error) {
	return openWriter(dir, meta, os.O_WRONLY|os.O_CREATE|os.O_APPEND)
}

// Resume is an interrupted storm read back from its directory.
type Resume struct {
	Dir  string
	Meta *Meta
	// Stored is what runs.jsonl holds (its cut-off last line dropped).
	Stored *Recorded
	done   map[history.CellKey]map[int]bool
}

// ReadResume reads an interrupted storm's storm.json and runs.jsonl.
// Errors are *ArtifactErrors naming the file (and the line).
func ReadResume(dir string) (*Resume, error) {
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		return nil, &ArtifactError{File: dir, Err: errors.New("not a directory")}
	}
	if _, err := os.Stat(filepath.Join(dir, FileStorm)); errors.Is(err, fs.ErrNotExist) {
		return nil, &ArtifactError{File: dir, Err: fmt.Errorf("no %s: not a storm directory", FileStorm)}
	}
	meta, err := ReadMeta(dir)
	if err != nil {
		return nil, err
	}
	rec, err := ReadRecorded(dir)
	if err != nil {
		return nil, err
	}
	return &Resume{Dir: dir, Meta: meta, Stored: rec}, nil
}

// resumeFlags are the storm flags that shape the matrix or the
// measurements, each with its value in a Config: a resumed storm takes
// them from storm.json, and refuses one given with another value.
var resumeFlags = []struct {
	flag  string
	value func(Config) string
}{
	{"world", func(c Config) string { return strings.Join(c.Worlds, ",") }},
	{"scenario", func(c Config) string { return strings.Join(c.Scenarios, ",") }},
	{"condition", func(c Config) string { return strings.Join(c.Conditions, ",") }},
	{"runs", func(c Config) string { return fmt.Sprint(c.Runs) }},
	{"concurrency", func(c Config) string { return fmt.Sprint(c.Concurrency) }},
	{"runs-in-flight", func(c Config) string { return fmt.Sprint(c.RunsInFlight) }},
	{"seed", func(c Config) string { return fmt.Sprint(c.Seed) }},
	{"time-scale", func(c Config) string { return fmt.Sprint(c.TimeScale) }},
	// A storm.json from before --rounds has none: the harness's 6.
	{"rounds", func(c Config) string { return fmt.Sprint(cmp.Or(c.Rounds, scenarios.DefaultRounds)) }},
	{"latency", func(c Config) string { return c.Latency }},
	{"timeout", func(c Config) string { return c.Timeout.String() }},
	{"page-size", func(c Config) string { return fmt.Sprint(c.PageSize) }},
	{"shard", func(c Config) string { return c.Shard.String() }},
	{"hosts", func(c Config) string { return fmt.Sprint(c.Hosts) }},
	// A storm.json from before --admission started its runs as auto does
	// not; "" is read as it is stored.
	{"admission", func(c Config) string { return c.Admission }},
}

// Config is the resumed storm's config: storm.json's, in the resumed
// directory, with --keep as given (changed says which flags were given).
// A flag of the matrix or the measurements given with another value than
// storm.json's is refused, naming both.
func (r *Resume) Config(given Config, changed func(flag string) bool) (Config, error) {
	stored := r.Meta.Config
	for _, f := range resumeFlags {
		if !changed(f.flag) {
			continue
		}
		if g, s := f.value(given), f.value(stored); g != s {
			return Config{}, fmt.Errorf("--resume %s: --%s %s differs from the storm's %s (%s); a resumed storm keeps its matrix and measurements: drop --%s, or start a new storm",
				r.Dir, f.flag, orNone(g), orNone(s), FileStorm, f.flag)
		}
	}
	if changed("out") && filepath.Clean(given.Out) != filepath.Clean(r.Dir) {
		return Config{}, fmt.Errorf("--resume %s: --out %s names another directory; a resumed storm appends to its own (drop --out)", r.Dir, given.Out)
	}
	c := stored
	c.Out = r.Dir
	// A storm.json from before --rounds has none: it ran the harness's.
	c.Rounds = cmp.Or(c.Rounds, scenarios.DefaultRounds)
	if changed("keep") {
		c.Keep = given.Keep
	}
	return c, nil
}

func orNone(s string) string {
	if s == "" {
		return `""`
	}
	return s
}

// Check refuses to resume as a storm of cells, conditions and config
// (validated from Config) what was not the same storm: another build or
// artifact schema, other cells or condition knobs, or a recorded run that
// is not one of the storm's (cell, run index) pairs or is recorded twice.
func (r *Resume) Check(cells []history.CellKey, conds map[string]conditions.Condition, cfg Config, version string) error {
	m := r.Meta
	switch {
	case m.Schema != reports.SchemaVersion:
		return fmt.Errorf("--resume %s: the storm's artifacts are of schema %d, this build writes %d: one storm's artifacts come from one build (start a new storm)", r.Dir, m.Schema, reports.SchemaVersion)
	case m.Version != version:
		return fmt.Errorf("--resume %s: the storm was run by stormctl %s, this is %s: one storm's runs come from one build (start a new storm)", r.Dir, m.Version, version)
	case !slices.Equal(m.Cells, cells):
		return fmt.Errorf("--resume %s: %s lists other cells than its config makes: not resumable", r.Dir, FileStorm)
	case !reflect.DeepEqual(m.Conditions, conds):
		return fmt.Errorf("--resume %s: its conditions' knobs differ from this build's presets: not resumable (start a new storm)", r.Dir)
	}
	r.done = map[history.CellKey]map[int]bool{}
	path := filepath.Join(r.Dir, FileRuns)
	for _, rec := range r.Stored.Runs {
		k := rec.CellKey
		switch {
		case !slices.Contains(cells, k):
			return fmt.Errorf("--resume %s: %s: run %s is of cell %s, which is not a cell of the storm", r.Dir, path, rec.RunID, k)
		case rec.Index < 0 || rec.Index >= cfg.Runs || !cfg.Shard.Owns(rec.Index):
			return fmt.Errorf("--resume %s: %s: run %s has run index %d, which the storm does not run", r.Dir, path, rec.RunID, rec.Index)
		case r.done[k][rec.Index]:
			return fmt.Errorf("--resume %s: %s: run index %d of %s is recorded twice", r.Dir, path, rec.Index, k)
		}
		if r.done[k] == nil {
			r.done[k] = map[int]bool{}
		}
		r.done[k][rec.Index] = true
	}
	return nil
}

// Recorded reports whether run index idx of cell k finished before the
// storm was interrupted (false on a nil Resume: a new storm).
func (r *Resume) Recorded(k history.CellKey, idx int) bool {
	return r != nil && r.done[k][idx]
}

// Missing counts the runs still to run, of cfg's runs per cell owned by
// its shard, over cells.
func (r *Resume) Missing(cells []history.CellKey, cfg Config) int {
	n := 0
	for _, k := range cells {
		for idx := range cfg.Runs {
			if cfg.Shard.Owns(idx) && !r.Recorded(k, idx) {
				n++
			}
		}
	}
	return n
}

// Reopen readies the interrupted storm's directory for the runs still
// missing (TrimUnrecorded) and reopens it for appending, storm.json
// rewritten as meta, which takes the interrupted storm's start (run ids
// depend on it) and lists this resume's time. It returns the history of the
// recorded runs, by run id.
func (r *Resume) Reopen(meta *Meta) (*Writer, map[string][]history.Op, error) {
	meta.Started = r.Meta.Started
	meta.Resumed = append(slices.Clone(r.Meta.Resumed), time.Now().UTC())
	trimmed, err := TrimUnrecorded(r.Dir, r.Stored)
	if err != nil {
		return nil, nil, err
	}
	out, err := AppendWriter(r.Dir, meta)
	if err != nil {
		return nil, nil, err
	}
	return out, trimmed.Ops, nil
}
