// Package reports is what a storm's runs come to: the run record (a line
// of runs.jsonl) and the summary (summary.json: a cell per world x
// scenario x condition, its outcome counts and forensics). Reading and
// writing them is the storm directory's job (package stormdir).
//
//   - summary.go: RunRecord, Cell (Cell.Add folds a record into its cell),
//     Summary (Worlds, Conditions: its cells' distinct ones);
//   - tally.go: Tally, the one cell aggregator storm, --resume and
//     forensics DIR fold their run records through;
//   - measured.go: Measured, the runs of a cell that measured something
//     (the denominator of every rate), and the evidence rules on decided
//     runs;
//   - partial.go: Partial, what a storm is missing of the runs it planned
//     (shards not merged or stopped early, cells short of their runs),
//     which gate fails and comment and merge say.
//
// What is done with a summary lives in the packages below: table (the
// tables and summary.md), plots, stats (intervals and tests), compare (two
// storms cell by cell), gate (rules a storm must keep) and merge (shards
// into one storm).
package reports
