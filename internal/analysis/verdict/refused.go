package verdict

import (
	"fmt"
	"strings"

	"github.com/stormctl/stormctl/forensics"
	"github.com/stormctl/stormctl/internal/history"
)

// Refused is the judgement of every write a world refused a run whose
// engine runs the published runtime (the devkit engine): its appends
// answered conflict, refused, fenced or duplicate. Each counts as a
// rejection of the run. Its verdict is Unknown, saying what was refused:
// judging it needs a counterfactual replay through the published runtime
// that ran the storm (admit the refused write and see whether the
// runtime's replay consumes something else), which stormctl does not do
// yet; a rule would be a guess.
func Refused(ops []history.Op) []Judgement {
	var out []Judgement
	for _, op := range ops {
		if !forensics.IsRefusal(op) {
			continue
		}
		out = append(out, Judgement{Actor: op.Actor, At: op.End, Verdict: Unknown,
			Reason: fmt.Sprintf("the world refused %s (%s): not judged, no counterfactual replay through the published runtime yet", wrote(op), op.Err)})
	}
	return out
}

// wrote names what an append tried to write: its drafts' types and
// correlation ids.
func wrote(op history.Op) string {
	if len(op.Wrote) == 0 {
		return "an append"
	}
	var parts []string
	for _, w := range op.Wrote {
		s := string(w.Type)
		if w.CorrelationID != "" {
			s += " " + w.CorrelationID
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, ", ")
}
