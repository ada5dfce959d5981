package forensics

import "github.com/stormctl/stormctl/internal/history"

// refusalClasses are the error classes of an append its world refused on
// its own: a creation it already holds (conflict), a write to a run that
// has ended (refused), a fence of the store's (fenced), a duplicate.
// A store that could not be reached (unavailable) refused nothing.
var refusalClasses = map[string]bool{"conflict": true, "refused": true, "fenced": true, "duplicate": true}

// IsRefusal says whether op is an append its world refused: what the
// runs' rejections count on the published runtime, and what checkRefused
// counts in any run's history.
func IsRefusal(op history.Op) bool {
	return (op.Kind == history.OpAppend || op.Kind == history.OpAppendFenced) && IsRefusalClass(op.Err)
}

// IsRefusalClass says whether an append's error class (eventlog.Classify)
// is a world's refusal.
func IsRefusalClass(class string) bool { return refusalClasses[class] }

// checkRefused counts the appends of a run's history that its world
// refused, whoever made them and whenever: every refusal history.jsonl
// holds, those of deliveries that outlived the run's record too, which a
// run's rejections (counted when its record is made) can miss.
func checkRefused(r *run, f *RunFindings) {
	for _, op := range r.Ops {
		if IsRefusal(op) {
			f.Refused++
		}
	}
}
