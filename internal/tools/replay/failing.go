package replay

import (
	"github.com/stormctl/stormctl/internal/engines/rerun"
	"github.com/stormctl/stormctl/internal/history"
)

// Failing is the invocation of a devkit run that wrote its run_failed,
// as the runtime's replay world serves it: what a shrink through the
// runtime starts from.
type Failing struct {
	// Actor names the invocation ("inv-219").
	Actor string
	// Script is its recorded operations as the replay world serves them.
	Script rerun.RuntimeInvocation
	// Invocations counts the run's recorded invocations.
	Invocations int
	// Writers names, by event id, the invocation whose recorded append
	// committed each event of the final log.
	Writers map[string]string
}

// FailingScript is the first invocation of in that wrote a run_failed,
// with its script for the runtime's replay world. A run none of whose
// invocations wrote one, or whose record the world cannot serve, gives an
// *UnreplayableError.
func FailingScript(in Input) (Failing, error) {
	probe := in
	if probe.Runtime == nil {
		probe.Runtime = noRuntime{}
	}
	if err := Check(probe); err != nil {
		return Failing{}, err
	}
	invs := invocations(in.Ops)
	final := finalByID(in.Final)
	out := Failing{Invocations: len(invs), Writers: map[string]string{}}
	for _, op := range in.Ops {
		if op.Kind != history.OpAppend || op.Err != "" {
			continue
		}
		for _, w := range op.Wrote {
			if _, seen := out.Writers[w.ID]; w.ID != "" && !seen {
				out.Writers[w.ID] = op.Actor
			}
		}
	}
	for _, inv := range invs {
		if !wroteFailure(opsOf(in, inv)) {
			continue
		}
		script, _, err := runtimeScript(in, inv, servedReads(in, []invocation{inv}), final)
		if err != nil {
			return Failing{}, err
		}
		out.Actor, out.Script = inv.actor, script
		return out, nil
	}
	return Failing{}, &UnreplayableError{RunID: in.RunID, Reason: "none of its invocations wrote a run_failed: there is no failure to shrink"}
}
