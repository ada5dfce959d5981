package storm

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stormctl/stormctl/internal/engines"
)

// loaded is an engine that says how busy it is.
type loaded struct {
	engines.Engine
	load engines.Load
}

func (l *loaded) Load() engines.Load { return l.load }

// cpuAt is a machine whose CPU was busy at share over the last samples.
func cpuAt(now time.Time, share float64) *machineCPU {
	m := &machineCPU{}
	var busy, total uint64
	for i := 10; i >= 0; i-- {
		m.samples = append(m.samples, cpuSample{at: now.Add(-time.Duration(i) * cpuInterval), busy: busy, total: total})
		busy += uint64(share * 100)
		total += 100
	}
	return m
}

// TestAdmissionRule checks when a run of a loaded engine is admitted:
// always when none is in flight, else only after the ramp, with the host's
// loop and the machine's CPU below the rule's bounds and the host's load
// known; off admits whatever the load.
func TestAdmissionRule(t *testing.T) {
	t.Parallel()
	now := time.Now()
	rule := DefaultAdmissionRule
	idle := engines.Load{Busy: 0.2, Known: true, Runs: 1}
	for _, tc := range []struct {
		name    string
		off     bool
		live    int
		since   time.Duration // since the last admission
		load    engines.Load
		machine float64
		want    bool
	}{
		{"none in flight: admitted whatever the load", false, 0, 0, engines.Load{Busy: 1, Known: true}, 1, true},
		{"room everywhere", false, 2, rule.Ramp, idle, 0.5, true},
		{"within the ramp of the last one", false, 2, rule.Ramp / 2, idle, 0.5, false},
		{"its host's loop too busy", false, 2, rule.Ramp, engines.Load{Busy: rule.MaxBusy, Known: true}, 0.5, false},
		{"its host's load not reported lately", false, 2, rule.Ramp, engines.Load{}, 0.5, false},
		{"the machine too busy", false, 2, rule.Ramp, idle, rule.MaxMachine + 0.05, false},
		{"off: admitted whatever the load", true, 7, 0, engines.Load{Busy: 1, Known: true}, 1, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			a := &admission{rule: rule, off: tc.off, cpu: cpuAt(now, tc.machine), live: tc.live, last: now.Add(-tc.since)}
			if got := a.admit(now, &loaded{load: tc.load}); got != tc.want {
				t.Errorf("admit = %v, want %v", got, tc.want)
			}
			if want := tc.live + map[bool]int{true: 1}[tc.want]; a.live != want {
				t.Errorf("live = %d after admit, want %d", a.live, want)
			}
		})
	}
}

// TestAdmissionWaits checks that wait holds a run until there is room,
// releases the slot with done, lets engines that say nothing through at
// once, and gives up with the context.
func TestAdmissionWaits(t *testing.T) {
	t.Parallel()
	rule := AdmissionRule{Ramp: 0, Window: time.Second, MaxBusy: 0.5, MaxMachine: 1.1}
	busy := &loaded{load: engines.Load{Busy: 0.9, Known: true}}
	a := &admission{rule: rule, poll: time.Millisecond}
	first, err := a.wait(t.Context(), busy)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Millisecond)
	defer cancel()
	if _, err := a.wait(ctx, busy); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a second run on a busy host: %v, want to wait until the context ends", err)
	}
	first()
	second, err := a.wait(t.Context(), busy)
	if err != nil {
		t.Fatalf("once the first ended (none in flight): %v", err)
	}
	second()
	type plain struct{ engines.Engine }
	if _, err := a.wait(ctx, plain{}); err != nil {
		t.Errorf("an engine that says nothing of its load waited: %v", err)
	}
	if runs, _ := a.heldBack(); runs != 0 {
		t.Errorf("held back %d runs, want 0: the one that waited gave up", runs)
	}
}

// TestMachineCPU checks the busy share between two samples, and that too
// few samples are unknown.
func TestMachineCPU(t *testing.T) {
	t.Parallel()
	now := time.Now()
	m := cpuAt(now, 0.75)
	if got, ok := m.recent(now, 3*time.Second); !ok || got < 0.74 || got > 0.76 {
		t.Errorf("recent = %.3f %v, want 0.75", got, ok)
	}
	if _, ok := (&machineCPU{}).recent(now, time.Second); ok {
		t.Error("no samples read as known")
	}
	busy, total, err := readProcStat()
	if err != nil {
		t.Skipf("no /proc/stat here: %v", err)
	}
	if busy > total || total == 0 {
		t.Errorf("readProcStat = %d busy of %d", busy, total)
	}
}

// TestSelfCPUSplitsAmongLiveRuns checks that each tick's CPU is split
// evenly among the runs live then.
func TestSelfCPUSplitsAmongLiveRuns(t *testing.T) {
	t.Parallel()
	var clock time.Duration
	s := &selfCPU{read: func() time.Duration { return clock }, live: map[string]*time.Duration{}}
	s.begin("a")
	s.begin("b")
	clock = 100 * time.Millisecond
	s.tick()
	gotB := s.end("b")
	clock = 300 * time.Millisecond
	s.tick()
	if gotA := s.end("a"); gotA != 250*time.Millisecond || gotB != 50*time.Millisecond {
		t.Errorf("a %s, b %s; want 50+200 ms and 50 ms", gotA, gotB)
	}
	if got := s.end("never"); got != 0 {
		t.Errorf("a run never begun: %s", got)
	}
}
