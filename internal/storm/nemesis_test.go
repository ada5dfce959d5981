package storm_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/stormctl/stormctl/internal/history"
	"github.com/stormctl/stormctl/internal/nemesis"
	"github.com/stormctl/stormctl/internal/storm/stormdir"
	"github.com/stormctl/stormctl/reports"
)

// TestRunNemesis: a local storm under fs-unavailable records its schedule
// and every fault in storm.json, marks the runs the faults overlapped, and
// counts them per cell; the faults change no outcome of the target
// condition: its runs complete (or, had the store stayed away, would be
// infra), never corrupted, silent or gap.
func TestRunNemesis(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("fs-unavailable needs Linux")
	}
	p := plan(t, stormdir.Config{
		Worlds: []string{"local"}, Scenarios: []string{"control"}, Conditions: []string{"seq+callsite+ordered"},
		Runs: 3, TimeScale: 0.1, Latency: "none", Timeout: 30 * time.Second, Seed: 5,
		Nemesis: nemesis.Config{Kinds: nemesis.KindList{nemesis.FSUnavailable}, Faults: 3, Window: 300 * time.Millisecond, Gap: 100 * time.Millisecond},
	})
	sum := runStorm(t, p)
	noScratchLeft(t)
	b, err := os.ReadFile(filepath.Join(p.Config.Out, stormdir.FileStorm))
	if err != nil {
		t.Fatal(err)
	}
	var meta stormdir.Meta
	if err := json.Unmarshal(b, &meta); err != nil {
		t.Fatal(err)
	}
	if len(meta.FaultSchedule) != 3 || !meta.Config.Nemesis.On() {
		t.Fatalf("storm.json: schedule %+v, nemesis %+v; want 3 faults planned", meta.FaultSchedule, meta.Config.Nemesis)
	}
	if len(meta.Faults) == 0 {
		t.Fatal("storm.json records no fault")
	}
	labels := map[string]bool{}
	for _, f := range meta.Faults {
		if f.Kind != nemesis.FSUnavailable || f.End.Before(f.Start) || f.End.IsZero() || f.Err != "" {
			t.Errorf("fault record %+v: want an fs-unavailable that ended without error", f)
		}
		labels[f.Label()] = true
	}
	runs := jsonLines[reports.RunRecord](t, filepath.Join(p.Config.Out, stormdir.FileRuns))
	faulted := 0
	for _, r := range runs {
		if r.Outcome != history.Completed && r.Outcome != history.Infra {
			t.Errorf("run %s is %s under faults: %s", r.RunID, r.Outcome, r.Detail)
		}
		for _, l := range r.Faults {
			if !labels[l] {
				t.Errorf("run %s is marked with %s, which storm.json does not record", r.RunID, l)
			}
		}
		overlaps := slices.ContainsFunc(meta.Faults, func(f nemesis.Record) bool {
			return !f.Start.After(r.Ended) && !f.End.Before(r.Started)
		})
		if overlaps && len(r.Faults) == 0 {
			t.Errorf("run %s overlapped a fault and is not marked", r.RunID)
		}
		if len(r.Faults) > 0 {
			faulted++
		}
	}
	if faulted == 0 {
		t.Fatal("no run overlapped a fault: the test proves nothing")
	}
	c := sum.Cells[0]
	if n := c.Faulted[history.Completed] + c.Faulted[history.Infra]; n != faulted {
		t.Errorf("the cell counts %v faulted runs, runs.jsonl marks %d", c.Faulted, faulted)
	}
}
