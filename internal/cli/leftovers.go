package cli

import (
	"errors"
	"fmt"
	"os"

	"github.com/stormctl/stormctl/internal/base/leftover"
	"github.com/stormctl/stormctl/worlds/builtin"
)

// sweepLeftovers removes what killed stormctl processes left behind (their
// storms' and benchmarks' temp directories; embedded clusters whose watcher
// is gone too), saying so on stderr, before a command starts its own. What
// cannot be removed is warned about; the command goes on regardless.
func sweepLeftovers(io *IOStreams, cmd string) {
	var removed []leftover.Removed
	var errs []error
	for _, kind := range []string{leftover.KindStorm, leftover.KindBench} {
		r, err := leftover.Sweep(os.TempDir(), kind, nil)
		removed, errs = append(removed, r...), append(errs, err)
	}
	r, err := builtin.Sweep()
	removed, errs = append(removed, r...), append(errs, err)
	for _, d := range removed {
		fmt.Fprintf(io.ErrOut, "%s: removed %s, left behind by stormctl pid %d, which was killed\n", cmd, d.Dir, d.Owner.PID)
	}
	if err := errors.Join(errs...); err != nil {
		fmt.Fprintf(io.ErrOut, "%s: warning: %s\n", cmd, oneLine(err))
	}
}
