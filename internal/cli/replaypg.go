package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/stormctl/stormctl/conditions"
	"github.com/stormctl/stormctl/eventlog"
	"github.com/stormctl/stormctl/internal/redact"
	"github.com/stormctl/stormctl/pglog"
	"github.com/stormctl/stormctl/replay"
	"github.com/stormctl/stormctl/scenarios"
	devkitscen "github.com/stormctl/stormctl/scenarios/devkit"
	"github.com/stormctl/stormctl/worlds/devkit"
	"github.com/stormctl/stormctl/worlds/postgres"
)

// runReplayPG replays every prefix of a run's log as a world-postgres
// database stores it.
func runReplayPG(ctx context.Context, opts *ReplayOptions) error {
	if err := postgres.ValidURL("--pg-url", opts.PGURL); err != nil {
		return &UsageError{Err: err}
	}
	cond, err := conditions.Parse(opts.Condition)
	if err != nil {
		return usage("--condition: %v", err)
	}
	if cond.Knobs.Scheme != eventlog.SchemeULID {
		return usage("--condition %q: its scheme is %s, but world-postgres orders a log by id (scheme ulid)", opts.Condition, cond.Knobs.Scheme)
	}
	log, err := pglog.Read(ctx, pglog.Options{URL: opts.PGURL, Schema: opts.Schema, RunID: opts.RunID})
	switch {
	case errors.Is(err, context.Canceled):
		return ErrInterrupted
	case errors.Is(err, eventlog.ErrUnavailable):
		return &InfraError{Err: fmt.Errorf("%w (check --pg-url: host, port, user, password and database)", err)}
	case err != nil:
		return &UsageError{Err: err}
	}
	sc, err := scenarioOf(log)
	if err != nil {
		return &UsageError{Err: err}
	}
	in := replay.StoredLog{RunID: log.RunID, Source: redact.Server(opts.PGURL), Workflow: log.Workflow, Scenario: sc.Name,
		Condition: cond.Name, Knobs: cond.Knobs, Program: sc.Program, Events: log.Events}
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

// scenarioOf maps a stored run's workflow name to the stormctl scenario
// whose code replays it, or says why none does.
func scenarioOf(l pglog.Log) (scenarios.Scenario, error) {
	name, ok := devkit.ScenarioOf(l.Workflow)
	if ok {
		sc, err := scenarios.Lookup(name)
		if err != nil {
			return sc, fmt.Errorf("run %s is of workflow %q: %w", l.RunID, l.Workflow, err)
		}
		return sc, nil
	}
	switch {
	case l.Workflow == "":
		return scenarios.Scenario{}, fmt.Errorf("run %s has events but no workflow_runs row: its workflow is unknown", l.RunID)
	case l.Workflow == devkit.WorkflowName(""):
		return scenarios.Scenario{}, fmt.Errorf("run %s names its workflow %q, which names no scenario (stormctl writes stormctl/<scenario>)", l.RunID, l.Workflow)
	}
	for _, w := range devkitscen.Workflows() {
		if w.ID() == l.Workflow {
			return scenarios.Scenario{}, fmt.Errorf("run %s is of workflow %s, stormctl's %s as the published runtime ran it: its correlation ids and payloads are @workflow/core's, which the model's replay does not draw; replay re-executes runs of the model engine only, for now",
				l.RunID, l.Workflow, w.Scenario)
		}
	}
	return scenarios.Scenario{}, fmt.Errorf("run %s is of workflow %q, which is no stormctl scenario's (stormctl's own runs are named stormctl/<scenario>): there is no code to replay it with", l.RunID, l.Workflow)
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
	fmt.Fprintf(&b, "%s (workflow %s: scenario %s, condition %s; %s): %s\n", r.Run, r.Workflow, r.Scenario, r.Condition, r.Source, r.Summary)
	line := func(format string, a ...any) { fmt.Fprintf(&b, bullet+format+"\n", a...) }
	end := "no terminal event"
	if r.Terminal != nil {
		end = "ends at " + r.Terminal.String()
		if r.AfterEnd > 0 {
			end += fmt.Sprintf(", %d listed after it", r.AfterEnd)
		}
	}
	line("log: %d events in the package's list order (by id), %s; %d prefixes replayed, %d diverge", r.Events, end, r.Prefixes, r.Diverging)
	if r.Recorded != nil {
		line("recorded: %s at %s: %s", r.Recorded.Code, r.Recorded.Event, r.Recorded.Message)
	}
	if f := r.First; f != nil {
		line("first diverging prefix: %d events, ending at %s", f.Length, f.EndsAt)
		line("engine error (%s, at %s): %s", f.Kind, f.At, f.Error)
		if r.CleanPast > 0 {
			line("note: %d longer prefixes replay cleanly all the same", r.CleanPast)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}
