package reports

import (
	"encoding/json"
	"math"
	"testing"

	"github.com/stormctl/stormctl/internal/history"
)

// TestCellHarness checks a cell's harness account over its runs: the
// quantiles of the runs' host loop utilisation, the worst delay, CPU a
// run, the recording's share, the starved runs; runs without an account
// (the model's) leave it nil.
func TestCellHarness(t *testing.T) {
	t.Parallel()
	rec := func(o history.Outcome, p50, p99, sat, delay, host, stormctl, recording float64) RunRecord {
		return RunRecord{Outcome: o, Stats: history.RunStats{Harness: &history.Harness{Samples: 10, ELUP50: p50, ELUP99: p99, Saturated: sat,
			DelayP99Ms: delay, HostCPUMs: host, StormctlCPUMs: stormctl, RecordingMs: recording}}}
	}
	c := &Cell{}
	c.Add(RunRecord{Outcome: history.Completed})
	if c.Harness != nil {
		t.Fatal("a run without the harness's account made one")
	}
	c.Add(rec(history.Corrupted, 0.4, 0.9, 0.1, 80, 4000, 200, 100))
	c.Add(rec(history.Completed, 0.6, 1.0, 0.3, 120, 6000, 400, 200))
	starved := rec(history.Infra, 0.99, 1.0, 0.9, 950, 20000, 600, 300)
	starved.Stats.Harness.StarvedAtCut = true // the pipeline found it stuck while saturated
	c.Add(starved)
	// An infra run whose store could not be reached, on a saturated host,
	// is no run the harness starved.
	outage := &Cell{}
	outage.Add(rec(history.Infra, 0.99, 1.0, 0.9, 950, 20000, 600, 300))
	if outage.Harness.Starved != 0 {
		t.Errorf("an unreachable store's infra run on a busy host counted as starved")
	}
	// Hosts that never reported say nothing of their loops: unknown, not idle.
	silent := &Cell{}
	silent.Add(RunRecord{Outcome: history.Completed, Stats: history.RunStats{Harness: &history.Harness{HostCPUMs: 1000}}})
	if h := silent.Harness; h.BusyP50() != -1 || h.BusyP99() != -1 || h.DelayP99Ms() != -1 {
		t.Errorf("no reports: busy %v/%v delay %v, want -1 (unknown)", h.BusyP50(), h.BusyP99(), h.DelayP99Ms())
	}
	h := c.Harness
	near := func(a, b float64) bool { return math.Abs(a-b) < 1e-9 }
	switch {
	case h.Runs != 3 || h.Starved != 1:
		t.Errorf("runs %d starved %d, want 3 and 1", h.Runs, h.Starved)
	case !near(h.BusyP50(), 0.6) || !near(h.BusyP99(), 1.0) || !near(h.DelayP99Ms(), 950):
		t.Errorf("busy %.2f/%.2f delay %.0f", h.BusyP50(), h.BusyP99(), h.DelayP99Ms())
	case !near(h.HostCPUPerRun(), 10) || !near(h.StormctlCPUPerRun(), 0.4) || !near(h.RecordingShare(), 0.02):
		t.Errorf("host %.2f stormctl %.2f recording %.3f", h.HostCPUPerRun(), h.StormctlCPUPerRun(), h.RecordingShare())
	}
	b, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	var back struct {
		Harness map[string]float64 `json:"harness"`
	}
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"runs", "starved", "host_busy_p50", "host_busy_p99", "loop_delay_p99_ms", "host_cpu_s_per_run", "stormctl_cpu_s_per_run", "recording_share"} {
		if _, ok := back.Harness[k]; !ok {
			t.Errorf("summary.json's harness has no %q: %s", k, b)
		}
	}
	busy := &Cell{}
	busy.Add(RunRecord{Outcome: history.Completed, Stats: history.RunStats{Harness: &history.Harness{Samples: 4, HostCPUMs: 9000, LoopBusyMs: 2000, RecordingMs: 50}}})
	if got := busy.Harness.RecordingShare(); !near(got, 0.025) {
		t.Errorf("recording share %.4f, want 50 of 2000 ms of the loop's busy time (not of the CPU)", got)
	}
	if (&CellHarness{}).RecordingShare() != -1 {
		t.Error("no host CPU reported: the recording's share is not unknown")
	}
}
