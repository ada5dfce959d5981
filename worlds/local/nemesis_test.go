package local_test

import (
	"context"
	"runtime"
	"testing"
	"time"

	"github.com/stormctl/stormctl/internal/eventlog"
	"github.com/stormctl/stormctl/internal/nemesis"
	"github.com/stormctl/stormctl/worlds"
	"github.com/stormctl/stormctl/worlds/local"
	"github.com/stormctl/stormctl/worlds/nemesistest"
)

// TestNemesis runs the fault contract (nemesistest) against fs-unavailable,
// the local world's one fault, under ulid and seq (the schemes of main and
// of the target): while the directory is away every error is
// ErrUnavailable and no read is anything but a prefix (ulid: a subset) of
// the final log; once it is back, writes go through. (Under slot a write
// the fault cut between reservation and commit leaves its slots reserved,
// as the scheme says a dead writer does: fenced writers then wait for a
// reader to seal them, which this exercise's reader does not do.)
func TestNemesis(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("fs-unavailable needs Linux (renameat2)")
	}
	for _, s := range []eventlog.Scheme{eventlog.SchemeULID, eventlog.SchemeSeq} {
		t.Run(string(s), func(t *testing.T) {
			w, err := local.Open(t.Context(), worlds.Options{Dir: t.TempDir(), Seed: 1, Nemesis: true})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = w.Close() })
			ts := w.Targets()
			if len(ts) != 1 || ts[0].Kind != nemesis.FSUnavailable {
				t.Fatalf("Targets() = %+v, want one fs-unavailable", ts)
			}
			nemesistest.Exercise(t, w, eventlog.Run{Scheme: s}, func(ctx context.Context) error {
				_, err := ts[0].Inject(ctx, nemesis.Fault{Kind: nemesis.FSUnavailable, For: 500 * time.Millisecond})
				return err
			})
		})
	}
}
