package storm_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stormctl/stormctl/internal/engine"
	"github.com/stormctl/stormctl/internal/engines"
	"github.com/stormctl/stormctl/internal/engines/model"
	"github.com/stormctl/stormctl/internal/eventlog"
	"github.com/stormctl/stormctl/internal/history"
	"github.com/stormctl/stormctl/internal/storm"
	"github.com/stormctl/stormctl/internal/storm/stormdir"
	"github.com/stormctl/stormctl/reports"
)

// mintingEngine is an engine whose runtime mints its own run ids, as the
// real runtime does (issue 24): it runs the model, but starts every run
// under an id of its own, whose first operations (create_run,
// run_created) are recorded before Start returns it.
type mintingEngine struct {
	*engine.Runtime
	n *atomic.Int64
}

func (e mintingEngine) Start(ctx context.Context, _ string, input any) (string, error) {
	return e.Runtime.Start(ctx, fmt.Sprintf("wrun_engine%03d", e.n.Add(1)), input)
}

// mintingPlugin registers mintingEngine as the model.
type mintingPlugin struct {
	model.Plugin
	n *atomic.Int64
}

func (m mintingPlugin) Opener(engines.Options) (engines.Open, error) {
	return func(ctx context.Context, s engines.Setup) (engines.Engine, error) {
		eng, err := model.Open(ctx, s)
		if err != nil {
			return nil, err
		}
		return mintingEngine{Runtime: eng.(*engine.Runtime), n: m.n}, nil
	}, nil
}

// TestRunEngineMintedIDs: the runner drives any Engine; a run is named by
// the id its engine's Start returned, in runs.jsonl, history.jsonl (its
// operations from the first, recorded before the id was returned) and
// events/, and goes through the one post-run pipeline like the model's.
func TestRunEngineMintedIDs(t *testing.T) {
	p := plan(t, stormdir.Config{
		Worlds: []string{"local"}, Scenarios: []string{"control"}, Conditions: []string{"main"},
		Runs: 2, TimeScale: 0.1, Latency: "none", Timeout: 30 * time.Second, Seed: 3,
	})
	var n atomic.Int64
	p.Engines = engines.NewRegistry(mintingPlugin{n: &n})
	d := deps()
	ctx, cancel := context.WithTimeout(t.Context(), 45*time.Second)
	defer cancel()
	sum, err := storm.Run(ctx, p, d)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	c := sum.Cells[0]
	if c.Runs != 2 || c.Completed != 2 {
		t.Fatalf("cell %s: %s, want 2 completed", c.Key(), c.Compact())
	}
	// The pipeline had each run's whole history: its run_created's commit,
	// recorded before Start returned the run's id, is in the cell's
	// mint-to-commit windows.
	if w := c.Windows[eventlog.RunCreated]; w.N != 2 {
		t.Errorf("cell %s: %d run_created windows, want 2 (one a run)", c.Key(), w.N)
	}
	dir := p.Config.Out
	runs := jsonLines[reports.RunRecord](t, filepath.Join(dir, stormdir.FileRuns))
	ops := map[string][]history.Op{}
	for _, op := range jsonLines[history.Op](t, filepath.Join(dir, stormdir.FileHistory)) {
		ops[op.RunID] = append(ops[op.RunID], op)
	}
	for _, r := range runs {
		if !strings.HasPrefix(r.RunID, "wrun_engine") {
			t.Errorf("run %s is not named by its engine's id", r.RunID)
		}
		if got := ops[r.RunID]; len(got) == 0 || got[0].Kind != history.OpCreateRun {
			t.Errorf("run %s: history starts %v, want its create_run first", r.RunID, got[:min(1, len(got))])
		}
		if !r.Judged || r.Events == 0 {
			t.Errorf("run %s did not go through the pipeline: %+v", r.RunID, r)
		}
		d := stormdir.Dir{Path: dir, Meta: &stormdir.Meta{Schema: reports.SchemaVersion}}
		if final, err := d.Events(r.CellKey, r.RunID); err != nil || len(final) != r.Events {
			t.Errorf("run %s: final log of %d events (%v), want %d", r.RunID, len(final), err, r.Events)
		}
	}
	if len(ops) != len(runs) {
		t.Errorf("history.jsonl has operations of %d runs, runs.jsonl %d runs", len(ops), len(runs))
	}
}
