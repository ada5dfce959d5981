// Package stormdir owns the storm directory: what a storm writes as it
// runs and every command reads back. One type per file, one reader of
// storm.json, one writer, one casing.
//
//	storm.json      Meta: the config (Config, Shard), the conditions'
//	                knobs, the cells, page sizes, latency windows, the
//	                nemesis's schedule and faults, the servers (Endpoint),
//	                and for a merged storm its shards (MergeInfo)
//	runs.jsonl      one reports.RunRecord a line, appended as runs finish
//	history.jsonl   every recorded operation (history.Op), a line each
//	events/         each run's final log, events/<cell>/<run>.jsonl, in
//	                the store's own event format (eventlog.Event)
//	timelines/      the HTML timelines of explained runs
//	summary.json    reports.Summary; summary.md its tables
//
// Files:
//
//   - meta.go, config.go, shard.go: storm.json's types and ReadMeta, its
//     one reader (strict: a value of the wrong type anywhere is refused);
//   - dir.go: Open, and Dir's readers of runs.jsonl, history.jsonl and
//     events/;
//   - load.go: LoadStorm, a storm read back whole with its summary rebuilt
//     from runs.jsonl (report, compare, gate, merge and fidelity --from),
//     and ReadDocument, the JSON document reader with file:line errors;
//   - read.go: EachLine, ArtifactError, ErrNotStorm;
//   - artifacts.go: the Writer a storm appends to as runs finish, every
//     file written whole or atomically;
//   - resume.go: an interrupted storm read back (ReadResume), checked
//     against the storm to continue (Resume.Check) and reopened
//     (Resume.Reopen);
//   - mergemeta.go: MergeMeta, shards' storm.json made one;
//   - upgrade.go: the artifacts of an older schema read as this build's.
//
// Every key of every artifact is snake_case (schema 2, reports.
// SchemaVersion), as summary.json's always were; schema 1 spelt those of
// storm.json, runs.jsonl and history.jsonl in camelCase and is still read
// by every command (testdata/schema1 is such a storm). The final logs keep
// the events' own format in every schema.
package stormdir
