package forensics

import "github.com/stormctl/stormctl/internal/eventlog"

// checkEnds counts the terminal events (run_completed, run_failed) a run's
// final log holds beyond its first: the world accepted the end of a run
// that had already ended. A run ends once; a world that answers a second
// terminal event with a conflict (as world-local 4.4.1 does when it sees
// the run ended) but accepts one written in the same instant breaks that
// under concurrent deliveries: a world-layer finding, whoever wrote them.
func checkEnds(r *run, f *RunFindings) {
	f.DuplicateEnds = ExtraEnds(r.Final)
}

// ExtraEnds is the count of terminal events in a run's log beyond the
// first (0 for a log with at most one).
func ExtraEnds(evs []eventlog.Event) int {
	n := 0
	for _, e := range evs {
		if e.Type.IsTerminal() {
			n++
		}
	}
	return max(n-1, 0)
}
