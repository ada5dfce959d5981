// Package pipeline turns what a run left behind into its record: the one
// post-run pipeline, which the storm runs on every run as it ends and
// stormctl forensics and explain run again on stored runs.
//
//	Cell + Run ──Process──▶ Result
//	  outcome   decide (outcome.go): the first terminal event of the final
//	            log, the ledger's check of a completed run's output, the
//	            engine's evidence for a run without one (stuck or infra)
//	  findings  forensics.AnalyzeRun over the history and the final log
//	  verdicts  verdict.Judge: a reference replay per rejection
//	  class     explain.Classify, with the explanation a timeline is drawn
//	            from (Explained)
//
// A Run is engine-agnostic: a run id, its times, its recorded history
// (history.Op), what the world held of it at the end (worlds.Collected:
// final log, commit times, guard counts), the engine's RunStats and start
// and driver errors, and the nemesis faults over it. Any engine that
// produces those, the model today and the real runtime next, goes through
// this one pipeline. The only engine code it calls is a checker's
// reference: verdicts and explanations replay logs through the model's
// program.
//
// What the storm keeps of a result (the timelines it writes per cell and
// class, its tally, its artifacts) is the storm's; Process writes nothing.
package pipeline
