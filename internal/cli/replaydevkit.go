package cli

import (
	"context"
	"errors"
	"fmt"

	"github.com/stormctl/stormctl/internal/engines"
	"github.com/stormctl/stormctl/internal/tools/evidence"
	"github.com/stormctl/stormctl/internal/tools/replay"
)

// openReplayRuntime opens the runtime a run's storm ran, through its
// engine's plug-in (engines.Rerunner: the devkit engine's kit of the channel
// and package versions storm.json records for its cell), installing it
// the first time (lines on stderr say so). A run it cannot be opened for
// is refused with one line (an *replay.UnreplayableError); node or npm
// missing is the machine's set-up (exit 3).
func openReplayRuntime(ctx context.Context, io *IOStreams, engs *engines.Registry, sr *evidence.Run) (engines.Rerun, error) {
	refuse := func(format string, a ...any) error {
		return &UsageError{Err: &replay.UnreplayableError{RunID: sr.Record.RunID, Reason: fmt.Sprintf(format, a...)}}
	}
	p, ok := engs.Lookup(sr.Engine)
	if !ok {
		return nil, refuse("its engine %q is not built into this stormctl", sr.Engine)
	}
	rr, ok := p.(engines.Rerunner)
	if !ok {
		return nil, refuse("its engine %s has no runtime of its own to replay through", p.Name())
	}
	rt, err := rr.Rerunner(ctx, sr.Runtime, sr.Record.CellKey.World, sr.Cell.Scenario.Name, io.ErrOut)
	switch {
	case errors.Is(err, engines.ErrCannotRerun):
		return nil, refuse("%v", err)
	case err != nil:
		return nil, err
	}
	return rt, nil
}
