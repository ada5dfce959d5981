// Package clock holds the one way stormctl waits: a sleep that ends early
// when its context does. Worlds (latency windows, retries), the engine
// (backoff, timers), scenario drivers and the nemesis all wait through it,
// so that no goroutine sleeps past its owner's end.
package clock

import (
	"context"
	"time"
)

// Sleep waits for d or until ctx ends, returning ctx's error in that case
// (and at once, with ctx's error if any, when d is not positive).
func Sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
