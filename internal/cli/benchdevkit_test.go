package cli_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stormctl/stormctl/internal/base/nodetest"
)

// TestBenchDevkit runs `stormctl bench devkit` at one level, quickly (two
// control runs a side at a third of the time): a row per engine, the real
// runtime's with its hosts' own account. It skips without node and npm.
func TestBenchDevkit(t *testing.T) {
	nodetest.Need(t, "node", "npm")
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	code, stdout, stderr := run(ctx, "bench", "devkit", "--scenario", "control", "--in-flight", "2", "--runs", "2",
		"--time-scale", "0.3", "--timeout", "2m", "--format", "json")
	if code != 0 {
		if strings.Contains(stderr, "npm") && code == 3 {
			nodetest.Skip(t, "the devkit kit could not be installed: %s", stderr)
		}
		t.Fatalf("exit %d; stderr:\n%s", code, stderr)
	}
	var res struct {
		Rows []struct {
			Engine    string  `json:"engine"`
			InFlight  int     `json:"in_flight"`
			Runs      int     `json:"runs"`
			Decided   int     `json:"decided"`
			CPUPerRun float64 `json:"cpu_s_per_run"`
			Harness   *struct {
				Runs           int     `json:"runs"`
				HostCPUPerRun  float64 `json:"host_cpu_s_per_run"`
				RecordingShare float64 `json:"recording_share"`
			} `json:"harness"`
		} `json:"rows"`
	}
	if err := json.Unmarshal([]byte(stdout), &res); err != nil {
		t.Fatalf("not the benchmark's JSON: %v\n%s", err, stdout)
	}
	if len(res.Rows) != 2 || res.Rows[0].Engine != "model" || res.Rows[1].Engine != "devkit" {
		t.Fatalf("rows %+v, want the model's then the real runtime's", res.Rows)
	}
	for _, r := range res.Rows {
		if r.InFlight != 2 || r.Runs != 2 || r.Decided != 2 || r.CPUPerRun <= 0 {
			t.Errorf("%s: %+v, want 2 runs at 2 in flight, both decided (controls complete), CPU measured", r.Engine, r)
		}
	}
	if h := res.Rows[1].Harness; h == nil || h.Runs != 2 || h.HostCPUPerRun <= 0 || h.RecordingShare <= 0 || h.RecordingShare >= 1 {
		t.Errorf("the real runtime's own account: %+v", h)
	}
	if res.Rows[0].Harness != nil {
		t.Errorf("the model has a host account: %+v", res.Rows[0].Harness)
	}
}
