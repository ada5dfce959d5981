package merge

import (
	"bufio"
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

	"github.com/stormctl/stormctl/internal/history"
	"github.com/stormctl/stormctl/internal/storm/stormdir"
	"github.com/stormctl/stormctl/reports"
	"github.com/stormctl/stormctl/reports/table"
)

// Shard is one shard directory given to Merge.
type Shard struct {
	Dir string
	// Name is the shard as "i/n", for messages.
	Name string
	// Owns reports whether the shard runs run index r; a run of another
	// index in its runs.jsonl means the directory is not the shard it says.
	Owns func(r int) bool
}

// Result is a merged storm and the check of its run counts.
type Result struct {
	// Summary is the merged storm's, read back from what Merge wrote.
	Summary *reports.Summary
	// Shards are each shard's summary rebuilt from its runs.jsonl, in the
	// order given, with Names their names.
	Shards []*reports.Summary
	Names  []string
	// Notes are disagreements that did not stop the merge.
	Notes []string
	// Incomplete are the shards that hold fewer runs of a cell than they
	// own (they stopped early), in the order given: merged all the same,
	// and recorded in storm.json's merged.incomplete.
	Incomplete []reports.ShardRuns
	// Partial is what the merged storm, read back, is missing of the runs
	// it planned (nil when it holds them all): stormdir.PartialOf.
	Partial *reports.Partial
}

// CountLines says, per cell, that the merged runs are the sum of the
// shards': "local/control/main: 4 runs = 2 (1/2) + 2 (2/2)".
func (m *Result) CountLines() []string {
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
// written, in this build's schema, in the order a whole storm starts them:
// run index, then cell), history.jsonl (likewise), events/, summary.json
// and summary.md. It refuses a shard
// with a malformed artifact, a run of a cell not in cells or of a run index
// its shard does not own, a (cell, run index) or run id found twice, and
// checks that every cell's merged counts, read back from out, equal the sum
// of the shards'. A shard that holds fewer runs of a cell than it owns (its
// run indexes of meta's config.runs) stopped early: it is merged all the
// same, so that what it measured is kept, and named in Result.Incomplete and
// in the merged storm.json's merged.incomplete (meta is not changed). load
// reads a storm directory back, each shard's and the
// merged one (stormdir.LoadStorm: storm.json read whole, as every command
// reads it). The caller checks that the shards are of one storm
// (stormdir.MergeMeta).
func Merge(out string, meta *stormdir.Meta, cells []history.CellKey, shards []Shard, load func(dir string) (*stormdir.Stored, error)) (*Result, error) {
	if entries, err := os.ReadDir(out); err == nil && len(entries) > 0 {
		return nil, fmt.Errorf("--out %s exists and is not empty", out)
	}
	res := &Result{}
	pos := map[history.CellKey]int{}
	for i, k := range cells {
		pos[k] = i
	}
	type slot struct {
		k   history.CellKey
		idx int
	}
	bySlot := map[slot]string{}
	byID := map[string]string{}
	type line struct {
		rec reports.RunRecord
		raw json.RawMessage
	}
	var lines []line
	var stored []*stormdir.Stored
	for _, sh := range shards {
		st, err := load(sh.Dir)
		if err != nil {
			return nil, fmt.Errorf("cannot merge shard %s (%s): %w", sh.Name, sh.Dir, err)
		}
		stored = append(stored, st)
		for _, n := range st.Notes {
			res.Notes = append(res.Notes, fmt.Sprintf("%s: %s", sh.Dir, n))
		}
		for i, r := range st.Runs {
			k := r.CellKey
			if _, ok := pos[k]; !ok {
				return nil, fmt.Errorf("cannot merge: %s: run %s is of cell %s, which is not a cell of the storm", filepath.Join(sh.Dir, stormdir.FileRuns), r.RunID, k)
			}
			if !sh.Owns(r.Index) {
				return nil, fmt.Errorf("cannot merge: %s: run %s has run index %d, which shard %s does not run", filepath.Join(sh.Dir, stormdir.FileRuns), r.RunID, r.Index, sh.Name)
			}
			if prev, ok := bySlot[slot{k, r.Index}]; ok {
				return nil, fmt.Errorf("cannot merge: run index %d of %s is in %s and in %s", r.Index, k, prev, sh.Dir)
			}
			bySlot[slot{k, r.Index}] = sh.Dir
			if prev, ok := byID[r.RunID]; ok {
				return nil, fmt.Errorf("cannot merge: run id %s is in %s and in %s (the shards minted the same id: their histories cannot be told apart)", r.RunID, prev, sh.Dir)
			}
			byID[r.RunID] = sh.Dir
			lines = append(lines, line{r, st.Lines[i]})
		}
		res.Shards = append(res.Shards, st.Summary)
		res.Names = append(res.Names, sh.Name)
		if in := incomplete(sh, st.Summary, cells, meta.Config.Runs); in != nil {
			res.Incomplete = append(res.Incomplete, *in)
		}
	}
	if len(res.Incomplete) > 0 {
		m := *meta
		var merged stormdir.MergeInfo
		if meta.Merged != nil {
			merged = *meta.Merged
		}
		merged.Incomplete = res.Incomplete
		m.Merged = &merged
		meta = &m
	}
	sort.SliceStable(lines, func(i, j int) bool {
		a, b := lines[i].rec, lines[j].rec
		if a.Index != b.Index {
			return a.Index < b.Index
		}
		return pos[a.CellKey] < pos[b.CellKey]
	})

	sum := reports.NewSummary(cells)
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
		sum.Cell(l.rec.CellKey).Add(l.rec)
	}

	if err := writeMerged(out, meta, sum, shards, stored, func(w *bufio.Writer) error {
		for _, l := range lines {
			if _, err := w.Write(append(slices.Clip(l.raw), '\n')); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		os.RemoveAll(out)
		var ae *stormdir.ArtifactError
		if errors.As(err, &ae) {
			return nil, err // a shard's history is malformed: the input's fault
		}
		return nil, &OutputError{Err: err}
	}

	back, err := load(out)
	if err != nil {
		return nil, &OutputError{Err: fmt.Errorf("the merged storm does not read back: %w", err)}
	}
	res.Summary = back.Summary
	res.Partial = back.Partial()
	var bad []string
	for _, c := range back.Summary.Cells {
		runs, counts := 0, map[history.Outcome]int{}
		for _, s := range res.Shards {
			if sc := s.Cell(c.Key()); sc != nil {
				runs += sc.Runs
				for _, o := range history.Outcomes() {
					counts[o] += sc.Count(o)
				}
			}
		}
		same := c.Runs == runs
		for _, o := range history.Outcomes() {
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

// incomplete returns the shard's counts when it holds fewer runs of a cell
// of cells than it owns of runs run indexes, nil otherwise.
func incomplete(sh Shard, sum *reports.Summary, cells []history.CellKey, runs int) *reports.ShardRuns {
	owned := 0
	for r := range runs {
		if sh.Owns(r) {
			owned++
		}
	}
	s := reports.ShardRuns{Shard: sh.Name, Dir: sh.Dir, Owned: owned * len(cells)}
	short := false
	for _, k := range cells {
		held := 0
		if c := sum.Cell(k); c != nil {
			held = c.Runs
		}
		s.Runs += held
		short = short || held < owned
	}
	if !short {
		return nil
	}
	return &s
}

// OutputError is a merge that failed on its output, not on its inputs: the
// merged storm could not be written (disk full), or does not read back as
// the sum of its shards (a bug).
type OutputError struct{ Err error }

// Error is the failure's own text.
func (e *OutputError) Error() string { return e.Err.Error() }

// Unwrap returns the failure.
func (e *OutputError) Unwrap() error { return e.Err }

// writeMerged writes the merged storm's files into out: stored are the
// shards as read back, whose history is copied in this build's schema.
func writeMerged(out string, meta *stormdir.Meta, sum *reports.Summary, shards []Shard, stored []*stormdir.Stored, writeRuns func(*bufio.Writer) error) error {
	if err := os.MkdirAll(filepath.Join(out, stormdir.DirEvents), 0o755); err != nil {
		return fmt.Errorf("create %s: %w", out, err)
	}
	if err := stormdir.WriteJSON(filepath.Join(out, stormdir.FileStorm), meta); err != nil {
		return err
	}
	if err := stormdir.WriteLines(filepath.Join(out, stormdir.FileRuns), writeRuns); err != nil {
		return err
	}
	if err := stormdir.WriteLines(filepath.Join(out, stormdir.FileHistory), func(w *bufio.Writer) error {
		for i, sh := range shards {
			if err := stored[i].EachHistoryLine(func(op json.RawMessage) error {
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
		for _, d := range []struct{ dir, what string }{{stormdir.DirEvents, "final logs"}, {stormdir.DirTimelines, "timelines"}} {
			src := filepath.Join(sh.Dir, d.dir)
			if _, err := os.Stat(src); errors.Is(err, fs.ErrNotExist) {
				continue
			}
			if err := os.CopyFS(filepath.Join(out, d.dir), os.DirFS(src)); err != nil {
				return fmt.Errorf("copy the %s of shard %s: %w", d.what, sh.Name, err)
			}
		}
	}
	return table.RewriteSummary(out, sum)
}
