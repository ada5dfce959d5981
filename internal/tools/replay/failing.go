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
	// Recorded is the run's recorded failure, core's message as the run's
	// record holds it (Input.Detail).
	Recorded string
	// Views says, by event id, what its writer had read of the log before
	// the append that committed it: the decision and the view it came from.
	Views map[string]View
}

// View is what an invocation had read when it wrote an event.
type View struct {
	Actor string `json:"actor"`
	// Read counts the distinct events its reads had shown, Last the last
	// of them (its latest read's last event), "" when it had read none.
	Read int    `json:"read"`
	Last string `json:"last,omitempty"`
	// Exact says every page it read was rebuilt exactly (count and id
	// hash): otherwise the view is stormctl's best rebuild of it.
	Exact bool `json:"exact"`
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
	out := Failing{Invocations: len(invs), Writers: map[string]string{}, Views: map[string]View{}, Recorded: in.Detail}
	for _, inv := range invs {
		seen := map[string]bool{}
		last, exact := "", true
		for _, i := range inv.ops {
			op := in.Ops[i]
			switch {
			case op.Kind == history.OpList && op.Err == "":
				evs, ok := in.Reads(i)
				exact = exact && ok
				for _, e := range evs {
					seen[e.ID] = true
				}
				if len(evs) > 0 {
					last = evs[len(evs)-1].ID
				}
			case op.Kind == history.OpAppend && op.Err == "":
				for _, w := range op.Wrote {
					if _, dup := out.Views[w.ID]; w.ID != "" && !dup {
						out.Views[w.ID] = View{Actor: inv.actor, Read: len(seen), Last: last, Exact: exact}
					}
				}
			}
		}
	}
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
