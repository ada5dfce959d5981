package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/stormctl/stormctl/internal/engines"
	"github.com/stormctl/stormctl/internal/prodlog"
	"github.com/stormctl/stormctl/internal/tools/replay"
	"github.com/stormctl/stormctl/reports/table"
)

// maxRepeat bounds replay --repeat.
const maxRepeat = 10000

// ReplayOptions are the replay command's options.
type ReplayOptions struct {
	// Engines are the engines --engine and a stored run may name.
	Engines *engines.Registry
	IO      *IOStreams
	Dir     string
	RunID   string
	Repeat  int
	Format  Format
	// PGURL, Schema and Condition are the production-log mode's: a
	// world-postgres database, its schema, and the condition whose engine
	// policy the prefixes replay under. RunID is then --run's.
	PGURL     string
	Schema    string
	Condition string
	// LocalDir is the production-log mode's other source: a world-local
	// data directory. Engine is the engine its prefixes replay through:
	// "model", "devkit" (the published runtime), or "" for the run's own.
	LocalDir string
	Engine   string
}

// NewCmdReplay returns `stormctl replay`. runF replaces runReplay in tests.
func NewCmdReplay(f *Factory, runF func(context.Context, *ReplayOptions) error) *cobra.Command {
	opts := &ReplayOptions{IO: f.IO, Engines: f.Engines}
	cmd := &cobra.Command{
		Use:   "replay DIR RUN | --pg-url URL --run ID | --local-dir DIR --run ID",
		Short: "Re-execute a stored run's invocations from the pages they read, or every prefix of a production log, and say where it diverges",
		Long: `Replay one run of a stored storm deterministically: every invocation of the run
is re-executed through the engine that ran it (the model, or for a devkit run
the published @workflow/core the storm ran, its channel and versions as
storm.json records them, installed the first time) against a read-only world
that answers each of its events.list calls with exactly the page it read
(rebuilt from history.jsonl and the final log, checked against the recorded
count and id hash), answers its writes as the store answered them (the ids the
store minted) and takes them into a scratch log. Each replay is compared with
the record, operation by operation: the same reads at the same cursors, the
same writes (type, correlation id, payload), the same run_failed (for a devkit
run, core's own CORRUPTED_EVENT_LOG and its message).

--repeat N replays every invocation N times and says, per invocation, whether
it did again what it recorded every time, sometimes or never; for the
invocation that wrote the run's run_failed that is the recorded divergence
(the same error at the same event). An invocation whose replays differ from
one another read the same pages every time: its nondeterminism is inside the
engine, not in the log, and the output names it and how its replays varied.

Exit 0 when the recorded divergence reproduced every time (or the run wrote no
run_failed), 1 when it did not, 2 for a run that cannot be replayed (no history
recorded, reads a replay cannot serve, a devkit run recorded before stormctl
kept the package's events) with one line saying why, 3 without node or npm for
a devkit run. Progress goes to stderr.

With --pg-url and --run it replays a production log instead: run ID's events as
a database written by the published @workflow/world-postgres stores them
(<schema>.workflow_events, eventData decoded from its CBOR, read in a READ ONLY
transaction), in the package's own list order (by id). The run's workflow name
(workflow_runs.name) maps it to a stormctl scenario: stormctl's model names its
runs stormctl/<scenario>; any other workflow is refused. Every prefix of the
log an invocation could have read, from the first event up to the run's
terminal event, is replayed through the model engine (the scenario's code,
under --condition's ids and wake), and the first prefix that diverges is
reported: its length, the event it ends at, and the engine's error, compared
with the log's own run_failed.

--local-dir DIR reads the log from a data directory of the published
@workflow/world-local instead (DIR/events/<run>-<event>.json, DIR/runs/<run>.json).
--engine devkit replays the prefixes through the published runtime (the stable
channel's @workflow/core; the 5.0 betas' for a world-local log of slot ids):
each prefix is one invocation at the recovery budget whose load reads it, so a
divergence is core's own CORRUPTED_EVENT_LOG. It is the default for a run of a
stormctl scenario compiled for the devkit engine (workflow//./workflows/...),
which only the runtime can replay; --engine model for stormctl/<scenario> runs. Exit 0 when the replay agrees with the log (the
first diverging prefix raises the error of its CORRUPTED_EVENT_LOG, or no
prefix diverges and none is recorded), 1 when it does not (a divergence the
run did not record, or a recorded one no prefix shows), 2 for a missing run,
table or unknown workflow, 3 for a database that does not answer.`,
		Example: `  stormctl replay storms/20261204-162917 wrun_01M90Y6ZC7KTP5BZ5N7XA4B2QM
  stormctl replay storms/20261204-162917 wrun_01M90Y6Z... --repeat 10
  stormctl replay storms/20261204-162917 wrun_01M90Y6Z... --format json | jq '.invocations[] | select(.failed)'
  stormctl replay --pg-url postgres://app@db:5432/app --run wrun_01M916WYJGPSVFEJ4SPQD9S0FX
  stormctl replay --local-dir .workflow-data --run wrun_01M92J0PZ7R666XJXTJZ7V1YS8 --engine devkit`,
		Args: func(cmd *cobra.Command, args []string) error {
			if src := logSource(cmd); src != "" {
				if len(args) > 0 {
					return usage("--%s replays a production log: give no storm directory or run argument (--run names the run)", src)
				}
				return nil
			}
			return cobra.ExactArgs(2)(cmd, args)
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if opts.Repeat < 1 || opts.Repeat > maxRepeat {
				return usage("--repeat must be in [1, %d], got %d", maxRepeat, opts.Repeat)
			}
			src := logSource(cmd)
			if src == "" {
				for _, f := range []string{"run", "schema", "condition", "engine"} {
					if cmd.Flags().Changed(f) {
						return usage("--%s is for a production log: give --pg-url or --local-dir too (a storm directory's run is its second argument and replays through the engine that ran it)", f)
					}
				}
				opts.Dir, opts.RunID = args[0], args[1]
				if runF != nil {
					return runF(cmd.Context(), opts)
				}
				return runReplay(cmd.Context(), opts)
			}
			switch {
			case cmd.Flags().Changed("pg-url") && cmd.Flags().Changed("local-dir"):
				return usage("--pg-url and --local-dir are two sources of a production log: give one")
			case cmd.Flags().Changed("repeat"):
				return usage("--repeat replays a storm directory's invocations; --%s replays every prefix of the stored log once (the model's engine and ordered wakes are deterministic)", src)
			case opts.RunID == "":
				return usage("--%s needs --run ID: the run whose log to replay", src)
			case opts.Engine != "" && !opts.Engines.Traits(opts.Engine).Model && !opts.Engines.Traits(opts.Engine).Published:
				return usage("--engine must be model or devkit, got %q", opts.Engine)
			case opts.Engines.Traits(opts.Engine).Published && cmd.Flags().Changed("condition"):
				return usage("--condition is the model's engine policy; --engine devkit replays with the published runtime's own")
			case src == "local-dir" && cmd.Flags().Changed("schema"):
				return usage("--schema is world-postgres's; --local-dir reads a world-local data directory")
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return runReplayLog(cmd.Context(), opts)
		},
	}
	cmd.Flags().IntVar(&opts.Repeat, "repeat", 1, "replay every invocation this many times")
	cmd.Flags().StringVar(&opts.PGURL, "pg-url", "", "replay a production log from "+prodlog.PgURLHelp)
	cmd.Flags().StringVar(&opts.RunID, "run", "", "with --pg-url or --local-dir: the run whose log to replay")
	cmd.Flags().StringVar(&opts.Schema, "schema", "workflow", "with --pg-url: schema of workflow_events and workflow_runs")
	cmd.Flags().StringVar(&opts.Condition, "condition", "main", "with --pg-url or --local-dir and the model engine: the condition whose engine policy (ids, wake) the prefixes replay under: the one the run ran")
	cmd.Flags().StringVar(&opts.LocalDir, "local-dir", "", "replay a production log: a data directory of the published @workflow/world-local (read-only)")
	cmd.Flags().StringVar(&opts.Engine, "engine", "", "with --pg-url or --local-dir: the engine the prefixes replay through, model or devkit (the published runtime); default: devkit for a run of a scenario compiled for the devkit engine, else model")
	addFormatFlag(cmd, &opts.Format, nil)
	return cmd
}

// logSource names the production-log flag given ("pg-url", "local-dir"),
// or "" for a storm directory's run.
func logSource(cmd *cobra.Command) string {
	for _, f := range []string{"pg-url", "local-dir"} {
		if cmd.Flags().Changed(f) {
			return f
		}
	}
	return ""
}

func runReplay(ctx context.Context, opts *ReplayOptions) error {
	sr, err := loadStoredRun(opts.Dir, opts.RunID)
	if err != nil {
		return err
	}
	in := sr.ReplayInput()
	if opts.Engines.Traits(in.Engine).Published {
		// Refuse what the runtime cannot be served before starting it.
		if !sr.HasRuntime {
			return &UsageError{Err: &replay.UnreplayableError{RunID: sr.Record.RunID, Reason: fmt.Sprintf(
				"it ran on the devkit engine, but storm.json records no runtime of its cell %s: which packages ran it is unknown", sr.Record.CellKey)}}
		}
		if err := replay.Servable(in); err != nil {
			return &UsageError{Err: err}
		}
		rt, err := openReplayRuntime(ctx, opts.IO, opts.Engines, sr)
		if err != nil {
			return err
		}
		defer rt.Close()
		in.Runtime = rt
	}
	p := newCountProgress(opts.IO, "replay "+opts.RunID, "replays")
	rep, err := replay.Run(ctx, in, replay.Options{Repeat: opts.Repeat, Progress: p.Count})
	p.Done()
	switch {
	case errors.Is(err, replay.ErrUnreplayable):
		return &UsageError{Err: err}
	case err != nil:
		return err
	}
	if err := opts.Format.Print(opts.IO.Out, replayReport{rep}); err != nil {
		return err
	}
	if rep.Recorded != nil && rep.Verdict != replay.Every {
		return ErrGateFailed
	}
	if rep.Recorded == nil && !replayedExactly(rep) {
		return ErrGateFailed
	}
	return nil
}

// replayedExactly says a run that wrote no run_failed replayed as it was
// recorded: every invocation did again what it recorded every time (or
// was cut where its record ends), and as many replays diverged as the
// run recorded. Nothing to reproduce is not a pass by itself.
func replayedExactly(rep replay.Report) bool {
	if len(rep.Invocations) == 0 || rep.Divergences.Unknown || rep.Divergences.Recorded != int64(rep.Divergences.Replayed) {
		return false
	}
	for _, inv := range rep.Invocations {
		if inv.Verdict != replay.Every && inv.Verdict != replay.Cut {
			return false
		}
	}
	return true
}

// replayReport prints a replay's report.
type replayReport struct{ r replay.Report }

// JSON writes the whole report.
func (p replayReport) JSON(w io.Writer) error { return writeJSON(w, p.r) }

// Table writes the summary, the table of invocations and the behaviours
// of those that did not reproduce every time or wrote the run_failed.
func (p replayReport) Table(w io.Writer) error { return p.write(w, table.Boxed) }

// Markdown writes the same with a markdown table.
func (p replayReport) Markdown(w io.Writer) error { return p.write(w, table.Markdown) }

func (p replayReport) write(w io.Writer, style table.Style) error {
	r := p.r
	var b strings.Builder
	fmt.Fprintf(&b, "%s (%s, %s): %s\n", r.Run, r.Cell, r.Outcome, r.Summary)
	if r.Divergences.Unknown {
		fmt.Fprintf(&b, "diverged replays: not recorded (the run's counts were not read when it ended), %d in the first repetition\n", r.Divergences.Replayed)
	} else {
		fmt.Fprintf(&b, "diverged replays: %d recorded, %d in the first repetition\n", r.Divergences.Recorded, r.Divergences.Replayed)
	}
	if _, err := io.WriteString(w, b.String()); err != nil {
		return err
	}
	header := []string{"invocation", "ops", "pages", "exact", "wrote", "reproduced", "verdict", "replay"}
	var rows [][]string
	for _, inv := range r.Invocations {
		what := inv.Behaviours[0].What
		if len(inv.Behaviours) > 1 {
			what = fmt.Sprintf("varied: %d behaviours", len(inv.Behaviours))
		}
		rows = append(rows, []string{inv.Actor, strconv.Itoa(inv.Ops), strconv.Itoa(inv.Pages), yesNo(inv.Exact),
			shorten(inv.Recorded, 40), fmt.Sprintf("%d/%d", inv.Reproduced, r.Repeat), inv.Verdict, shorten(what, 60)})
	}
	if err := table.Write(w, style, header, rows); err != nil {
		return err
	}
	b.Reset()
	for _, inv := range r.Invocations {
		if inv.Verdict == replay.Every && !inv.Failed {
			continue
		}
		for _, bh := range inv.Behaviours {
			fmt.Fprintf(&b, "%s, %dx: %s\n", inv.Actor, bh.Times, bh.What)
			if bh.Deviation != nil {
				fmt.Fprintf(&b, "  left its record: %s\n", bh.Deviation)
			}
		}
		if inv.Unordered != "" && inv.Verdict != replay.Every {
			fmt.Fprintf(&b, "  its record is out of order: %s (a storm recorded before 2026-12-06 could write a late delivery's first operations ahead of its run's: storm it again)\n", inv.Unordered)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// yesNo is a flag's cell.
func yesNo(v bool) string {
	if v {
		return "yes"
	}
	return "no"
}

// shorten cuts s to n runes with an ellipsis.
func shorten(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}
