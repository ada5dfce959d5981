package cli

import (
	"strings"
	"testing"
	"time"

	"github.com/stormctl/stormctl/internal/history"
	"github.com/stormctl/stormctl/reports"
)

// lineWriter hands each line written to it to the test, in order.
type lineWriter chan string

func (w lineWriter) Write(b []byte) (int, error) {
	for _, l := range strings.SplitAfter(string(b), "\n") {
		if l != "" {
			w <- strings.TrimSuffix(l, "\n")
		}
	}
	return len(b), nil
}

// TestProgressHeartbeat: off a terminal, every tick of the heartbeat
// prints a line with the runs finished of all, an ETA (from the rate since
// the first tick) and every cell's tally, also when no run finished since
// the last one (a storm's long tail); a finished cell gets its line at
// once; Finish prints a last line and stops the heartbeat. The clock and
// the ticker are fakes: nothing here waits on time.
func TestProgressHeartbeat(t *testing.T) {
	out := make(lineWriter, 64)
	start := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	now := start
	ticks := make(chan time.Time)
	stopped := false
	p := newProgress(&IOStreams{ErrOut: out})
	p.now = func() time.Time { return now }
	var every time.Duration
	p.ticker = func(d time.Duration) (<-chan time.Time, func()) {
		every = d
		return ticks, func() { stopped = true }
	}
	a := history.CellKey{World: "local", Scenario: "step-storm", Condition: "main"}
	b := history.CellKey{World: "local", Scenario: "control", Condition: "main"}
	p.Start([]history.CellKey{a, b}, 3)
	if every != HeartbeatEvery || HeartbeatEvery != 10*time.Second {
		t.Fatalf("heartbeat every %s, want 10s", every)
	}
	tick := func(at time.Duration) string {
		t.Helper()
		now = start.Add(at)
		ticks <- now
		return <-out
	}
	cell := func(k history.CellKey, corrupted, completed int) reports.Cell {
		return reports.Cell{CellKey: history.NewCellKey(k.World, k.Scenario, k.Condition), Runs: corrupted + completed, Corrupted: corrupted, Completed: completed}
	}

	want := func(got string, parts ...string) {
		t.Helper()
		for _, w := range parts {
			if !strings.Contains(got, w) {
				t.Errorf("line %q lacks %q", got, w)
			}
		}
	}
	want(tick(10*time.Second), "[10s] 0 of 6 runs finished, ETA unknown", "| local/step-storm/main 0/3 | local/control/main 0/3")
	p.Update(cell(a, 1, 1))
	want(tick(20*time.Second), "[20s] 2 of 6 runs finished, ETA 20s", "| local/step-storm/main 2/3: 1 corrupted / 1 completed |")
	p.Update(cell(b, 0, 3))
	want(<-out, "done local/control/main: 0 corrupted / 3 completed")
	// The long tail: nothing finished since, and still a line per tick.
	want(tick(30*time.Second), "[30s] 5 of 6 runs finished, ETA 4s", "local/control/main 3/3: 0 corrupted / 3 completed")
	want(tick(40*time.Second), "[40s] 5 of 6 runs finished, ETA 6s")
	now = start.Add(45 * time.Second)
	p.Update(cell(a, 2, 1))
	want(<-out, "done local/step-storm/main: 2 corrupted / 1 completed")
	p.Finish()
	want(<-out, "[45s] 6 of 6 runs finished, all done")
	if !stopped {
		t.Error("Finish left the ticker running")
	}
	select {
	case l := <-out:
		t.Errorf("a line after Finish's: %q", l)
	default:
	}
}
