package explain

// descriptions say what each class means, in a sentence (explain --help
// lists them from here).
var descriptions = map[string]string{
	StalePrefix:     "the writer's view lacked events the final log places before its write (they committed after its load began)",
	CursorSkip:      "as stale-prefix, but a missing event had committed before the view's last page, behind a cursor an earlier page (of that load or an earlier one) had passed",
	WakeOrder:       "the view was exactly the final prefix before the write, yet a replay of it with the reference wake derives otherwise (model-engine runs only: explain has no replay of the devkit engine's runtime)",
	DuplicateCreate: "the world created one step, wait or hook twice and the engine's error (or the reference replay) is about it: a world-layer finding, its uniqueness contract broken",
	Hole:            "a load refused an empty slot below a committed one (slot)",
	Density:         "a positioned log's load met a gap (seq, sequence)",
	BlockedBranch:   "a stuck run waits on an operation nobody completes",
	Slow:            "a stuck run that was still working when it timed out, or whose pending operations were none of them due: the timeout cut a run in progress, not a blocked one",
	Starved:         "an infra run, not a stuck one: it did not end while the harness's host process that ran it was saturated (its event loop busy 90% or more for at least half the run's life): a harness finding, no evidence about the runtime or its world",
	Unknown:         "none of these could be shown: the output says what evidence was missing",
}

// Describe says what a class means, in a sentence ("" for a name that is
// no class).
func Describe(class string) string { return descriptions[class] }
