package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime/debug"
	"strings"

	"github.com/spf13/cobra"

	"github.com/stormctl/stormctl/internal/base/crash"
	"github.com/stormctl/stormctl/worlds"
)

// guardRuns wraps the RunE of every command under root so that whatever a
// command returns reaches ExitCode typed: a panic becomes an
// *InternalError saying it is a bug, an error the command did not type
// (an artifact that cannot be written, an unexpected failure) becomes an
// *InternalError too, and an untyped error after Ctrl-C is the
// interruption. Cobra's own errors come before any RunE runs and stay
// untyped: ExitCode maps them to usage.
func guardRuns(root *cobra.Command) {
	for _, c := range root.Commands() {
		guardRuns(c)
	}
	run := root.RunE
	if run == nil {
		return
	}
	root.RunE = func(cmd *cobra.Command, args []string) (err error) {
		defer func() {
			if p := recover(); p != nil {
				err = &crash.Error{Value: p, Stack: debug.Stack()}
			}
			err = typed(cmd, err)
		}()
		return run(cmd, args)
	}
}

// Execute runs root (NewCmdRoot) under ctx. A panic outside every
// command's RunE (in cobra or a flag's parser) comes back as an
// *InternalError too, as guardRuns makes one inside.
func Execute(ctx context.Context, root *cobra.Command) (err error) {
	defer func() {
		if p := recover(); p != nil {
			ce := &crash.Error{Value: p, Stack: debug.Stack()}
			err = &InternalError{Err: ce, StackFile: writeStack(ce)}
		}
	}()
	return root.ExecuteContext(ctx)
}

// typed returns err as ExitCode should see it (see guardRuns).
func typed(cmd *cobra.Command, err error) error {
	var ue *UsageError
	var ie *InfraError
	var bug *InternalError
	switch {
	case err == nil, errors.Is(err, ErrInterrupted), errors.Is(err, ErrGateFailed),
		errors.As(err, &ue), errors.As(err, &ie):
		return err
	case errors.As(err, &bug):
		return err
	case errors.Is(err, worlds.ErrPrerequisite):
		// The machine lacks what a world needs (a missing node; a package
		// version that no longer lets the devkit sidecar spend the
		// mint-to-commit window): its set-up, not a bug.
		return &InfraError{Err: err}
	case errors.Is(err, context.Canceled) && cmd.Context() != nil && cmd.Context().Err() != nil:
		return ErrInterrupted
	}
	bug = &InternalError{Err: err, Artifacts: artifactDir(cmd)}
	var ce *crash.Error
	if errors.As(err, &ce) {
		bug.StackFile = writeStack(ce)
	}
	return bug
}

// artifactDir is the directory a command writes its artifacts to, as its
// flags say once it has run (storm and fidelity write their default --out
// back into the flag), or "" for a command that writes none.
func artifactDir(cmd *cobra.Command) string {
	for _, name := range []string{"out", "resume"} {
		if f := cmd.Flags().Lookup(name); f != nil && f.Value.String() != "" {
			return f.Value.String()
		}
	}
	return ""
}

// writeStack saves a panic's stack to a file in the temp directory and
// returns its path, or "" when it cannot be written.
func writeStack(ce *crash.Error) string {
	f, err := os.CreateTemp("", "stormctl-panic-*.txt")
	if err != nil {
		return ""
	}
	defer f.Close()
	if _, err := fmt.Fprintf(f, "panic: %v\n\n%s", ce.Value, ce.Stack); err != nil {
		return ""
	}
	return f.Name()
}

// internalLine is the one line an *InternalError prints: what failed, that
// a panic is a bug (and where its stack is), and where the artifacts are.
func internalLine(e *InternalError) string {
	parts := []string{"internal error: " + oneLine(e.Err)}
	var ce *crash.Error
	if errors.As(e.Err, &ce) {
		bug := "this is a bug in stormctl, please report it"
		if e.StackFile != "" {
			bug += " with the stack in " + e.StackFile
		}
		parts = append(parts, bug)
	}
	if e.Artifacts != "" {
		parts = append(parts, "artifacts so far are in "+e.Artifacts)
	}
	return strings.Join(parts, "; ")
}
