package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/stormctl/stormctl/internal/engines"
	"github.com/stormctl/stormctl/internal/storm/stormdir"
	"github.com/stormctl/stormctl/internal/tools/jsrepro"
	"github.com/stormctl/stormctl/internal/tools/replay"
	"github.com/stormctl/stormctl/internal/tools/rtshrink"
	"github.com/stormctl/stormctl/internal/tools/shrink"
)

// ShrinkOptions are the shrink command's options.
type ShrinkOptions struct {
	IO    *IOStreams
	Dir   string
	RunID string
	// Out is the directory the minimal case is written to (DIR/shrink
	// when empty).
	Out string
	// Budget bounds the shrinking (0: the engine's default).
	Budget time.Duration
	// Emit is the reproduction's form: "go" for a model run (its default),
	// "node-test" or "vitest" for a devkit run (node-test by default).
	Emit   string
	Format Format
	// Engines are the engines a stored run may name.
	Engines *engines.Registry
}

// NewCmdShrink returns `stormctl shrink`. runF replaces runShrink in tests.
func NewCmdShrink(f *Factory, runF func(context.Context, *ShrinkOptions) error) *cobra.Command {
	opts := &ShrinkOptions{IO: f.IO, Engines: f.Engines}
	cmd := &cobra.Command{
		Use:   "shrink DIR RUN",
		Short: "Shrink a stored corrupted run to a minimal schedule that still raises its divergence",
		Long: `Shrink one corrupted run of a stored storm to a minimal failing schedule, by
delta debugging over its recorded interleaving: which invocations take part,
which events exist, which reads each invocation makes and which events each
read shows. Every candidate is executed (each invocation's writes derived
again from what it read, through the model engine) and checked by a replay of
the invocation that wrote the run's run_failed: it must raise the recorded
error.

It writes the minimal case to --out (DIR/shrink by default) as a schedule in
the text format of explain's fixtures (RUN.txt) and as a Go test beside it
(RUN_test.go, embedding RUN.txt) that fails with the recorded engine error;
copy both into a directory of a stormctl checkout and run go test there. It
prints the minimal case's narrative and its size before and after
(invocations, events, reads). --budget bounds the search: when it runs out
the smallest failing schedule found so far is written, said not minimal.

A run of the devkit engine (the published @workflow/core) is shrunk through
that runtime instead (the replay host, the packages storm.json records): the
invocation that wrote the run's CORRUPTED_EVENT_LOG alone, its pages as one
read of the log it saw, its creates but run_started accepted as a store
would, then the log's events one by one, keeping a candidate only while core
fails the same way (error code, type of the divergent event, the divergence
with its ids masked) and only well-formed logs (a completion keeps the
creation it completes). --emit node-test (the default for such a run) or
--emit vitest writes a directory (--out, DIR/shrink/RUN by default): one
test that runs core's own flow handler against an in-memory World holding
the shrunk log, its data, the workflow code, a package.json pinning the
runtime and a README (install line, how to check a fix, where it goes in a
vercel/workflow checkout). The output names the layer: world (a duplicate
creation: the two creations are in the log), engine (a stale decision), or
harness (a starved run: nothing written).

Exit 0 when a case was written, 1 when the recorded schedule does not
reproduce its divergence, a devkit run's case cannot be served as one log,
or the run is a harness finding (nothing written in each), 2 for a run that cannot be
shrunk (no run_failed written by an invocation, or any run replay refuses)
with one line saying why. Progress goes to stderr.`,
		Example: `  stormctl shrink storms/20261204-162917 wrun_01M90Y6ZC7KTP5BZ5N7XA4B2QM
  stormctl shrink storms/20261204-162917 wrun_01M90Y6Z... --out ./repro/stepstorm
  go test ./repro/stepstorm   # fails with the recorded divergence
  stormctl shrink storms/devkit wrun_01M9680CZQ... --emit node-test --out repro/x
  cd repro/x && npm install && node --test   # fails with core's CORRUPTED_EVENT_LOG`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Dir, opts.RunID = args[0], args[1]
			if opts.Budget < 0 {
				return usage("--budget must not be negative, got %s (0: the engine's default)", opts.Budget)
			}
			if !slices.Contains([]string{"", emitGo, jsrepro.NodeTest, jsrepro.Vitest}, opts.Emit) {
				return usage("--emit %q: want %s, %s or %s", opts.Emit, emitGo, jsrepro.NodeTest, jsrepro.Vitest)
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return runShrink(cmd.Context(), opts)
		},
	}
	cmd.Flags().StringVar(&opts.Out, "out", "", "directory to write the minimal case to (default DIR/shrink)")
	cmd.Flags().DurationVar(&opts.Budget, "budget", 0, fmt.Sprintf("how long the search may take (default %s for a model run, %s through the published runtime); then the smallest failing schedule found is the result", shrink.DefaultBudget, rtshrink.DefaultBudget))
	cmd.Flags().StringVar(&opts.Emit, "emit", "", "the reproduction's form: go (a model run's, its default), node-test (a devkit run's default: node's own runner) or vitest")
	addFormatFlag(cmd, &opts.Format, map[Format]string{FormatTable: "the narrative"})
	return cmd
}

func runShrink(ctx context.Context, opts *ShrinkOptions) error {
	sr, err := loadStoredRun(opts.Dir, opts.RunID)
	if err != nil {
		return err
	}
	rin := sr.ReplayInput()
	if opts.Engines.Traits(rin.Engine).Published {
		return runShrinkRuntime(ctx, opts, sr, rin)
	}
	if opts.Emit != "" && opts.Emit != emitGo {
		return usage("--emit %s: run %s ran on the model, whose reproduction is a Go test (--emit go); a JavaScript test comes from a run of the devkit engine (the published runtime)", opts.Emit, opts.RunID)
	}
	budget := opts.Budget
	if budget == 0 {
		budget = shrink.DefaultBudget
	}
	in := shrink.Input{Input: rin, Scenario: sr.Record.Scenario}
	p := newCountProgress(opts.IO, "shrink "+opts.RunID, "candidates")
	res, err := shrink.Shrink(ctx, in, shrink.Options{Budget: budget, Progress: func(pr shrink.Progress) {
		p.Note(pr.Tests, fmt.Sprintf("%s: %d left", pr.Phase, pr.Left))
	}})
	p.Done()
	switch {
	case errors.Is(err, shrink.ErrUnshrinkable), errors.Is(err, replay.ErrUnreplayable):
		return &UsageError{Err: err}
	case errors.Is(err, shrink.ErrNotReproduced):
		fmt.Fprintf(opts.IO.ErrOut, "stormctl: %s\n", oneLine(err))
		return ErrGateFailed
	case err != nil:
		return err
	}
	out := opts.Out
	if out == "" {
		out = filepath.Join(opts.Dir, "shrink")
	}
	files, err := writeCase(out, opts.Dir, sr.Record.CellKey.String(), res)
	if err != nil {
		return err
	}
	return opts.Format.Print(opts.IO.Out, shrunk{res, files})
}

// emitGo is --emit's value for the model's Go test.
const emitGo = "go"

// writeCase writes the minimal schedule and its Go test into dir and
// returns their paths.
func writeCase(dir, storm, cell string, res shrink.Result) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, &UsageError{Err: fmt.Errorf("--out %s: %w", dir, err)}
	}
	fixture := res.Run + ".txt"
	res.Schedule.Header = []string{
		fmt.Sprintf("shrunk by stormctl shrink from run %s (%s, %s):", res.Run, storm, cell),
		fmt.Sprintf("%d invocations, %d events, %d reads of the recorded %d, %d and %d;", res.After.Invocations, res.After.Events, res.After.Reads,
			res.Before.Invocations, res.Before.Events, res.Before.Reads),
		res.Failing + "'s replay raises: " + res.Error,
	}
	src, err := shrink.GoTest(shrink.Package(filepath.Base(dir)), fixture, storm+", "+cell, res)
	if err != nil {
		return nil, err
	}
	paths := []string{filepath.Join(dir, fixture), filepath.Join(dir, res.Run+"_test.go")}
	if err := stormdir.WriteFile(paths[0], []byte(res.Schedule.Format())); err != nil {
		return nil, err
	}
	if err := stormdir.WriteFile(paths[1], src); err != nil {
		return nil, err
	}
	return paths, nil
}

// shrunk prints a shrink's result.
type shrunk struct {
	r     shrink.Result
	files []string
}

// JSON writes the result with the files written.
func (s shrunk) JSON(w io.Writer) error {
	return writeJSON(w, struct {
		shrink.Result
		Files []string `json:"files"`
	}{s.r, s.files})
}

// Table writes the sizes, the narrative and the files.
func (s shrunk) Table(w io.Writer) error { return s.write(w, "  ") }

// Markdown writes the same, the narrative as a list.
func (s shrunk) Markdown(w io.Writer) error { return s.write(w, "") }

func (s shrunk) write(w io.Writer, indent string) error {
	r := s.r
	var b strings.Builder
	minimal := "minimal"
	if !r.Minimal {
		minimal = "not minimal: the budget ran out"
	}
	fmt.Fprintf(&b, "%s: %d invocations, %d events, %d reads -> %d invocations, %d events, %d reads (%s; %d candidates replayed in %s)\n",
		r.Run, r.Before.Invocations, r.Before.Events, r.Before.Reads, r.After.Invocations, r.After.Events, r.After.Reads,
		minimal, r.Tests, r.Elapsed.Round(100*time.Millisecond))
	b.WriteString(eachLine(indent, r.Narrative))
	b.WriteString(eachLine(indent+"wrote ", s.files))
	_, err := io.WriteString(w, b.String())
	return err
}
