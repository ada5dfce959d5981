package engine

import (
	"context"
	"testing"

	"github.com/stormctl/stormctl/internal/eventlog"
)

// TestWriteCtx: under the slot scheme a write outlives its run's
// cancellation (a real writer is not killed when its run ends, and one
// cancelled in its window would leave a hole) but not the runtime's; under
// the other schemes the write's context is the caller's.
func TestWriteCtx(t *testing.T) {
	for _, tt := range []struct {
		scheme       eventlog.Scheme
		outlivesRun  bool
		endsWithStop bool
	}{
		{eventlog.SchemeSlot, true, true},
		{eventlog.SchemeSeq, false, true},
		{eventlog.SchemeULID, false, true},
	} {
		t.Run(string(tt.scheme), func(t *testing.T) {
			stormCtx, stopStorm := context.WithCancel(t.Context())
			defer stopStorm()
			rt := New(stormCtx, Config{Knobs: Knobs{Scheme: tt.scheme}})
			runCtx, endRun := context.WithCancel(stormCtx)
			wctx, done := rt.writeCtx(runCtx)
			defer done()
			endRun()
			if alive := wctx.Err() == nil; alive != tt.outlivesRun {
				t.Fatalf("after the run ended the write's context is alive %v, want %v", alive, tt.outlivesRun)
			}
			stopStorm()
			<-wctx.Done()
		})
	}
}
