// Package cli is stormctl's command line: one file per command, each an
// options struct, a NewCmdX constructor and a runX function. Typed errors
// decide the exit code in one place, ExitCode. Every command prints through
// one layer (output.go): --format declared by addFormatFlag, and
// Format.Print dispatching a Printable to its table, markdown or JSON.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"runtime/debug"
	"slices"
	"strings"
	"syscall"

	"github.com/mattn/go-isatty"
	"github.com/spf13/cobra"

	"github.com/stormctl/stormctl/internal/engines"
	"github.com/stormctl/stormctl/internal/engines/builtinengines"
	"github.com/stormctl/stormctl/worlds"
	"github.com/stormctl/stormctl/worlds/builtin"
)

// Exit codes. **contract** (docs/exit-codes.md)
const (
	ExitOK          = 0
	ExitGateFailed  = 1
	ExitUsage       = 2
	ExitInfra       = 3
	ExitInternal    = 4
	ExitInterrupted = 130
)

// UsageError is bad usage or bad input: exit 2.
type UsageError struct{ Err error }

func (e *UsageError) Error() string { return e.Err.Error() }
func (e *UsageError) Unwrap() error { return e.Err }

// InfraError is an unreachable or unusable store: exit 3.
type InfraError struct{ Err error }

func (e *InfraError) Error() string { return e.Err.Error() }
func (e *InfraError) Unwrap() error { return e.Err }

// InternalError is an unexpected failure inside a command: an artifact that
// cannot be written (disk full, permission lost mid-storm), a bug (a panic
// on any goroutine stormctl owns). Exit 4, never 2: the input was fine.
type InternalError struct {
	Err error
	// Artifacts is the directory the command was writing, if any.
	Artifacts string
	// StackFile holds the stack of a panic (Err is then a *crash.Error).
	StackFile string
}

// Error is the failure's own text (ExitCode adds the rest of the line).
func (e *InternalError) Error() string { return e.Err.Error() }

// Unwrap returns the failure.
func (e *InternalError) Unwrap() error { return e.Err }

// ErrGateFailed is a gate whose rules were broken: exit 1.
var ErrGateFailed = errors.New("gate failed")

// ErrInterrupted is a command stopped by Ctrl-C: exit 130.
var ErrInterrupted = errors.New("interrupted")

func usage(format string, a ...any) error { return &UsageError{Err: fmt.Errorf(format, a...)} }

// IOStreams are the command's input and outputs.
type IOStreams struct {
	In     io.Reader
	Out    io.Writer
	ErrOut io.Writer
	// ErrTTY reports whether ErrOut is a terminal: progress redraws a live
	// line per cell there, and writes plain lines otherwise. Out is the
	// same on a terminal and in a pipe (--format chooses).
	ErrTTY bool
}

// Factory builds the commands' dependencies lazily.
type Factory struct {
	IO      *IOStreams
	Version string
	// Worlds returns the registry of every world stormctl knows, set up
	// from s (the endpoint flags' values, --keep), and a function that
	// releases what it started (an embedded PostgreSQL cluster).
	Worlds func(s worlds.Setup, logger *slog.Logger) (*worlds.Registry, func() error)
	// Engines are the engines a storm may run (internal/engines/builtinengines).
	Engines *engines.Registry
	Logger  func() *slog.Logger
}

// NewFactory returns the production factory on the process's stdio.
func NewFactory() *Factory {
	io := &IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr, ErrTTY: isatty.IsTerminal(os.Stderr.Fd())}
	return &Factory{
		IO:      io,
		Version: version(),
		Worlds:  DefaultWorlds,
		Engines: builtinengines.Engines(),
		Logger: func() *slog.Logger {
			return slog.New(newLineHandler(io.ErrOut, slog.LevelWarn))
		},
	}
}

// DefaultWorlds registers every built-in world (worlds/builtin), set up
// from s. Nothing is started until a world is opened: the embedded cluster
// starts on the first postgres Open, the devkit sidecar (and
// devkit-postgres's own cluster) on the first devkit Open.
func DefaultWorlds(s worlds.Setup, logger *slog.Logger) (*worlds.Registry, func() error) {
	return builtin.Registry(s, logger)
}

// version is this build's version (versionOf its build info).
func version() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		bi = nil
	}
	return versionOf(bi)
}

// versionOf formats a build's version: the main module's version when it
// has one (a release, or the pseudo-version go derives from a tag); for a
// "(devel)" build, "devel+REV" from the build's VCS stamp (the commit's
// first 7 hex digits), then its commit time and "modified" when the work
// tree had changes, e.g. "devel+027270d (2026-12-03T10:11:12Z, modified)";
// "devel (no VCS stamp)" when the build has none (go build
// -buildvcs=false, a build outside a git checkout, or in a git worktree,
// which go does not stamp).
func versionOf(bi *debug.BuildInfo) string {
	if bi == nil {
		return "devel (no build info)"
	}
	if v := bi.Main.Version; v != "" && v != "(devel)" {
		return v
	}
	var rev, at string
	modified := false
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.time":
			at = s.Value
		case "vcs.modified":
			modified = s.Value == "true"
		}
	}
	if rev == "" {
		return "devel (no VCS stamp)"
	}
	v := "devel+" + rev[:min(7, len(rev))]
	var notes []string
	if at != "" {
		notes = append(notes, at)
	}
	if modified {
		notes = append(notes, "modified")
	}
	if len(notes) > 0 {
		v += " (" + strings.Join(notes, ", ") + ")"
	}
	return v
}

// Main runs stormctl with the process's arguments and returns its exit code.
func Main() int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	f := NewFactory()
	root := NewCmdRoot(f)
	root.SetArgs(os.Args[1:])
	return ExitCode(Execute(ctx, root), f.IO.ErrOut)
}

// ExitCode prints err as one line (if any) and maps it to an exit code. An
// untyped error is cobra's own (unknown command or flag, wrong arguments),
// returned before any command ran: bad usage. Every error a command returns
// is typed on the way out (guardRun).
func ExitCode(err error, w io.Writer) int {
	var ue *UsageError
	var ie *InfraError
	var bug *InternalError
	switch {
	case err == nil:
		return ExitOK
	case errors.Is(err, ErrInterrupted):
		var si *stormInterrupted
		if errors.As(err, &si) {
			fmt.Fprintf(w, "stormctl: interrupted; the partial table is above and what was measured is in %s: stormctl storm --resume %s continues the storm\n", si.dir, si.dir)
			return ExitInterrupted
		}
		fmt.Fprintln(w, "stormctl: interrupted; partial results above and in the output directory")
		return ExitInterrupted
	case errors.Is(err, ErrGateFailed):
		return ExitGateFailed
	case errors.As(err, &ue):
		fmt.Fprintf(w, "stormctl: %s\n", oneLine(err))
		return ExitUsage
	case errors.As(err, &ie):
		fmt.Fprintf(w, "stormctl: %s\n", oneLine(err))
		return ExitInfra
	case errors.As(err, &bug):
		fmt.Fprintf(w, "stormctl: %s\n", internalLine(bug))
		return ExitInternal
	}
	fmt.Fprintf(w, "stormctl: %s\n", oneLine(err))
	return ExitUsage
}

// oneLine folds a multi-line error (pgx lists every address it tried) into
// one line, dropping repeated lines.
func oneLine(err error) string {
	var parts []string
	for _, l := range strings.Split(err.Error(), "\n") {
		l = strings.TrimSpace(l)
		if l != "" && !slices.Contains(parts, l) {
			parts = append(parts, l)
		}
	}
	return strings.Join(parts, " ")
}

// NewCmdRoot returns the root command with every subcommand.
func NewCmdRoot(f *Factory) *cobra.Command {
	root := &cobra.Command{
		Use:   "stormctl",
		Short: "Storm durable-workflow event logs and show whether they stay ordered",
		Long: `stormctl runs storms: many concurrent workflow runs, each replayed by many
concurrent invocations, against event-log stores ("worlds") under named
conditions (the legacy ULID contract, event_{seq}, call-site ids, ordered wake,
...). It counts CORRUPTED_EVENT_LOG and every other outcome per cell, applies
forensics to what every reader saw, and prints the table you paste into a PR.`,
		Example: `  # the main job: legacy contract against the event_{seq} target, local world
  stormctl storm --world local --condition main,seq+callsite+ordered --runs 24

  # what can be stormed
  stormctl conditions
  stormctl scenarios
  stormctl worlds`,
		SilenceErrors: true,
		SilenceUsage:  true,
		Version:       f.Version,
	}
	root.SetOut(f.IO.Out)
	root.SetErr(f.IO.ErrOut)
	root.SetFlagErrorFunc(flagError)
	root.AddCommand(
		NewCmdStorm(f, nil),
		NewCmdReport(f, nil),
		NewCmdCompare(f, nil),
		NewCmdGate(f, nil),
		NewCmdComment(f, nil),
		NewCmdFidelity(f, nil),
		NewCmdMerge(f, nil),
		NewCmdForensics(f, nil),
		NewCmdExplain(f, nil),
		NewCmdReplay(f, nil),
		NewCmdShrink(f, nil),
		NewCmdBench(f, nil),
		NewCmdCertify(f, nil),
		NewCmdConditions(f, nil),
		NewCmdScenarios(f, nil),
		NewCmdWorlds(f, nil),
		NewCmdVersion(f),
	)
	for _, c := range root.Commands() {
		c.SetFlagErrorFunc(flagError)
	}
	guardRuns(root)
	return root
}
