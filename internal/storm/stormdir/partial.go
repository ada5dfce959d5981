package stormdir

import "github.com/stormctl/stormctl/reports"

// PartialOf says what a stored storm is missing of the runs its storm.json
// planned (nil when it holds them all): every cell of sum was to have
// config.runs runs (a shard's directory: the run indexes its shard owns),
// and a merged storm names the shards it was not given (merged.missing)
// and those that stopped early (merged.incomplete). A storm.json that does
// not say its runs per cell (none, or config.runs 0) makes the storm
// partial: it cannot be shown whole. A cell with more runs than planned
// lacks none (no storm records them; merge and --resume refuse them).
func PartialOf(meta *Meta, sum *reports.Summary) *reports.Partial {
	p := &reports.Partial{}
	if meta != nil && meta.Config.Runs > 0 {
		p.RunsPerCell = meta.Config.Shard.RunsPerCell(meta.Config.Runs)
	}
	if meta != nil && meta.Merged != nil {
		p.MissingShards = meta.Merged.Missing
		p.IncompleteShards = meta.Merged.Incomplete
	}
	for _, c := range sum.Cells {
		p.Cells++
		p.Runs += c.Runs
		p.Planned += p.RunsPerCell
		if c.Runs < p.RunsPerCell {
			p.ShortCells++
			p.Missing += p.RunsPerCell - c.Runs
		}
	}
	if !p.Unplanned() && p.ShortCells == 0 && len(p.MissingShards) == 0 && len(p.IncompleteShards) == 0 {
		return nil
	}
	return p
}

// Partial says what the storm is missing of the runs it planned (nil when
// it holds them all): PartialOf its storm.json and summary.
func (st *Stored) Partial() *reports.Partial { return PartialOf(st.Meta, st.Summary) }
