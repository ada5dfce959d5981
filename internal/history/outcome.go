package history

// Outcome is what became of one run. **contract**
type Outcome string

// The outcomes, in table order.
const (
	Completed Outcome = "completed" // finished with the right output
	Silent    Outcome = "silent"    // finished with a wrong output
	Corrupted Outcome = "corrupted" // CORRUPTED_EVENT_LOG
	Gap       Outcome = "gap"       // density assertion failed
	Hole      Outcome = "hole"      // a load refused an empty slot for good (slot scheme)
	Stuck     Outcome = "stuck"     // no terminal event in time
	Failed    Outcome = "failed"    // another terminal error
	Infra     Outcome = "infra"     // the store was unreachable, or the harness starved the run; never corruption
)

// Outcomes lists every outcome in table order.
func Outcomes() []Outcome {
	return []Outcome{Completed, Silent, Corrupted, Gap, Hole, Stuck, Failed, Infra}
}

// Decided reports whether a run of outcome o is evidence about its cell:
// the run ended with a verdict on its log (completed, corrupted, silent,
// gap, hole). A stuck, failed or infra run decided nothing: it is no
// evidence that the cell is clean, nor that it is corrupted.
func (o Outcome) Decided() bool {
	switch o {
	case Completed, Corrupted, Silent, Gap, Hole:
		return true
	}
	return false
}

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
	Infra:     "the run stopped on an unreachable store (its last error, within 90 s of its end, said so and nothing answered after it), or the harness starved it (the devkit engine's host saturated for most of its life, class starved); never counted as corruption",
}

// Meaning says what the outcome says of a run, in a few words ("" for a
// name that is no outcome).
func (o Outcome) Meaning() string { return meanings[o] }
