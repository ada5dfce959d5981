package forensics

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"github.com/stormctl/stormctl/internal/eventlog"
)

func TestWindows(t *testing.T) {
	t.Parallel()
	base := time.Date(2026, 7, 29, 0, 0, 0, 0, time.UTC)
	var evs []CommitEvent
	for i := 1; i <= 100; i++ {
		evs = append(evs, CommitEvent{ID: fmt.Sprint(i), Type: eventlog.StepCreated, MintedAt: base, CommitAt: base.Add(time.Duration(i) * time.Millisecond)})
	}
	evs = append(evs, CommitEvent{ID: "x", Type: eventlog.HookReceived, CommitAt: base}) // no mint time: left out
	w := Windows(evs)
	s := w[eventlog.StepCreated]
	if s.N != 100 || s.P50 != 50*time.Millisecond || s.P90 != 90*time.Millisecond || s.P99 != 99*time.Millisecond || s.Max != 100*time.Millisecond {
		t.Fatalf("step_created window = %+v", s)
	}
	if _, ok := w[eventlog.HookReceived]; ok {
		t.Fatal("an event without a mint time made a window")
	}
}

// TestWindowSetMerge: windows gathered in several sets and merged equal the
// windows of all the events at once, whatever types each set saw first.
func TestWindowSetMerge(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(3, 4))
	types := eventlog.Types()
	base := time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC)
	var all []CommitEvent
	parts := make([]WindowSet, 3)
	for i := range 3000 {
		minted := base.Add(time.Duration(i) * time.Millisecond)
		e := CommitEvent{ID: fmt.Sprint(i), Type: types[rng.IntN(len(types))], MintedAt: minted,
			CommitAt: minted.Add(time.Duration(rng.IntN(5000)) * time.Microsecond)}
		if i%97 == 0 {
			e.CommitAt = time.Time{} // no commit time: in no window
		}
		all = append(all, e)
		parts[rng.IntN(len(parts))].Add([]CommitEvent{e})
	}
	var merged WindowSet
	for i := range parts {
		merged.Merge(&parts[i])
	}
	if got, want := merged.Windows(), Windows(all); !reflect.DeepEqual(got, want) {
		t.Fatalf("merged windows\n%v\nwant\n%v", got, want)
	}
}
