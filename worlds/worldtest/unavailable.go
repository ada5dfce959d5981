package worldtest

import (
	"context"
	"errors"
	"net"
	"syscall"
	"testing"
	"time"

	"github.com/stormctl/stormctl/internal/eventlog"
)

// Watchdog bounds how long a test waits for something that must happen (a
// write entering its window, a held window ending, an Open failing).
// Running out of it fails the test as hung: it is a liveness check, never a
// speed one, and is far above anything a loaded machine needs.
const Watchdog = 90 * time.Second

// Unavailable calls open (which opens a store that cannot be used, and
// closes what it opened should that succeed) with a context that ends after
// Watchdog, and checks that it failed on the store's own first answer: an
// error matching eventlog.ErrUnavailable whose cause satisfies cause, with
// no timeout in its chain, so it did not wait out a deadline of its own or
// its caller's. An open still running at the watchdog fails t as hung. It
// returns the error for further checks.
func Unavailable(t testing.TB, what string, open func(ctx context.Context) error, cause func(error) bool) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), Watchdog)
	defer cancel()
	err := open(ctx)
	switch {
	case ctx.Err() != nil:
		t.Fatalf("hung: %s had not failed after %s: %v", what, Watchdog, err)
	case err == nil:
		t.Fatalf("%s succeeded", what)
	case !errors.Is(err, eventlog.ErrUnavailable):
		t.Fatalf("%s = %v, want an error matching %v", what, err, eventlog.ErrUnavailable)
	case timedOut(err) || !cause(err):
		t.Fatalf("%s = %v, want the store's first answer as its cause, not a timeout", what, err)
	}
	return err
}

// Refused reports whether err was caused by a refused connection.
func Refused(err error) bool { return errors.Is(err, syscall.ECONNREFUSED) }

// timedOut reports whether err's chain holds a deadline or a network
// timeout.
func timedOut(err error) bool {
	var ne net.Error
	return errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout())
}
