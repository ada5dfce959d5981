package pipeline

import (
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/stormctl/stormctl/internal/storm/stormdir"
	"github.com/stormctl/stormctl/reports"
	"github.com/stormctl/stormctl/reports/table"
)

// Reclassifier keeps the classes the pipeline computes again for a stored
// storm's runs (stormctl forensics DIR): for runs recorded without one
// (storms older than the explainer), or for every run (--reclassify). It
// writes the first runs' timelines of each class and cell, and Store puts
// the classes into the storm's summary.
type Reclassifier struct {
	dir       string
	timelines Timelines
	// Computed counts the runs given a class.
	Computed int
	// replace replaces recorded classes; changed counts each "old -> new"
	// change it made.
	replace bool
	changed map[string]int
}

// NewReclassifier returns the reclassifier of the storm in dir; replace
// says recorded classes are computed again and replaced (--reclassify).
func NewReclassifier(dir string, replace bool) *Reclassifier {
	return &Reclassifier{dir: dir, timelines: Timelines{}, replace: replace}
}

// Keep sets r's class to the one computed, and its timeline while its
// class and cell have fewer than reports.MaxTimelines.
func (c *Reclassifier) Keep(r *reports.RunRecord, ex *Explained) error {
	if r.Class != "" && r.Class != ex.Class {
		if c.changed == nil {
			c.changed = map[string]int{}
		}
		c.changed[r.Class+" -> "+ex.Class]++
	}
	r.Class, r.Timeline = ex.Class, ""
	c.Computed++
	if c.timelines.Take(r.CellKey, ex.Class) {
		path, err := ex.WriteTimeline(c.dir)
		if err != nil {
			return err
		}
		r.Timeline = path
	}
	return nil
}

// ChangeLine says which recorded classes reclassifying changed.
func (c *Reclassifier) ChangeLine() string {
	if len(c.changed) == 0 {
		return "no recorded class changed"
	}
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(c.changed)) {
		parts = append(parts, fmt.Sprintf("%d %s", c.changed[k], k))
	}
	return "changed " + strings.Join(parts, ", ")
}

// Store writes the computed classes and timeline links of runs into
// summary.json and summary.md (runs.jsonl, the storm's own record, is left
// as it was); replacing, it removes the timelines no run links any more.
func (c *Reclassifier) Store(runs []reports.RunRecord) error {
	st, err := stormdir.LoadStorm(c.dir)
	if st == nil {
		return err
	}
	for _, cell := range st.Summary.Cells {
		cell.Classes, cell.Timelines = nil, nil
	}
	linked := map[string]bool{}
	for _, r := range runs {
		if cell := st.Summary.Cell(r.CellKey); cell != nil {
			cell.AddClass(r.Class, r.Timeline)
		}
		if r.Timeline != "" {
			linked[filepath.Base(r.Timeline)] = true
		}
	}
	if err := table.RewriteSummary(c.dir, st.Summary); err != nil {
		return err
	}
	if c.replace {
		return pruneTimelines(filepath.Join(c.dir, stormdir.DirTimelines), linked)
	}
	return nil
}

// pruneTimelines removes the timelines of dir that no run links any more:
// reclassifying can give another run of a class its timeline.
func pruneTimelines(dir string, linked map[string]bool) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		return fmt.Errorf("prune timelines: %w", err)
	}
	for _, e := range entries {
		if e.Type().IsRegular() && strings.HasSuffix(e.Name(), ".html") && !linked[e.Name()] {
			if err := os.Remove(filepath.Join(dir, e.Name())); err != nil {
				return fmt.Errorf("prune timelines: %w", err)
			}
		}
	}
	return nil
}
