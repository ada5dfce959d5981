package reports

// meanings say what each outcome says of a run, in a few words (storm
// --help lists them from here).
var meanings = map[Outcome]string{
	Completed: "right output",
	Silent:    "finished with a wrong output",
	Corrupted: "CORRUPTED_EVENT_LOG",
	Gap:       "density assertion failed",
	Hole:      "slot scheme: a load refused an empty slot for good",
	Stuck:     "no terminal event before --timeout",
	Failed:    "another terminal error, or an error stormctl does not recognise, with its text",
	Infra:     "the run stopped on an unreachable store: its last error, within 90 s of its end, said so and nothing answered after it; never counted as corruption",
}

// Meaning says what the outcome says of a run, in a few words ("" for a
// name that is no outcome).
func (o Outcome) Meaning() string { return meanings[o] }
