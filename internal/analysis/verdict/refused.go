package verdict

import (
	"fmt"
	"strings"

	"github.com/stormctl/stormctl/forensics"
	"github.com/stormctl/stormctl/internal/history"
)

// Refused is the pending judgement of every write a world refused a run
// whose engine runs the published runtime (the devkit engine): its appends
// answered conflict, refused, fenced or duplicate. Each counts as a
// rejection of the run, Unknown and Pending until the storm judges it by
// a counterfactual replay through the published runtime that ran it
// (internal/analysis/counterfactual); Write says what was refused.
func Refused(ops []history.Op) []Judgement {
	var out []Judgement
	for _, op := range ops {
		if !forensics.IsRefusal(op) {
			continue
		}
		j := Judgement{Actor: op.Actor, At: op.End, Verdict: Unknown, Pending: true,
			Reason: fmt.Sprintf("the world refused %s (%s): %s", wrote(op), op.Err, NotJudgedYet)}
		if len(op.Wrote) >= 1 {
			w := op.Wrote[0]
			j.Write = &RefusedWrite{Type: w.Type, CorrelationID: w.CorrelationID, Err: op.Err}
			if len(op.Wrote) == 1 {
				j.Write.Data = w.Payload
			}
		}
		out = append(out, j)
	}
	return out
}

// NotJudgedYet ends the reason of a refusal not judged yet.
const NotJudgedYet = "not judged yet (the storm judges its worlds' refusals once its runs have ended; storm --resume DIR judges those an interrupted storm left)"

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
