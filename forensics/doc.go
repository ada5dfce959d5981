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
//     log. An invocation's loads walk one cursor: each reads on from where
//     the one before left it (a load starting behind that begins another
//     walk). A cursor skip is an event a walk's cursor had passed, unread,
//     that committed (by its earliest observation) before the walk's last
//     page started, whether that page was the same load's or a later one's:
//     the invocation could have read it and never will. It is the event
//     explain's cursor-skip class rests on, so a run of that class counts
//     at least one;
//   - gaps, duplicates and unpositioned events are density violations of a
//     positioned scheme's final log (ScanPositions, which also finds the
//     slot scheme's holes and seal races for everyone who needs them);
//   - a duplicate creation is a step, wait or hook the final log creates
//     more than once for one correlation id (or two hooks of one token),
//     counted beyond the first (ScanCreations): the world broke its own
//     uniqueness contract, under any scheme;
//   - a mint-to-commit window is how long an event took from its id's
//     minting to its commit (windows.go: Windows, WindowSet, per type).
//
// Checkers are data: AnalyzeRun applies the checks listed in checks(), each
// a pure func(*run, *RunFindings) in its own file. A new checker is a new
// file in this package holding its check, plus in run.go its field in
// RunFindings (with its JSON name), its line in RunFindings.Add and its line
// in checks(). Its field then reaches runs.jsonl's findings, summary.json's
// cells (reports.Cell embeds RunFindings) and stormctl forensics DIR's JSON
// with no other change; a table column for it is reports' table code.
package forensics
