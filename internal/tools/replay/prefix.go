package replay

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/stormctl/stormctl/internal/devkit/serialized"
	"github.com/stormctl/stormctl/internal/engine"
	"github.com/stormctl/stormctl/internal/engines/builtinengines"
	"github.com/stormctl/stormctl/internal/engines/rerun"
	"github.com/stormctl/stormctl/internal/eventlog"
	"github.com/stormctl/stormctl/internal/prodlog"
)

// StoredLog is a run's log as a store holds it (a production database),
// to replay prefix by prefix: no history of what each invocation read was
// recorded, only the log, in the order the store lists it.
type StoredLog struct {
	// Log is the run's log as its store holds it (prodlog: its run id,
	// where it was read, the store's name of its workflow, its events in
	// the store's list order).
	prodlog.Log
	// Scenario is the stormctl scenario the workflow's name maps to.
	Scenario string
	// Condition names Knobs: the engine policy the prefixes replay under.
	Condition string
	Knobs     engine.Knobs
	Program   engine.Program
	// Runtime, when set, replays the prefixes through the published
	// runtime (the devkit engine: the events' Package is what it is
	// served) instead of the model (Condition, Knobs, Program unused).
	Runtime rerun.Runtime
}

// PrefixOptions say whom to tell of the progress.
type PrefixOptions struct {
	// Progress, when set, is told after every prefix replayed how many of
	// total are done; called from several goroutines, one call at a time.
	Progress func(done, total int)
}

// PrefixReport is what replaying every prefix of a stored log found.
type PrefixReport struct {
	Run       string `json:"run"`
	Source    string `json:"source"`
	Workflow  string `json:"workflow"`
	Scenario  string `json:"scenario"`
	Condition string `json:"condition,omitempty"`
	// Engine is the engine the prefixes replayed through: "model" or
	// "devkit" (the published runtime).
	Engine string `json:"engine"`
	// Events counts the log's events; Prefixes the prefixes replayed: every
	// length from 1 up to the log's first terminal event (excluded: an
	// invocation that reads it replays nothing) or its end.
	Events   int `json:"events"`
	Prefixes int `json:"prefixes"`
	// Terminal is the log's first terminal event, if it has one, and
	// AfterEnd counts the events listed after it.
	Terminal *EventRef `json:"terminal,omitempty"`
	AfterEnd int       `json:"after_end,omitempty"`
	// Recorded is the error of the log's run_failed, if it holds one.
	Recorded *RecordedFailure `json:"recorded,omitempty"`
	// First is the shortest prefix whose replay diverges; nil when every
	// prefix replays cleanly.
	First *PrefixDivergence `json:"first,omitempty"`
	// Diverging counts the prefixes whose replay diverges; Clean those
	// past First that replay cleanly all the same (a replay that does not
	// see a divergence it saw in a shorter prefix).
	Diverging int `json:"diverging"`
	CleanPast int `json:"clean_past_first,omitempty"`
	// Unchecked is the shortest prefix whose replay consumed an event that
	// disagrees with its call in a way the engine does not check (a step
	// created with other arguments: a silent wrong result), if any.
	Unchecked *PrefixDivergence `json:"unchecked,omitempty"`
	// Failed is the shortest prefix whose replay through the runtime
	// failed the run otherwise than by a divergence (a run_failed of
	// another code, a delivery that errored), if any: the runtime could
	// not replay it, which agrees with nothing.
	Failed *PrefixDivergence `json:"failed,omitempty"`
	// Reproduced says First's error is the recorded run_failed's.
	Reproduced bool `json:"reproduced"`
	// Summary is the report in one line.
	Summary string `json:"summary"`
}

// EventRef names an event of the log: its position (0-based) and identity.
type EventRef struct {
	Index         int           `json:"index"`
	ID            string        `json:"id"`
	Type          eventlog.Type `json:"type"`
	CorrelationID string        `json:"corr,omitempty"`
}

// String is "event 53 (step_created evnt_…, step_…)".
func (r EventRef) String() string {
	s := strings.TrimSpace(string(r.Type) + " " + r.ID)
	if r.CorrelationID != "" {
		s += ", " + r.CorrelationID
	}
	return fmt.Sprintf("event %d (%s)", r.Index+1, s)
}

// RecordedFailure is a log's run_failed: its code and message.
type RecordedFailure struct {
	Event   EventRef `json:"event"`
	Code    string   `json:"code"`
	Message string   `json:"message"`
}

// Corrupted says f is the engine's CORRUPTED_EVENT_LOG: a divergence the
// run recorded, not a failure of its code.
func (f *RecordedFailure) Corrupted() bool { return f != nil && f.Code == engine.CodeCorrupted }

// Explained says the replay agrees with what the log records: the first
// diverging prefix raises the error of the log's CORRUPTED_EVENT_LOG, or
// no prefix diverges and the log records none. Nothing else is: a
// divergence the run did not record, or a recorded one no prefix shows.
func (r PrefixReport) Explained() bool {
	if r.Failed != nil {
		return false
	}
	if r.First != nil {
		return r.Reproduced
	}
	return !r.Recorded.Corrupted() && r.Prefixes > 0
}

// PrefixDivergence is a prefix whose replay diverged: its length, the
// event it ends at, and the engine's error at the event it names.
type PrefixDivergence struct {
	Length int      `json:"length"`
	EndsAt EventRef `json:"ends_at"`
	At     EventRef `json:"at"`
	Kind   string   `json:"kind"`
	Error  string   `json:"error"`
}

// Prefixes replays every prefix of the stored log through the model
// engine (the scenario's program under the condition's ids and wake), or
// through l.Runtime (the published runtime), and reports the first that
// diverges, or that none does. A log that cannot be replayed (no program,
// no events, events without the package's copy for the runtime) returns
// an *UnreplayableError.
func Prefixes(ctx context.Context, l StoredLog, opts PrefixOptions) (PrefixReport, error) {
	rep := PrefixReport{Run: l.RunID, Source: l.Source, Workflow: l.Workflow, Scenario: l.Scenario, Condition: l.Condition, Engine: builtinengines.Engines().Model(), Events: len(l.Events)}
	if l.Runtime != nil {
		rep.Engine, rep.Condition = builtinengines.Engines().Published(), ""
	}
	refuse := func(format string, a ...any) error {
		return &UnreplayableError{RunID: l.RunID, Reason: fmt.Sprintf(format, a...)}
	}
	switch {
	case l.Runtime != nil:
		if err := RuntimeServable(l); err != nil {
			return rep, err
		}
	case l.Program == nil:
		return rep, refuse("scenario %q has no program in this build", l.Scenario)
	case len(l.Events) == 0:
		return rep, refuse("its log holds no event")
	}
	end := len(l.Events)
	for i, e := range l.Events {
		if e.Type.IsTerminal() || e.Type == runCancelled {
			end = i
			rep.Terminal = ref(l.Events, i)
			rep.AfterEnd = len(l.Events) - i - 1
			break
		}
	}
	for i, e := range l.Events {
		if e.Type == eventlog.RunFailed {
			f := engine.Failure(e)
			if l.Runtime != nil {
				f = serialized.RunFailure(packageData(e))
			}
			rep.Recorded = &RecordedFailure{Event: *ref(l.Events, i), Code: f.Code, Message: f.Message}
			break
		}
	}
	rep.Prefixes = end
	outs := make([]prefixOutcome, end+1)
	var (
		mu   sync.Mutex
		done int
	)
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(runtime.GOMAXPROCS(0))
	for n := 1; n <= end; n++ {
		g.Go(func() error {
			if err := gctx.Err(); err != nil {
				return err
			}
			prefix := l.Events[:n:n]
			if l.Runtime != nil {
				o, err := replayPrefixRuntime(gctx, l, n)
				if err != nil {
					return err
				}
				outs[n] = o
			} else {
				o := engine.Replay(l.Program, l.RunID, prefix, l.Knobs.Mode(), latest(prefix))
				outs[n] = prefixOutcome{divergence: orNil(l.Events, n, o.Divergence), unchecked: orNil(l.Events, n, o.Unchecked)}
			}
			mu.Lock()
			done++
			if opts.Progress != nil {
				opts.Progress(done, end)
			}
			mu.Unlock()
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return rep, fmt.Errorf("replay the prefixes of run %s: %w", l.RunID, err)
	}
	for n := 1; n <= end; n++ {
		o := outs[n]
		if o.unchecked != nil && rep.Unchecked == nil {
			rep.Unchecked = o.unchecked
		}
		if o.failed != nil && rep.Failed == nil {
			rep.Failed = o.failed
		}
		switch {
		case o.divergence != nil:
			rep.Diverging++
			if rep.First == nil {
				rep.First = o.divergence
			}
		case rep.First != nil:
			rep.CleanPast++
		}
	}
	rep.Reproduced = rep.First != nil && rep.Recorded.Corrupted() && rep.First.Error == rep.Recorded.Message
	rep.Summary = prefixSummary(rep)
	return rep, nil
}

// prefixOutcome is what replaying one prefix found: its divergence and
// the first event it consumed unchecked (the model's), each nil if none.
type prefixOutcome struct {
	divergence, unchecked, failed *PrefixDivergence
}

// orNil is prefix n's divergence d, nil when d is.
func orNil(events []eventlog.Event, n int, d *engine.DivergenceError) *PrefixDivergence {
	if d == nil {
		return nil
	}
	return divergenceOf(events, n, d)
}

// latest is the latest mint time in log: the clock a replay of it stamps
// new waits with.
func latest(log []eventlog.Event) time.Time {
	var t time.Time
	for _, e := range log {
		if e.MintedAt.After(t) {
			t = e.MintedAt
		}
	}
	return t
}

// ref names event i of events.
func ref(events []eventlog.Event, i int) *EventRef {
	e := events[i]
	return &EventRef{Index: i, ID: e.ID, Type: e.Type, CorrelationID: e.CorrelationID}
}

// divergenceOf is prefix n's divergence d.
func divergenceOf(events []eventlog.Event, n int, d *engine.DivergenceError) *PrefixDivergence {
	pd := &PrefixDivergence{Length: n, EndsAt: *ref(events, n-1), Kind: d.Kind, Error: d.Error()}
	if d.Index >= 0 && d.Index < n {
		pd.At = *ref(events, d.Index)
	}
	return pd
}

// prefixSummary is the report in one line.
func prefixSummary(r PrefixReport) string {
	var b strings.Builder
	if r.First == nil {
		fmt.Fprintf(&b, "every one of the %d prefixes replays cleanly", r.Prefixes)
		switch {
		case r.Recorded.Corrupted():
			fmt.Fprintf(&b, ", yet the log records a run_failed (%s: %s): its divergence is in no prefix of the stored order (the invocation that raised it read another view of the log)", r.Recorded.Code, r.Recorded.Message)
		case r.Recorded != nil:
			fmt.Fprintf(&b, "; the run failed otherwise (%s: %s)", r.Recorded.Code, r.Recorded.Message)
		case r.Terminal == nil:
			b.WriteString(" (the log has no terminal event: the run had not ended)")
		}
	} else {
		f := r.First
		fmt.Fprintf(&b, "the first diverging prefix is %d of %d events, ending at %s: %s", f.Length, r.Events, f.EndsAt, firstLine(f.Error))
		if f.At.Index != f.EndsAt.Index {
			fmt.Fprintf(&b, " (at %s)", f.At)
		}
		switch {
		case r.Reproduced:
			b.WriteString("; the log's run_failed records the same error")
		case r.Recorded != nil:
			fmt.Fprintf(&b, "; the log's run_failed records another error (%s: %s)", r.Recorded.Code, firstLine(r.Recorded.Message))
		default:
			b.WriteString("; the log records no run_failed")
		}
	}
	if r.Unchecked != nil {
		fmt.Fprintf(&b, "; prefix %d consumes an event its call disagrees with, unchecked by the engine: %s", r.Unchecked.Length, r.Unchecked.Error)
	}
	if r.Failed != nil {
		fmt.Fprintf(&b, "; the runtime could not replay prefix %d (%d events, ending at %s): %s", r.Failed.Length, r.Failed.Length, r.Failed.EndsAt, firstLine(r.Failed.Error))
	}
	return b.String()
}
