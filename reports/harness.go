package reports

import (
	"encoding/json"
	"slices"

	"github.com/stormctl/stormctl/internal/history"
)

// CellHarness is the harness's health over a cell's runs, from each run's
// own account (RunStats.Harness: the devkit engine's host processes and the
// machine): how busy the hosts were, what a run cost in CPU, and how much
// of that was stormctl's own recording. A cell of an engine that reports
// none has no CellHarness.
type CellHarness struct {
	// Runs is how many of the cell's runs had the harness's account.
	Runs int
	// Starved counts the runs the harness starved (infra, class starved):
	// their host's loop saturated for most of their life.
	Starved int
	// busy50 and busy99 are each run's host loop utilisation, median and
	// 99th percentile over its life; delayMax the worst loop delay (ms).
	busy50, busy99 []float64
	delayMax       float64
	// hostCPU, loopBusy, stormctlCPU and recording sum the runs' shares
	// (ms).
	hostCPU, loopBusy, stormctlCPU, recording float64
}

// add counts one run's account.
func (h *CellHarness) add(r RunRecord) {
	a := r.Stats.Harness
	h.Runs++
	if r.Outcome == history.Infra && a.WasStarved() {
		h.Starved++
	}
	if a.Samples > 0 { // a run its host never reported on says nothing of its loop
		h.busy50 = append(h.busy50, a.ELUP50)
		h.busy99 = append(h.busy99, a.ELUP99)
		h.delayMax = max(h.delayMax, a.DelayP99Ms)
	}
	h.hostCPU += a.HostCPUMs
	h.loopBusy += a.LoopBusyMs
	h.stormctlCPU += a.StormctlCPUMs
	h.recording += a.RecordingMs
}

// BusyP50 is the median over the runs of their host's median loop
// utilisation (0 to 1): how busy a run's host typically was; -1 when no
// run's host reported (unknown, never idle).
func (h *CellHarness) BusyP50() float64 { return h.sampled(quantileOf(h.busy50, 0.5)) }

// BusyP99 is the 99th percentile over the runs of their host's 99th
// percentile loop utilisation: how close to saturation the busiest moments
// came; -1 when no run's host reported.
func (h *CellHarness) BusyP99() float64 { return h.sampled(quantileOf(h.busy99, 0.99)) }

// DelayP99Ms is the worst 99th-percentile loop delay of any run's host,
// -1 when no run's host reported.
func (h *CellHarness) DelayP99Ms() float64 { return h.sampled(h.delayMax) }

// sampled is x when some run's host reported on its loop, else -1.
func (h *CellHarness) sampled(x float64) float64 {
	if len(h.busy50) == 0 {
		return -1
	}
	return x
}

// HostCPUPerRun is the hosts' CPU seconds a run cost, on average.
func (h *CellHarness) HostCPUPerRun() float64 { return h.perRun(h.hostCPU) }

// StormctlCPUPerRun is stormctl's own CPU seconds a run cost, on average.
func (h *CellHarness) StormctlCPUPerRun() float64 { return h.perRun(h.stormctlCPU) }

// RecordingShare is the share of the hosts' event-loop busy time that was
// stormctl's own recording (0 to 1: the loop is what saturates), -1 when
// the hosts reported none (a storm.json from before loop busy time was
// kept falls back to the hosts' CPU).
func (h *CellHarness) RecordingShare() float64 {
	switch {
	case h.loopBusy > 0:
		return h.recording / h.loopBusy
	case h.hostCPU > 0:
		return h.recording / h.hostCPU
	}
	return -1
}

func (h *CellHarness) perRun(ms float64) float64 {
	if h.Runs == 0 {
		return 0
	}
	return ms / 1000 / float64(h.Runs)
}

// MarshalJSON writes the account with its figures: summary.json's
// cells[].harness.
func (h CellHarness) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		Runs              int     `json:"runs"`
		Starved           int     `json:"starved"`
		HostBusyP50       float64 `json:"host_busy_p50"`
		HostBusyP99       float64 `json:"host_busy_p99"`
		LoopDelayP99Ms    float64 `json:"loop_delay_p99_ms"`
		HostCPUPerRun     float64 `json:"host_cpu_s_per_run"`
		StormctlCPUPerRun float64 `json:"stormctl_cpu_s_per_run"`
		RecordingShare    float64 `json:"recording_share"`
	}{h.Runs, h.Starved, h.BusyP50(), h.BusyP99(), h.DelayP99Ms(), h.HostCPUPerRun(), h.StormctlCPUPerRun(), h.RecordingShare()})
}

// UnmarshalJSON reads what MarshalJSON wrote back into the counts it can:
// a summary.json's harness is never read for figures (LoadStorm rebuilds
// every cell from runs.jsonl), only for its shape.
func (h *CellHarness) UnmarshalJSON(b []byte) error {
	var v struct {
		Runs    int `json:"runs"`
		Starved int `json:"starved"`
	}
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	h.Runs, h.Starved = v.Runs, v.Starved
	return nil
}

// quantileOf is the q-quantile of xs (nearest rank), 0 when empty.
func quantileOf(xs []float64, q float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	i := int(q*float64(len(s)-1) + 0.5)
	return s[min(i, len(s)-1)]
}
