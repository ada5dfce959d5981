// Package storm runs a storm: the matrix world x scenario x condition, a
// number of workflow runs per cell, each replayed by many overlapping
// invocations against a real store.
//
// A storm goes from flags to artifacts in three steps:
//
//   - stormdir.Config is the plain configuration the flags fill (storm.json
//     keeps it); NewPlan (config.go) turns it, defaulted, into a Plan (the
//     cells, the conditions' knobs, each world's page size and runs in
//     flight) before any store is touched. Conditions are named presets
//     with /key=value overrides (package conditions).
//   - Run (runner.go) opens one world and one engine per cell (each
//     condition's engine, EngineOf, opened through its plug-in of the
//     plan's engines.Registry: the seam is package engines), runs the cells' runs
//     interleaved under one bound of runs in flight, gathers what each run
//     left (worlds.Collect) and hands it to the post-run pipeline
//     (pipeline.Process: outcome, findings, verdicts, class), and appends
//     the records to the storm directory as runs finish (package
//     stormdir). With the nemesis on, faults are played against the
//     stores while it runs (nemesis.go).
//   - A stored storm is continued (resume.go: --resume DIR, read back by
//     stormdir.ReadResume).
//
// No code path injects, samples or hard-codes an outcome: every outcome is
// read off what the real store and the engine model did.
package storm
