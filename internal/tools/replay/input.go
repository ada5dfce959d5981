package replay

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/stormctl/stormctl/internal/engine"
	"github.com/stormctl/stormctl/internal/engines/builtinengines"
	"github.com/stormctl/stormctl/internal/engines/rerun"
	"github.com/stormctl/stormctl/internal/eventlog"
	"github.com/stormctl/stormctl/internal/history"
)

// Input is one recorded run to replay: what it was, what its invocations
// read and wrote, and how to run its program again.
type Input struct {
	RunID string
	// Cell names the run's cell ("world/scenario/condition").
	Cell    string
	Outcome history.Outcome
	// Detail is the run's recorded engine error (runs.jsonl's detail).
	Detail string
	// Engine is the engine that ran it: "" or the model for the
	// model, whose invocations are replayed through the model, or
	// the published runtime, whose invocations are replayed through rerun.Runtime.
	Engine string
	// Runtime re-executes a devkit run's invocations through the
	// published runtime the storm ran (nil for the model's runs).
	Runtime rerun.Runtime
	// Knobs are the run's condition's: the replay's scheme and policy.
	Knobs engine.Knobs
	// Program is the run's scenario's workflow program.
	Program engine.Program
	// Ops is the run's recorded history, in recorded order.
	Ops []history.Op
	// Final is the run's final log: the payloads of what was written.
	Final []eventlog.Event
	// Reads answers list operation Ops[i] with the events it returned, in
	// the scheme's order, and whether they are exactly those (count and id
	// hash): explain.Pages rebuilds them for a stored run.
	Reads func(i int) ([]eventlog.Event, bool)
	// Divergences is the run's recorded count of diverged replays
	// (runs.jsonl's stats), which the report compares with the replay's.
	Divergences int64
	// DivergencesUnknown says the run's counts were not recorded (a
	// devkit run whose host could not say them: Divergences is then no
	// count at all).
	DivergencesUnknown bool
}

// ErrUnreplayable matches every *UnreplayableError.
var ErrUnreplayable = errors.New("run cannot be replayed")

// UnreplayableError says why a run cannot be replayed.
type UnreplayableError struct {
	RunID  string
	Reason string
}

func (e *UnreplayableError) Error() string {
	return fmt.Sprintf("run %s cannot be replayed: %s", e.RunID, e.Reason)
}

// Is makes errors.Is(err, ErrUnreplayable) true.
func (e *UnreplayableError) Is(target error) bool { return target == ErrUnreplayable }

// invocation is one recorded invocation: its actor, its operations
// (indexes into Input.Ops), in order, and the message its delivery
// carried (a deliver op's: the devkit engine's; nil when none was
// recorded), which is no operation of the world's.
type invocation struct {
	actor    string
	ops      []int
	delivery *history.Delivery
}

// invocations groups the run's recorded operations by invocation, in the
// order each invocation first appears.
func invocations(ops []history.Op) []invocation {
	var out []invocation
	at := map[string]int{}
	for i, op := range ops {
		if !engine.IsInvocation(op.Actor) {
			continue
		}
		j, ok := at[op.Actor]
		if !ok {
			j = len(out)
			at[op.Actor] = j
			out = append(out, invocation{actor: op.Actor})
		}
		if op.Kind == history.OpDeliver {
			out[j].delivery = op.Delivery
			continue
		}
		out[j].ops = append(out[j].ops, i)
	}
	// An actor with a delivery and no operation made no call of the
	// world's: no invocation to replay.
	return slices.DeleteFunc(out, func(inv invocation) bool { return len(inv.ops) == 0 })
}

// Check says why in cannot be replayed (an *UnreplayableError), or nil:
// what Run refuses before it replays anything.
func Check(in Input) error {
	refuse := func(format string, a ...any) error {
		return &UnreplayableError{RunID: in.RunID, Reason: fmt.Sprintf(format, a...)}
	}
	switch {
	case builtinengines.Traits(in.Engine).Published && in.Runtime == nil:
		return refuse("it ran on the devkit engine, whose invocations replay through the published runtime, and none was opened")
	case in.Engine != "" && !builtinengines.Traits(in.Engine).Model && !builtinengines.Traits(in.Engine).Published:
		return refuse("it ran on the %s engine, which replay does not know", in.Engine)
	case !builtinengines.Traits(in.Engine).Published && in.Program == nil:
		return refuse("its scenario has no program in this build")
	case len(in.Ops) == 0:
		return refuse("history.jsonl records no operation of it")
	case in.Reads == nil:
		return refuse("no reads to serve")
	}
	invs := invocations(in.Ops)
	reads := slices.ContainsFunc(invs, func(inv invocation) bool {
		return slices.ContainsFunc(inv.ops, func(i int) bool { return in.Ops[i].Kind == history.OpList })
	})
	if !reads {
		return refuse("no invocation of it read the log in history.jsonl: there are no reads to serve")
	}
	if in.Knobs.Policy.ParallelWrites() {
		return refuse("its suspensions issued their appends concurrently (writes=%s): the order they reached the store is the scheduler's, and a replay serves an invocation's appends in the recorded order only", in.Knobs.Policy.Writes)
	}
	if in.Knobs.Policy.Sealing() && slices.ContainsFunc(in.Ops, func(op history.Op) bool { return op.Err == "hole" || op.Kind == history.OpSeal }) {
		return refuse("its invocations waited on holes to seal them (scheme %s, seal %s): those waits run on the wall clock, which a replay does not serve", in.Knobs.Scheme, in.Knobs.Policy.Seal)
	}
	return nil
}

// Servable says why the devkit run in cannot be replayed through the
// published runtime (an *UnreplayableError), or nil: Check's refusals,
// and a record the runtime's replay world cannot serve (an event of the
// final log without the package's own copy, a startedAt not recorded, the
// events of one batch create recorded apart). It needs no runtime, so a
// caller checks it before starting one.
func Servable(in Input) error {
	probe := in
	if probe.Runtime == nil {
		probe.Runtime = noRuntime{}
	}
	if err := Check(probe); err != nil {
		return err
	}
	invs := invocations(in.Ops)
	final := finalByID(in.Final)
	reads := servedReads(in, invs)
	for _, inv := range invs {
		if _, _, err := runtimeScript(in, inv, reads, final); err != nil {
			return err
		}
	}
	return nil
}

// noRuntime stands in for a runtime in Servable's Check.
type noRuntime struct{}

func (noRuntime) Replay(context.Context, rerun.RuntimeInvocation) (rerun.RuntimeResult, error) {
	return rerun.RuntimeResult{}, errors.New("no runtime")
}
