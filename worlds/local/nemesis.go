package local

import (
	"context"
	"fmt"
	"os"

	"github.com/stormctl/stormctl/internal/base/clock"
	"github.com/stormctl/stormctl/internal/nemesis"
)

var _ nemesis.Targeter = (*World)(nil)

// Targets implements nemesis.Targeter: fs-unavailable on the World's
// directory (opened with worlds.Options.Nemesis; none otherwise). The local
// world has no network endpoint, so no latency target: its only fault is
// its file system going away.
func (w *World) Targets() []nemesis.Target {
	if !w.nemesis {
		return nil
	}
	return []nemesis.Target{{Kind: nemesis.FSUnavailable, Name: "directory " + w.fs.root, Inject: w.unplug}}
}

// unplug swaps the World's directory with a plain file for the fault's
// window, so that every path under it fails with ENOTDIR (an unusable
// store: eventlog.ErrUnavailable), and swaps it back. Each swap is one
// atomic rename exchange: no operation ever finds the directory missing
// (which would read as an empty or unknown run) or half moved.
func (w *World) unplug(ctx context.Context, f nemesis.Fault) (string, error) {
	stand := w.fs.root + ".nemesis"
	if err := os.WriteFile(stand, []byte("stormctl --nemesis: this world's directory is away for a fault window\n"), 0o644); err != nil {
		return "", fmt.Errorf("local: fs-unavailable: %w", err)
	}
	if err := exchange(stand, w.fs.root); err != nil {
		os.Remove(stand)
		return "", fmt.Errorf("local: fs-unavailable: %w", err)
	}
	_ = clock.Sleep(ctx, f.For) // ctx ending early cuts the outage short
	if err := exchange(stand, w.fs.root); err != nil {
		return "", fmt.Errorf("local: fs-unavailable: put the directory back from %s: %w", stand, err)
	}
	if err := os.Remove(stand); err != nil {
		return "", fmt.Errorf("local: fs-unavailable: %w", err)
	}
	return "", nil
}
