package replay

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/stormctl/stormctl/internal/engines/rerun"
	"github.com/stormctl/stormctl/internal/eventlog"
)

// RuntimeServable says why the published runtime cannot replay the
// prefixes of log l (an *UnreplayableError), or nil: every event needs
// the package's own copy, and the run its run_created. It needs no
// runtime, so a caller checks it before starting one.
func RuntimeServable(l StoredLog) error {
	refuse := func(format string, a ...any) error {
		return &UnreplayableError{RunID: l.RunID, Reason: fmt.Sprintf(format, a...)}
	}
	if len(l.Events) == 0 {
		return refuse("its log holds no event")
	}
	for _, e := range l.Events {
		if len(e.Package) == 0 {
			return refuse("event %s was read without the package's own copy of it, which the runtime is served", e.ID)
		}
	}
	if !slices.ContainsFunc(l.Events, func(e eventlog.Event) bool { return e.Type == eventlog.RunCreated }) {
		return refuse("its log holds no run_created: the run entity the runtime replays from cannot be rebuilt")
	}
	return nil
}

// runCancelled is the published runtime's event for a cancelled run
// (cancelRun: the devkit engine cancels a run that did not end by its
// timeout): terminal, like run_completed and run_failed.
const runCancelled eventlog.Type = "run_cancelled"

// packageTime reads the createdAt of a package event.
func packageTime(e eventlog.Event) time.Time {
	var pe struct {
		CreatedAt time.Time `json:"createdAt"`
	}
	_ = json.Unmarshal(e.Package, &pe)
	return pe.CreatedAt
}

// replayPrefixRuntime replays the log's first n events through l.Runtime:
// one invocation delivered at the recovery budget (so a divergence fails
// the run with the runtime's CORRUPTED_EVENT_LOG, as in the log's own
// run_failed), whose run_started is answered with the run (started when
// the log's first run_started says, else when it was created) and whose
// load reads the prefix; what it writes goes to a scratch log, and its
// clock is the prefix's latest createdAt.
func replayPrefixRuntime(ctx context.Context, l StoredLog, n int) (prefixOutcome, error) {
	prefix := l.Events[:n]
	var created json.RawMessage
	var started, clock time.Time
	for _, e := range l.Events {
		if e.Type == eventlog.RunCreated {
			created = e.Package
			break
		}
	}
	// The run started when its first run_started was written (world-local
	// and world-postgres set startedAt so); one that never started, when
	// it was created.
	for _, e := range l.Events {
		if e.Type == runStarted {
			started = packageTime(e)
			break
		}
	}
	if started.IsZero() {
		for _, e := range l.Events {
			if e.Type == eventlog.RunCreated {
				started = packageTime(e)
				break
			}
		}
	}
	for _, e := range prefix {
		if t := packageTime(e); t.After(clock) {
			clock = t
		}
	}
	evs := make([]json.RawMessage, len(prefix))
	for i, e := range prefix {
		evs[i] = e.Package
	}
	res, err := l.Runtime.Replay(ctx, rerun.LogInvocation(l.RunID, created, started, clock, evs))
	if err != nil {
		return prefixOutcome{}, fmt.Errorf("replay the first %d events through the runtime: %w", n, err)
	}
	d := res.Divergence
	if d == nil {
		// The runtime failed the run otherwise (a run input it cannot
		// hydrate, ...), or its delivery errored: nothing was replayed.
		switch {
		case res.Failed != nil:
			return prefixOutcome{failed: &PrefixDivergence{Length: n, EndsAt: *ref(l.Events, n-1), Kind: "run_failed", Error: res.Failed.Code + ": " + res.Failed.Message}}, nil
		case res.Status < 200 || res.Status >= 300:
			return prefixOutcome{failed: &PrefixDivergence{Length: n, EndsAt: *ref(l.Events, n-1), Kind: "delivery", Error: fmt.Sprintf("its delivery answered %d: %s", res.Status, res.Body)}}, nil
		}
		return prefixOutcome{}, nil
	}
	id := d.EventID
	if id == "" {
		id = rerun.DivergentEvent(d.Message)
	}
	kind := "replay_divergence"
	if d.Terminal {
		kind = "corrupted_event_log"
	}
	pd := &PrefixDivergence{Length: n, EndsAt: *ref(l.Events, n-1), Kind: kind, Error: d.Message}
	if i := slices.IndexFunc(prefix, func(e eventlog.Event) bool { return e.ID == id }); i >= 0 {
		pd.At = *ref(l.Events, i)
	}
	return prefixOutcome{divergence: pd}, nil
}
