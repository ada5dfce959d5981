// Package history is the ground floor of a storm's run vocabulary: what
// was recorded of a run and the words every layer above uses for it. It
// depends on eventlog alone, so the stores (worlds), the checkers
// (forensics, verdict, explain), the storm directory (stormdir) and the
// runner all speak it without depending on one another.
//
//   - ops.go: Op, one recorded operation of a run (a line of
//     history.jsonl), OpEvent and ReadSummary (what an append wrote and a
//     read saw), Summarize and IDHash;
//   - outcome.go: Outcome, what became of a run, and Outcomes, their
//     table order;
//   - cell.go: CellKey, one cell of the matrix world x scenario x
//     condition, its text and its directory name;
//   - guard.go: GuardCounts, how a legacy guard fared on a run;
//   - stats.go: RunStats, what an engine did for a run.
package history
