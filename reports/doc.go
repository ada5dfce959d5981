// Package reports holds what a storm leaves behind and reads it back: the
// run records (runs.jsonl), every reader's history (history.jsonl), each
// run's final log (events/), and the summary (summary.json: a cell per
// world x scenario x condition, its outcome counts and forensics).
//
//   - summary.go: Outcome, RunRecord, Cell (Cell.Add folds a record into its
//     cell), Summary (Worlds, Conditions: its cells' distinct ones);
//   - artifacts.go, meta.go: the Writer a storm appends to as runs finish,
//     every file written whole or atomically;
//   - read.go, load.go: reading artifacts back (LoadStorm rebuilds the
//     summary from runs.jsonl, naming each malformed artifact with its
//     file and line);
//   - tally.go: Tally, the one cell aggregator storm, --resume and
//     forensics DIR fold their run records through;
//   - measured.go: Measured, the runs of a cell that measured something
//     (the denominator of every rate);
//   - resume.go: what an interrupted storm recorded, and the writer that
//     continues it.
//
// What is done with a summary lives in the packages below: table (the
// tables and summary.md), plots, stats (intervals and tests), compare (two
// storms cell by cell), gate (rules a storm must keep) and merge (shards
// into one storm).
package reports
