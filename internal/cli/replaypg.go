package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/stormctl/stormctl/internal/devkit/devkitscen"
	"github.com/stormctl/stormctl/internal/engine/conditions"
	"github.com/stormctl/stormctl/internal/engines"
	"github.com/stormctl/stormctl/internal/eventlog"
	"github.com/stormctl/stormctl/internal/prodlog"
	"github.com/stormctl/stormctl/internal/prodlog/locallog"
	"github.com/stormctl/stormctl/internal/prodlog/pglog"
	"github.com/stormctl/stormctl/internal/tools/replay"
	"github.com/stormctl/stormctl/scenarios"
	"github.com/stormctl/stormctl/worlds/devkitworld"
	"github.com/stormctl/stormctl/worlds/postgres"
)

// runReplayLog replays every prefix of a run's log as a world-postgres
// database or a world-local data directory stores it, through the model
// or the published runtime.
func runReplayLog(ctx context.Context, opts *ReplayOptions) error {
	switch opts.Engine {
	case "", opts.Engines.Model(), opts.Engines.Published():
	default:
		return usage("--engine must be model or devkit, got %q", opts.Engine)
	}
	var cond conditions.Condition
	if !opts.Engines.Traits(opts.Engine).Published {
		var err error
		if cond, err = conditions.Parse(opts.Condition); err != nil {
			return usage("--condition: %v", err)
		}
		if err := opts.Engines.CheckKnobs(cond.Knobs); err != nil {
			return usage("--condition %q: %v", opts.Condition, err)
		}
		if cond.Knobs.Scheme != eventlog.SchemeULID && opts.PGURL != "" {
			return usage("--condition %q: its scheme is %s, but world-postgres orders a log by id (scheme ulid)", opts.Condition, cond.Knobs.Scheme)
		}
	}
	l, err := readStoredLog(ctx, opts)
	if err != nil {
		return err
	}
	eng := opts.Engine
	if eng == "" {
		eng = opts.Engines.Model()
		if _, ok := runtimeWorkflow(l.Workflow); ok {
			eng = opts.Engines.Published() // the published runtime's own run: only it draws its ids
		}
	}
	in := replay.StoredLog{Log: l}
	if opts.Engines.Traits(eng).Published {
		w, ok := runtimeWorkflow(l.Workflow)
		if !ok {
			return usage("run %s is of workflow %q, which is no workflow the published runtime can load here (stormctl's scenarios compiled for the devkit engine are named workflow//./workflows/<scenario>//<name>): replay it with --engine model", l.RunID, l.Workflow)
		}
		in.Scenario = w.Scenario
		if err := replay.RuntimeServable(in); err != nil {
			return &UsageError{Err: err}
		}
		rt, err := openLogRuntime(ctx, opts.IO, opts.Engines, eng, l, w.Scenario)
		if err != nil {
			return err
		}
		defer rt.Close()
		in.Runtime = rt
	} else {
		sc, err := scenarioOf(l.RunID, l.Workflow)
		if err != nil {
			return &UsageError{Err: err}
		}
		in.Scenario, in.Condition, in.Knobs, in.Program = sc.Name, cond.Name, cond.Knobs, sc.Program
	}
	p := newCountProgress(opts.IO, "replay "+opts.RunID, "prefixes")
	rep, err := replay.Prefixes(ctx, in, replay.PrefixOptions{Progress: p.Count})
	p.Done()
	switch {
	case errors.Is(err, replay.ErrUnreplayable):
		return &UsageError{Err: err}
	case errors.Is(err, context.Canceled):
		return ErrInterrupted
	case err != nil:
		return err
	}
	if err := opts.Format.Print(opts.IO.Out, prefixReport{rep}); err != nil {
		return err
	}
	if !rep.Explained() {
		return ErrGateFailed
	}
	return nil
}

// readStoredLog reads run opts.RunID's log from --pg-url or --local-dir.
func readStoredLog(ctx context.Context, opts *ReplayOptions) (prodlog.Log, error) {
	if opts.LocalDir != "" {
		log, err := locallog.Read(opts.LocalDir, opts.RunID)
		if err != nil {
			return prodlog.Log{}, &UsageError{Err: err}
		}
		return log, nil
	}
	if err := postgres.ValidURL("--pg-url", opts.PGURL); err != nil {
		return prodlog.Log{}, &UsageError{Err: err}
	}
	log, err := pglog.Read(ctx, pglog.Options{URL: opts.PGURL, Schema: opts.Schema, RunID: opts.RunID})
	switch {
	case errors.Is(err, context.Canceled):
		return prodlog.Log{}, ErrInterrupted
	case errors.Is(err, eventlog.ErrUnavailable):
		return prodlog.Log{}, &InfraError{Err: fmt.Errorf("%w (check --pg-url: host, port, user, password and database)", err)}
	case err != nil:
		return prodlog.Log{}, &UsageError{Err: err}
	}
	return log, nil
}

// runtimeWorkflow is the stormctl scenario workflow, compiled for the
// devkit engine, that a stored run's workflow name is.
func runtimeWorkflow(name string) (devkitscen.Workflow, bool) {
	for _, w := range devkitscen.Workflows() {
		if w.ID() == name {
			return w, true
		}
	}
	return devkitscen.Workflow{}, false
}

// openLogRuntime opens the runtime of the engine eng that replays a
// production log (its plug-in's LogRuntime: the packages it pins for the
// log's world and contract), installing them the first time.
func openLogRuntime(ctx context.Context, io *IOStreams, engs *engines.Registry, eng string, l prodlog.Log, scenario string) (engines.Rerun, error) {
	p, err := engs.Get(eng)
	if err != nil {
		return nil, &UsageError{Err: fmt.Errorf("--engine: %w", err)}
	}
	rr, ok := p.(engines.Rerunner)
	if !ok {
		return nil, usage("--engine %s has no runtime of its own to replay a production log through", eng)
	}
	r, err := rr.Rerunner(ctx, rr.LogRuntime(l), l.World, scenario, io.ErrOut)
	if errors.Is(err, engines.ErrCannotRerun) {
		return nil, &UsageError{Err: err}
	}
	return r, err
}

// scenarioOf maps a stored run's workflow name to the stormctl scenario
// whose code replays it through the model, or says why none does.
func scenarioOf(runID, workflow string) (scenarios.Scenario, error) {
	name, ok := devkitworld.ScenarioOf(workflow)
	if ok {
		sc, err := scenarios.Lookup(name)
		if err != nil {
			return sc, fmt.Errorf("run %s is of workflow %q: %w", runID, workflow, err)
		}
		return sc, nil
	}
	switch {
	case workflow == "":
		return scenarios.Scenario{}, fmt.Errorf("run %s has events but no run record: its workflow is unknown", runID)
	case workflow == devkitworld.WorkflowName(""):
		return scenarios.Scenario{}, fmt.Errorf("run %s names its workflow %q, which names no scenario (stormctl writes stormctl/<scenario>)", runID, workflow)
	}
	if w, ok := runtimeWorkflow(workflow); ok {
		return scenarios.Scenario{}, fmt.Errorf("run %s is of workflow %s, stormctl's %s as the published runtime ran it: its correlation ids and payloads are @workflow/core's, which the model does not draw; replay it with --engine devkit (the default for it)",
			runID, workflow, w.Scenario)
	}
	return scenarios.Scenario{}, fmt.Errorf("run %s is of workflow %q, which is no stormctl scenario's (stormctl's own runs are named stormctl/<scenario>): there is no code to replay it with", runID, workflow)
}

// prefixReport prints a production log's prefix replay.
type prefixReport struct{ r replay.PrefixReport }

// JSON writes the whole report.
func (p prefixReport) JSON(w io.Writer) error { return writeJSON(w, p.r) }

// Table writes the report's lines.
func (p prefixReport) Table(w io.Writer) error { return p.write(w, "") }

// Markdown writes the same as a list.
func (p prefixReport) Markdown(w io.Writer) error { return p.write(w, "- ") }

func (p prefixReport) write(w io.Writer, bullet string) error {
	r := p.r
	var b strings.Builder
	how := "the published runtime" // which runs no condition of ours
	if r.Condition != "" {
		how = "condition " + r.Condition
	}
	fmt.Fprintf(&b, "%s (workflow %s: scenario %s, %s; %s): %s\n", r.Run, r.Workflow, r.Scenario, how, r.Source, r.Summary)
	line := func(format string, a ...any) { fmt.Fprintf(&b, bullet+format+"\n", a...) }
	end := "no terminal event"
	if r.Terminal != nil {
		end = "ends at " + r.Terminal.String()
		if r.AfterEnd > 0 {
			end += fmt.Sprintf(", %d listed after it", r.AfterEnd)
		}
	}
	line("log: %d events in the package's list order (by id), %s; %d prefixes replayed through the %s engine, %d diverge", r.Events, end, r.Prefixes, r.Engine, r.Diverging)
	if r.Recorded != nil {
		line("recorded: %s at %s: %s", r.Recorded.Code, r.Recorded.Event, firstLine(r.Recorded.Message))
	}
	if f := r.First; f != nil {
		line("first diverging prefix: %d events, ending at %s", f.Length, f.EndsAt)
		line("engine error (%s, at %s): %s", f.Kind, f.At, firstLine(f.Error))
		if r.CleanPast > 0 {
			line("note: %d longer prefixes replay cleanly all the same", r.CleanPast)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// firstLine is s's first line (the published runtime's messages end with
// "Learn more" lines; the JSON report keeps them).
func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	return s
}
