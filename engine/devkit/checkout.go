package devkit

import (
	"context"
	"errors"
	"fmt"
	"io"

	dkworld "github.com/stormctl/stormctl/worlds/devkit"
)

// FromCheckout returns the kit of a vercel/workflow checkout's built
// packages for worlds of kind k.
func FromCheckout(ctx context.Context, dir, cacheDir string, k dkworld.Kind, progress io.Writer) (Kit, error) {
	return Kit{}, fmt.Errorf("devkit engine: --devkit-dir %s: %w", dir, errors.ErrUnsupported)
}
