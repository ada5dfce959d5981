package storm

import (
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/stormctl/stormctl/forensics"
	"github.com/stormctl/stormctl/history"
	"github.com/stormctl/stormctl/reports"
	"github.com/stormctl/stormctl/scenarios"
)

// This file continues an interrupted storm from its artifacts (storm
// --resume DIR): the config comes from storm.json, the runs already
// finished from runs.jsonl, and only the missing (cell, run index) pairs
// run, with the ids and seeds the interrupted storm gave them (RunID).

// Resume is an interrupted storm read back from its directory.
type Resume struct {
	Dir  string
	Meta *StormMeta
	// Stored is what runs.jsonl holds (its cut-off last line dropped).
	Stored *reports.Recorded
	done   map[history.CellKey]map[int]bool
}

// ReadResume reads an interrupted storm's storm.json and runs.jsonl.
// Errors are *reports.ArtifactErrors naming the file (and the line).
func ReadResume(dir string) (*Resume, error) {
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		return nil, &reports.ArtifactError{File: dir, Err: errors.New("not a directory")}
	}
	if _, err := os.Stat(filepath.Join(dir, reports.FileStorm)); errors.Is(err, fs.ErrNotExist) {
		return nil, &reports.ArtifactError{File: dir, Err: fmt.Errorf("no %s: not a storm directory", reports.FileStorm)}
	}
	meta, err := ReadMeta(dir)
	if err != nil {
		return nil, err
	}
	rec, err := reports.ReadRecorded(dir)
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
				r.Dir, f.flag, orNone(g), orNone(s), reports.FileStorm, f.flag)
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

// Check refuses to resume with plan (validated from Config) what was not
// the same storm: another build, other cells or condition knobs, or a
// recorded run that is not one of the plan's (cell, run index) pairs or is
// recorded twice.
func (r *Resume) Check(plan *Plan, version string) error {
	m := r.Meta
	switch {
	case m.Version != version:
		return fmt.Errorf("--resume %s: the storm was run by stormctl %s, this is %s: one storm's runs come from one build (start a new storm)", r.Dir, m.Version, version)
	case !slices.Equal(m.Cells, plan.Cells):
		return fmt.Errorf("--resume %s: %s lists other cells than its config makes: not resumable", r.Dir, reports.FileStorm)
	case !reflect.DeepEqual(m.Conditions, plan.Conditions):
		return fmt.Errorf("--resume %s: its conditions' knobs differ from this build's presets: not resumable (start a new storm)", r.Dir)
	}
	r.done = map[history.CellKey]map[int]bool{}
	path := filepath.Join(r.Dir, reports.FileRuns)
	for _, rec := range r.Stored.Runs {
		k := rec.CellKey
		switch {
		case !slices.Contains(plan.Cells, k):
			return fmt.Errorf("--resume %s: %s: run %s is of cell %s, which is not a cell of the storm", r.Dir, path, rec.RunID, k)
		case rec.Index < 0 || rec.Index >= plan.Config.Runs || !plan.Config.Shard.Owns(rec.Index):
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

// Missing counts the runs still to run, of runs per cell owned by the
// shard, over cells.
func (r *Resume) Missing(plan *Plan) int {
	n := 0
	for _, k := range plan.Cells {
		for idx := range plan.Config.Runs {
			if plan.Config.Shard.Owns(idx) && !r.Recorded(k, idx) {
				n++
			}
		}
	}
	return n
}

// prior is what a resumed storm had recorded: the runs and their history.
type prior struct {
	runs []reports.RunRecord
	ops  map[string][]history.Op
}

// openArtifacts opens a new storm's artifacts, or readies a resumed one's
// (TrimUnrecorded: partial runs.jsonl line, history and final logs of runs
// that never finished dropped; their timelines too) and reopens them for
// appending. meta takes the resumed storm's start (run ids depend on it)
// and this resume's time.
func openArtifacts(meta *StormMeta, res *Resume) (*reports.Writer, *prior, error) {
	if res == nil {
		out, err := reports.OpenWriter(meta.Config.Out, meta)
		return out, nil, err
	}
	meta.Started = res.Meta.Started
	meta.Resumed = append(slices.Clone(res.Meta.Resumed), time.Now().UTC())
	dir := meta.Config.Out
	trimmed, err := reports.TrimUnrecorded(dir, res.Stored)
	if err != nil {
		return nil, nil, err
	}
	if err := trimTimelines(dir, res.Stored.Runs); err != nil {
		return nil, nil, err
	}
	out, err := reports.AppendWriter(dir, meta)
	if err != nil {
		return nil, nil, err
	}
	return out, &prior{runs: res.Stored.Runs, ops: trimmed.Ops}, nil
}

// trimTimelines removes the timelines of runs not recorded.
func trimTimelines(dir string, runs []reports.RunRecord) error {
	ids := map[string]bool{}
	for _, r := range runs {
		ids[r.RunID] = true
	}
	tdir := filepath.Join(dir, DirTimelines)
	files, err := os.ReadDir(tdir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read %s: %w", tdir, err)
	}
	for _, f := range files {
		if id, ok := strings.CutSuffix(f.Name(), ".html"); ok && !ids[id] {
			if err := os.Remove(filepath.Join(tdir, f.Name())); err != nil {
				return fmt.Errorf("remove the timeline of unfinished run %s: %w", id, err)
			}
		}
	}
	return nil
}

// addPrior counts a resumed storm's recorded runs into the summary, the
// cells' commit order and windows (from their final logs and history) and
// the timelines written, as if the runner had just run them.
func (r *runner) addPrior(p *prior) error {
	if p == nil {
		return nil
	}
	r.summary.Started = r.started
	for _, rec := range p.runs {
		k := rec.CellKey
		final, err := reports.ReadEvents(r.plan.Config.Out, k, rec.RunID)
		if err != nil {
			return fmt.Errorf("resume: the final log of recorded run %s: %w", rec.RunID, err)
		}
		an := forensics.AnalyzeRun(forensics.RunInput{Scheme: r.plan.Conditions[k.Condition].Knobs.Scheme,
			Final: final, Ops: p.ops[rec.RunID], StoreCommitTimes: rec.CommitSource == "store"})
		r.tally.Add(rec, an.Order, an.Commits)
		if rec.Class != "" && rec.Timeline != "" {
			if r.timelines[k] == nil {
				r.timelines[k] = map[string]int{}
			}
			r.timelines[k][rec.Class]++
		}
	}
	return nil
}

// showPrior shows a resumed storm's recorded runs in the progress.
func (r *runner) showPrior() {
	if r.plan.Resume == nil {
		return
	}
	r.mu.Lock()
	var cells []reports.Cell
	for _, c := range r.summary.Cells {
		if c.Runs > 0 {
			cells = append(cells, *c)
		}
	}
	r.mu.Unlock()
	for _, c := range cells {
		r.deps.Progress.Update(c)
	}
}
