package replay

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/stormctl/stormctl/internal/eventlog"
)

// FuzzRun: whatever a history and a final log hold (ops of any kind in
// any order, pages that do not match, appends without their events), a
// replay returns a report or says the run cannot be replayed; it never
// panics and never hangs.
func FuzzRun(f *testing.F) {
	first := derive(&testing.T{}, oneStep, newSynth(oneStep).in.Final).Decisions[0]
	for _, s := range []*synth{
		newSynth(oneStep).invoke("inv-1", first),
		newSynth(oneStep).invoke("inv-1").invoke("inv-1", first),
		newSynth(oneStep).invoke("inv-1"),
	} {
		b, err := json.Marshal(struct {
			Ops   any `json:"ops"`
			Final any `json:"final"`
		}{s.in.Ops, s.in.Final})
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var in Input
		if json.Unmarshal(b, &struct {
			Ops   any `json:"ops"`
			Final any `json:"final"`
		}{&in.Ops, &in.Final}) != nil {
			return
		}
		in.RunID, in.Program, in.Knobs = synthRun, oneStep, policy
		// Every page is the whole final log, exact or not as the
		// recorded count says.
		in.Reads = func(i int) ([]eventlog.Event, bool) {
			n := 0
			if r := in.Ops[i].Read; r != nil {
				n = r.N
			}
			return in.Final, n == len(in.Final)
		}
		var (
			rep Report
			err error
		)
		done := make(chan struct{})
		go func() {
			defer close(done)
			rep, err = Run(t.Context(), in, Options{Repeat: 2})
		}()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatalf("Run hangs on %s", b)
		}
		if err != nil {
			if !errors.Is(err, ErrUnreplayable) {
				t.Fatalf("Run: %v, want a report or ErrUnreplayable", err)
			}
			return
		}
		if rep.Summary == "" || len(rep.Invocations) == 0 {
			t.Errorf("a report without summary or invocations: %+v", rep)
		}
	})
}
