package cli

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/stormctl/stormctl/internal/devkit/devkitengine"
	"github.com/stormctl/stormctl/internal/tools/evidence"
	"github.com/stormctl/stormctl/internal/tools/replay"
)

// openReplayRuntime opens the published runtime a devkit run's storm ran
// (the channel and package versions storm.json records for its cell),
// installing its kit the first time (lines on stderr say so), in a host
// that replays its invocations. A run it cannot be opened for is refused
// with one line (an *replay.UnreplayableError); node or npm missing is the
// machine's set-up (exit 3).
func openReplayRuntime(ctx context.Context, io *IOStreams, sr *evidence.Run) (*devkitengine.Replayer, error) {
	refuse := func(format string, a ...any) error {
		return &UsageError{Err: &replay.UnreplayableError{RunID: sr.Record.RunID, Reason: fmt.Sprintf(format, a...)}}
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		return nil, fmt.Errorf("replay: no cache directory for the devkit engine's packages: %w", err)
	}
	rt, err := devkitengine.ReplayerFor(ctx, cache, sr.Runtime, sr.Record.CellKey.World, sr.Cell.Scenario.Name, io.ErrOut)
	switch {
	case errors.Is(err, devkitengine.ErrRuntimeMismatch), errors.Is(err, devkitengine.ErrNotPinned):
		return nil, refuse("%v", err)
	case err != nil:
		return nil, err
	}
	return rt, nil
}
