package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/stormctl/stormctl/internal/analysis/explain"
	"github.com/stormctl/stormctl/internal/devkit/devkitscen"
	"github.com/stormctl/stormctl/internal/engines/rerun"
	"github.com/stormctl/stormctl/internal/tools/evidence"
	"github.com/stormctl/stormctl/internal/tools/jsrepro"
	"github.com/stormctl/stormctl/internal/tools/replay"
	"github.com/stormctl/stormctl/internal/tools/rtshrink"
)

// Layers a finding is labelled with.
const (
	layerWorld   = "world"
	layerEngine  = "engine"
	layerHarness = "harness"
	layerUnknown = "unknown"
)

// layerOf is the layer a root-cause class points at: a duplicate
// creation is the world's (it stored what it should have refused), a
// decision from a stale or skipped view or a wake order the engine's, a
// starved run the harness's.
func layerOf(class string) string {
	switch class {
	case explain.DuplicateCreate:
		return layerWorld
	case explain.StalePrefix, explain.CursorSkip, explain.WakeOrder:
		return layerEngine
	case explain.Starved:
		return layerHarness
	}
	return layerUnknown
}

// runShrinkRuntime shrinks a devkit run through the published runtime
// that ran it and writes the minimal case as a JavaScript test.
func runShrinkRuntime(ctx context.Context, opts *ShrinkOptions, sr *evidence.Run, in replay.Input) error {
	id := sr.Record.RunID
	if !sr.HasRuntime {
		return &UsageError{Err: &replay.UnreplayableError{RunID: id, Reason: fmt.Sprintf(
			"it ran on the devkit engine, but storm.json records no runtime of its cell %s: which packages ran it is unknown", sr.Record.CellKey)}}
	}
	form := opts.Emit
	if form == "" {
		form = jsrepro.NodeTest
	}
	if !slices.Contains(jsrepro.Forms(), form) {
		return usage("--emit %s: a devkit run's reproduction is a JavaScript test (--emit %s)", form, strings.Join(jsrepro.Forms(), " or "))
	}
	layer := layerOf(sr.Record.Class)
	if layer == layerHarness {
		fmt.Fprintf(opts.IO.ErrOut, "stormctl: run %s is a harness finding (%s: the harness's host was saturated while it ran), no evidence about the runtime or its world: nothing written\n", id, sr.Record.Class)
		return ErrGateFailed
	}
	// Only the failing invocation is served: FailingScript refuses what
	// its record cannot be served as (replay.Servable would ask it of
	// every invocation).
	f, err := replay.FailingScript(in)
	if err != nil {
		return &UsageError{Err: err}
	}
	wf, err := devkitscen.Lookup(sr.Cell.Scenario.Name)
	if err != nil {
		return &UsageError{Err: &replay.UnreplayableError{RunID: id, Reason: err.Error()}}
	}
	rt, err := openReplayRuntime(ctx, opts.IO, opts.Engines, sr)
	if err != nil {
		return err
	}
	defer rt.Close()
	src, ok := rt.(rerun.WorkflowSource)
	if !ok {
		return &UsageError{Err: &replay.UnreplayableError{RunID: id, Reason: "its runtime cannot hand out the workflow code it runs"}}
	}
	budget := opts.Budget
	if budget == 0 {
		budget = rtshrink.DefaultBudget
	}
	p := newCountProgress(opts.IO, "shrink "+id, "replays")
	res, err := rtshrink.Shrink(ctx, rt, f, rtshrink.Options{Budget: budget, Progress: func(pr rtshrink.Progress) {
		p.Note(pr.Tests, fmt.Sprintf("%s: %d left", pr.Phase, pr.Left))
	}})
	p.Done()
	switch {
	case errors.Is(err, rtshrink.ErrNotReproduced):
		fmt.Fprintf(opts.IO.ErrOut, "stormctl: %s; nothing written\n", oneLine(err))
		return ErrGateFailed
	case err != nil:
		return err
	}
	if res.Case == nil {
		if err := opts.Format.Print(opts.IO.Out, rtShrunk{r: res, layer: layer, class: sr.Record.Class, files: []string{}}); err != nil {
			return err
		}
		fmt.Fprintf(opts.IO.ErrOut, "stormctl: run %s's failure needs the pages as the runtime read them, which --emit does not write yet; nothing written\n", id)
		return ErrGateFailed
	}
	code, err := src.WorkflowCode(ctx)
	if err != nil {
		return err
	}
	out := opts.Out
	if out == "" {
		out = filepath.Join(opts.Dir, "shrink", id)
	}
	sources, err := fs.Sub(devkitscen.Sources(), devkitscen.SourceDir)
	if err != nil {
		return err
	}
	shrunkText := fmt.Sprintf("The schedule shrank from %s to %s (%d replays through the runtime in %s).",
		sizeText(res.Before), sizeText(res.After), res.Tests, res.Elapsed.Round(100*time.Millisecond))
	files, err := jsrepro.Write(out, jsrepro.Fixture{
		Form:         form,
		Title:        reproTitle(id, sr.Record.CellKey.String(), layer),
		Source:       fmt.Sprintf("run %s of the storm in %s (cell %s, %s)", id, opts.Dir, sr.Record.CellKey, sr.Record.Outcome),
		Case:         *res.Case,
		Failure:      res.Failure,
		Layer:        layer,
		Class:        sr.Record.Class,
		Evidence:     evidenceLines(*res.Case, res.Failure, f.Writers, f.Views),
		Shrunk:       shrunkText,
		Versions:     sr.Runtime.Versions,
		WorkflowName: wf.ID(),
		WorkflowCode: code,
		Sources:      sources,
	})
	if err != nil {
		return err
	}
	return opts.Format.Print(opts.IO.Out, rtShrunk{r: res, layer: layer, class: sr.Record.Class, files: files, form: form, out: out})
}

// reproTitle names the test by what it asserts: a world finding's log
// holds the World's duplicate, which the runtime must then tolerate.
func reproTitle(id, cell, layer string) string {
	if layer == layerWorld {
		return fmt.Sprintf("%s (%s): its runtime replays the log its failing delivery read, the World's duplicate creation included, without failing the run", id, cell)
	}
	return fmt.Sprintf("%s (%s): its runtime replays the log its failing delivery read without failing the run", id, cell)
}

// sizeText says a schedule's size.
func sizeText(s rtshrink.Size) string {
	return fmt.Sprintf("%d invocations, %d pages, %d events served, %d creates", s.Invocations, s.Pages, s.Events, s.Creates)
}

// logEvent is what the evidence names of an event.
type logEvent struct {
	EventID       string `json:"eventId"`
	EventType     string `json:"eventType"`
	CorrelationID string `json:"correlationId"`
}

// evidenceLines says what in the shrunk log shows the defect: the
// entities it creates twice (with the invocations that wrote them) and
// the event the divergence names.
func evidenceLines(c rtshrink.Case, fail rtshrink.Signature, writers map[string]string, views map[string]replay.View) []string {
	evs := make([]logEvent, len(c.Log))
	for i, raw := range c.Log {
		_ = json.Unmarshal(raw, &evs[i])
	}
	by := func(e logEvent) string {
		if w := writers[e.EventID]; w != "" {
			return " by " + w
		}
		return ""
	}
	var out []string
	first := map[string]int{}
	for i, e := range evs {
		switch e.EventType {
		case "step_created", "wait_created", "hook_created":
		default:
			continue // racing run_started are the runtime's, not a World's uniqueness
		}
		key := e.EventType + " " + e.CorrelationID
		j, dup := first[key]
		if !dup {
			first[key] = i
			continue
		}
		out = append(out, fmt.Sprintf("events %d and %d of the log both are `%s`: `%s`%s and `%s`%s (the World stored a second creation)",
			j+1, i+1, strings.TrimSpace(key), evs[j].EventID, by(evs[j]), e.EventID, by(e)))
	}
	if id := rerun.DivergentEvent(fail.Message); id != "" {
		for i, e := range evs {
			if e.EventID == id {
				out = append(out, fmt.Sprintf("the divergence names event %d of the log, `%s` `%s` (%s)%s", i+1, e.EventType, e.EventID, e.CorrelationID, by(e)))
				if v, ok := views[e.EventID]; ok && v.Last != "" {
					rebuilt := ""
					if !v.Exact {
						rebuilt = " (its pages as stormctl rebuilt them, not exactly: the count or id hash differ)"
					}
					out = append(out, fmt.Sprintf("%s wrote it after reading %d events of the run's log, the last `%s`%s%s", v.Actor, v.Read, v.Last, position(evs, v.Last), rebuilt))
				}
			}
		}
	}
	return out
}

// position says where an event the shrunk log keeps sits in it.
func position(evs []logEvent, id string) string {
	for i, e := range evs {
		if e.EventID == id {
			return fmt.Sprintf(" (event %d of this log)", i+1)
		}
	}
	return " (not in this log)"
}

// rtShrunk prints a shrink through the runtime.
type rtShrunk struct {
	r            rtshrink.Result
	layer, class string
	files        []string
	form, out    string
}

// JSON writes the result with the layer and the files written.
func (s rtShrunk) JSON(w io.Writer) error {
	return writeJSON(w, struct {
		rtshrink.Result
		Layer string   `json:"layer"`
		Class string   `json:"class"`
		Form  string   `json:"form,omitempty"`
		Files []string `json:"files"`
	}{s.r, s.layer, s.class, s.form, s.files})
}

// Table writes the sizes, the phases and the files.
func (s rtShrunk) Table(w io.Writer) error { return s.write(w, "  ") }

// Markdown writes the same.
func (s rtShrunk) Markdown(w io.Writer) error { return s.write(w, "") }

func (s rtShrunk) write(w io.Writer, indent string) error {
	r := s.r
	var b strings.Builder
	minimal := "minimal"
	if !r.Minimal {
		minimal = "not minimal: the budget ran out"
	}
	fmt.Fprintf(&b, "%s (%s, layer %s): %s -> %s (%s; %d replays through the runtime in %s)\n",
		r.Run, s.class, s.layer, sizeText(r.Before), sizeText(r.After), minimal, r.Tests, r.Elapsed.Round(100*time.Millisecond))
	for _, ph := range r.Phases {
		line := fmt.Sprintf("%s%s: %d -> %d", indent, ph.Name, ph.Before, ph.After)
		if ph.Note != "" {
			line += " (" + ph.Note + ")"
		}
		b.WriteString(line + "\n")
	}
	fmt.Fprintf(&b, "%sfails with %s: %s\n", indent, r.Failure.Code, r.Failure.Headline())
	if len(s.files) > 0 {
		fmt.Fprintf(&b, "%swrote %s (%s): cd %s && npm install && %s\n", indent, s.out, s.form, s.out, runLine(s.form))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func runLine(form string) string {
	if form == jsrepro.Vitest {
		return "npx vitest run"
	}
	return "node --test"
}
