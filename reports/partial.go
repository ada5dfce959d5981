package reports

import (
	"fmt"
	"strings"

	"github.com/stormctl/stormctl/internal/base/plural"
)

// Partial is what a stored storm is missing of the runs it planned: every
// cell was to have RunsPerCell runs (storm.json's config.runs; of a
// shard's directory, the run indexes its shard owns). A merged storm also
// names the shards that were not merged and those that stopped early. A
// storm whose storm.json does not say its runs per cell (RunsPerCell 0) is
// partial too: it cannot be shown whole. Nothing gated on a partial storm
// passes (package gate). **contract** (gate --format json's "partial" and
// "baseline_partial")
type Partial struct {
	// RunsPerCell is the runs each cell was to have; 0 when storm.json
	// does not say.
	RunsPerCell int `json:"runs_per_cell"`
	// Cells is the storm's cells, ShortCells those with fewer runs than
	// RunsPerCell.
	Cells      int `json:"cells"`
	ShortCells int `json:"short_cells"`
	// Planned is RunsPerCell x Cells; Runs the runs recorded, Missing the
	// runs short cells lack.
	Planned int `json:"planned"`
	Runs    int `json:"runs"`
	Missing int `json:"missing"`
	// MissingShards are the shards (i/n) a merged storm was not given
	// (storm.json's merged.missing).
	MissingShards []string `json:"missing_shards,omitempty"`
	// IncompleteShards are the shards a merged storm was given that hold
	// fewer runs than they own (storm.json's merged.incomplete).
	IncompleteShards []ShardRuns `json:"incomplete_shards,omitempty"`
}

// ShardRuns is a shard that holds fewer runs than it owns: it stopped
// early (an internal error, a kill, a machine lost), and merge merged what
// it held. **contract** (storm.json's merged.incomplete)
type ShardRuns struct {
	// Shard is the shard, "i/n"; Dir the directory merge read it from.
	Shard string `json:"shard"`
	Dir   string `json:"dir"`
	// Runs is the runs it holds, Owned the runs it owns (its run indexes
	// of config.runs, in every cell), over every cell.
	Runs  int `json:"runs"`
	Owned int `json:"owned"`
}

// Reason says what the shard lacks and what to do about it.
func (s ShardRuns) Reason() string {
	dir := s.Dir
	if dir == "" {
		dir = "DIR"
	}
	return fmt.Sprintf("shard %s is incomplete: %d of its %s (it stopped early; resume it with `stormctl storm --resume %s`, or rerun it)",
		s.Shard, s.Runs, plural.Count(s.Owned, "run"), dir)
}

// Unplanned reports whether storm.json did not say how many runs each cell
// was to have.
func (p *Partial) Unplanned() bool { return p.RunsPerCell <= 0 }

// Reasons are the lines saying what the storm is missing: the runs per
// cell unknown, each shard not merged, each shard incomplete, and the runs
// missing over the cells.
func (p *Partial) Reasons() []string {
	var out []string
	if p.Unplanned() {
		out = append(out, "storm.json does not say how many runs each cell was to have (no config.runs): the storm cannot be shown whole")
	}
	for _, s := range p.MissingShards {
		out = append(out, fmt.Sprintf("shard %s was not merged: none of its runs are here (give merge its directory, or rerun it)", s))
	}
	for _, s := range p.IncompleteShards {
		out = append(out, s.Reason())
	}
	if !p.Unplanned() && p.Missing > 0 {
		out = append(out, fmt.Sprintf("%d of the %s planned %s missing: %d of %s %s fewer runs than the %d each was to have",
			p.Missing, plural.Count(p.Planned, "run"), plural.Word(p.Missing, "is", "are"),
			p.ShortCells, plural.Count(p.Cells, "cell"), plural.Word(p.ShortCells, "has", "have"), p.RunsPerCell))
	}
	return out
}

// Headline is the partial storm in a few words: "144 of 288 runs missing
// (shards 2/4, 4/4 incomplete)".
func (p *Partial) Headline() string {
	s := fmt.Sprintf("%d of %s missing", p.Missing, plural.Count(p.Planned, "run"))
	if p.Unplanned() {
		s = "its runs per cell unknown"
	}
	var shards []string
	if len(p.MissingShards) > 0 {
		shards = append(shards, fmt.Sprintf("%s %s not merged", plural.Word(len(p.MissingShards), "shard", "shards"), strings.Join(p.MissingShards, ", ")))
	}
	if len(p.IncompleteShards) > 0 {
		var names []string
		for _, sh := range p.IncompleteShards {
			names = append(names, sh.Shard)
		}
		shards = append(shards, fmt.Sprintf("%s %s incomplete", plural.Word(len(names), "shard", "shards"), strings.Join(names, ", ")))
	}
	if len(shards) > 0 {
		s += " (" + strings.Join(shards, "; ") + ")"
	}
	return s
}
