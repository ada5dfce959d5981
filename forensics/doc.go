// Package forensics holds pure checkers over recorded data: a run's final
// log, the commit times the worlds observed, and the history of reads and
// appends. No checker talks to a live store.
//
// Definitions, per run:
//   - key order is the scheme's order: byte order of the event id (ulid) or
//     seq (positioned schemes);
//   - an inverted pair is (i, j) with key_i < key_j but commit_i > commit_j;
//     an event is displaced when its rank by key differs from its rank by
//     commit time;
//   - a load is the pages one invocation read until a page said no more; its
//     view is everything that invocation had read so far. A non-prefix read
//     is a load whose view is not exactly the first k events of the final
//     log; a cursor skip is an event that committed behind a cursor a load
//     had already passed, before the load's last page was read (the load
//     could have seen it and never will);
//   - gaps, duplicates and unpositioned events are density violations of a
//     positioned scheme's final log (ScanPositions, which also finds the
//     slot scheme's holes and seal races for everyone who needs them).
//
// Checkers are data: AnalyzeRun applies the checks listed in checks(), each
// a pure func(*run, *RunFindings) in its own file. A new checker is a new
// file in this package holding its check, plus in run.go its field in
// RunFindings (with its JSON name), its line in RunFindings.Add and its line
// in checks(). Its field then reaches runs.jsonl's findings, summary.json's
// cells (reports.Cell embeds RunFindings) and stormctl forensics DIR's JSON
// with no other change; a table column for it is reports' table code.
package forensics
