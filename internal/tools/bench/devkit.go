package bench

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/stormctl/stormctl/internal/engines/builtinengines"
	"github.com/stormctl/stormctl/internal/history"
	"github.com/stormctl/stormctl/reports"
)

// DevkitConfig is `stormctl bench devkit`: one cell stormed by the real
// runtime and by the model at each level of runs in flight, admission off,
// side by side.
type DevkitConfig struct {
	// World and Scenario name the cell (condition main).
	World    string `json:"world"`
	Scenario string `json:"scenario"`
	// InFlight are the levels of runs in flight, each a storm per engine.
	InFlight []int `json:"in_flight"`
	// Runs is the runs of each storm (0: DefaultDevkitRuns, and at least
	// the level).
	Runs int `json:"runs"`
	// Hosts is the real runtime's host processes per cell.
	Hosts int `json:"hosts"`
	// Timeout bounds each run.
	Timeout time.Duration `json:"timeout"`
	// TimeScale multiplies every scenario duration (0: 1).
	TimeScale float64 `json:"time_scale"`
}

// Defaults fills what is unset: devkit-local step-storm at 1, 2, 4 and 8
// runs in flight on one host, each run's own --timeout 240 s.
func (c DevkitConfig) Defaults() DevkitConfig {
	if c.World == "" {
		c.World = "devkit-local"
	}
	if c.Scenario == "" {
		c.Scenario = "step-storm"
	}
	if len(c.InFlight) == 0 {
		c.InFlight = []int{1, 2, 4, 8}
	}
	if c.Hosts == 0 {
		c.Hosts = 1
	}
	if c.Timeout == 0 {
		c.Timeout = 240 * time.Second
	}
	if c.TimeScale == 0 {
		c.TimeScale = 1
	}
	return c
}

// Validate checks the levels and counts; messages name the flag.
func (c DevkitConfig) Validate() error {
	for _, n := range c.InFlight {
		if n < 1 || n > 64 {
			return fmt.Errorf("--in-flight %d: want 1 to 64", n)
		}
	}
	switch {
	case c.Runs < 0 || c.Runs > 1000:
		return fmt.Errorf("--runs %d: want 0 (%d, and at least the level) to 1000", c.Runs, DefaultDevkitRuns)
	case c.Hosts < 1 || c.Hosts > 16:
		return fmt.Errorf("--hosts %d: want 1 to 16", c.Hosts)
	case c.Timeout <= 0:
		return fmt.Errorf("--timeout must be positive, got %s", c.Timeout)
	case c.TimeScale <= 0 || c.TimeScale > 100:
		return fmt.Errorf("--time-scale must be in (0, 100], got %g", c.TimeScale)
	}
	return nil
}

// DefaultDevkitRuns is the runs of each storm of a benchmark that names
// none: enough to see a level's decided share, few enough that the level
// of 8, collapsing, ends within one --timeout and its cancel.
const DefaultDevkitRuns = 8

// RunsAt is the runs of the storms at level n.
func (c DevkitConfig) RunsAt(n int) int {
	if c.Runs > 0 {
		return c.Runs
	}
	return max(n, DefaultDevkitRuns)
}

// Engines are the benchmark's two sides, in table order: the model and
// the published runtime, as the engine registry names them.
func Engines() []string {
	return []string{builtinengines.Engines().Model(), builtinengines.Engines().Published()}
}

// DevkitStorm runs one storm of the benchmark: engine's runs of the cell,
// runs of them, level in flight, admission off; it returns the storm's
// summary and the most flow invocations of one run in flight at once
// (the devkit engine's hosts count them; 0 for the model).
type DevkitStorm func(ctx context.Context, engine string, level, runs int) (*reports.Summary, int64, error)

// DevkitDeps are the benchmark's collaborators.
type DevkitDeps struct {
	Storm    DevkitStorm
	Progress io.Writer
}

// DevkitRow is one storm of the benchmark.
type DevkitRow struct {
	Engine   string `json:"engine"`
	InFlight int    `json:"in_flight"`
	Runs     int    `json:"runs"`
	Decided  int    `json:"decided"`
	// Outcomes counts the runs per outcome.
	Outcomes map[history.Outcome]int `json:"outcomes"`
	Starved  int                     `json:"starved"`
	Wall     time.Duration           `json:"wall_ns"`
	// CPUPerRun is this process's CPU and its children's (the hosts and
	// the worlds' sidecars, once they exited) over the storm, per run, in
	// seconds.
	CPUPerRun float64 `json:"cpu_s_per_run"`
	// Harness is the real runtime's own account (host busy, CPU split per
	// run, recording share), nil for the model.
	Harness *reports.CellHarness `json:"harness,omitempty"`
	// MaxConcurrent is the most flow invocations of one run in flight at
	// once (the real runtime).
	MaxConcurrent int64 `json:"max_concurrent,omitempty"`
}

// DecidedShare is the share of the runs that decided (0 to 1).
func (r DevkitRow) DecidedShare() float64 {
	if r.Runs == 0 {
		return 0
	}
	return float64(r.Decided) / float64(r.Runs)
}

// DevkitResult is the benchmark's rows, level by level, model first.
type DevkitResult struct {
	Config DevkitConfig `json:"config"`
	Rows   []DevkitRow  `json:"rows"`
}

// RunDevkit runs the benchmark: at each level, a storm of the model and
// one of the real runtime, one after the other, each timed whole and its
// CPU read from the process's and its children's rusage.
func RunDevkit(ctx context.Context, c DevkitConfig, deps DevkitDeps) (*DevkitResult, error) {
	res := &DevkitResult{Config: c}
	for _, level := range c.InFlight {
		for _, eng := range Engines() {
			runs := c.RunsAt(level)
			if deps.Progress != nil {
				fmt.Fprintf(deps.Progress, "bench devkit: %s, %d in flight, %d runs of %s/%s\n", eng, level, runs, c.World, c.Scenario)
			}
			cpu0, began := processTreeCPU(), time.Now()
			sum, maxConc, err := deps.Storm(ctx, eng, level, runs)
			wall, cpu := time.Since(began), processTreeCPU()-cpu0
			if err != nil {
				return res, fmt.Errorf("bench devkit: %s at %d in flight: %w", eng, level, err)
			}
			res.Rows = append(res.Rows, devkitRow(eng, level, sum, wall, cpu, maxConc))
		}
	}
	return res, nil
}

// devkitRow sums a benchmark storm's one cell.
func devkitRow(eng string, level int, sum *reports.Summary, wall, cpu time.Duration, maxConc int64) DevkitRow {
	row := DevkitRow{Engine: eng, InFlight: level, Wall: wall, Outcomes: map[history.Outcome]int{}, MaxConcurrent: maxConc}
	for _, c := range sum.Cells {
		row.Runs += c.Runs
		row.Decided += c.Decided()
		for _, o := range history.Outcomes() {
			if n := c.Count(o); n > 0 {
				row.Outcomes[o] += n
			}
		}
		if c.Harness != nil {
			row.Harness = c.Harness
			row.Starved += c.Harness.Starved
		}
	}
	if row.Runs > 0 {
		row.CPUPerRun = cpu.Seconds() / float64(row.Runs)
	}
	return row
}

// DevkitHeader is the benchmark table's columns.
var DevkitHeader = []string{"in flight", "engine", "runs", "decided", "outcomes", "wall", "CPU-s a run", "host busy p50/p99", "host/stormctl CPU-s a run", "recording", "max invocations of a run in flight"}

// TableRows are the benchmark's rows as table cells.
func (r *DevkitResult) TableRows() [][]string {
	var rows [][]string
	for _, row := range r.Rows {
		var outs []string
		for _, o := range history.Outcomes() {
			if n := row.Outcomes[o]; n > 0 {
				s := fmt.Sprintf("%d %s", n, o)
				if o == history.Infra && row.Starved > 0 {
					s += fmt.Sprintf(" (%d starved)", row.Starved)
				}
				outs = append(outs, s)
			}
		}
		busy, split, rec, conc := "-", "-", "-", "-"
		if h := row.Harness; h != nil {
			busy = "?" // its hosts never reported on their loops
			if p50, p99 := h.BusyP50(), h.BusyP99(); p50 >= 0 {
				busy = fmt.Sprintf("%.0f%%/%.0f%%", 100*p50, 100*p99)
			}
			split = fmt.Sprintf("%.1f/%.2f", h.HostCPUPerRun(), h.StormctlCPUPerRun())
			if s := h.RecordingShare(); s >= 0 {
				rec = fmt.Sprintf("%.1f%%", 100*s)
			}
		}
		if row.MaxConcurrent > 0 {
			conc = strconv.FormatInt(row.MaxConcurrent, 10)
		}
		rows = append(rows, []string{strconv.Itoa(row.InFlight), row.Engine, strconv.Itoa(row.Runs),
			fmt.Sprintf("%d (%.0f%%)", row.Decided, 100*row.DecidedShare()), strings.Join(outs, ", "),
			row.Wall.Round(time.Second).String(), fmt.Sprintf("%.1f", row.CPUPerRun), busy, split, rec, conc})
	}
	return rows
}

// Levels lists the levels measured, each once, in order.
func (r *DevkitResult) Levels() []int {
	var out []int
	for _, row := range r.Rows {
		if !slices.Contains(out, row.InFlight) {
			out = append(out, row.InFlight)
		}
	}
	return out
}
