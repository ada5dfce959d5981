package devkitengine_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stormctl/stormctl/internal/base/nodetest"
	"github.com/stormctl/stormctl/internal/devkit/devkitengine"
	"github.com/stormctl/stormctl/internal/engine"
	"github.com/stormctl/stormctl/internal/engines"
	"github.com/stormctl/stormctl/internal/engines/builtinengines"
	"github.com/stormctl/stormctl/internal/eventlog"
	"github.com/stormctl/stormctl/internal/history"
	"github.com/stormctl/stormctl/internal/storm"
	"github.com/stormctl/stormctl/internal/storm/stormdir"
	"github.com/stormctl/stormctl/reports"
	"github.com/stormctl/stormctl/scenarios"
	"github.com/stormctl/stormctl/worlds"
	"github.com/stormctl/stormctl/worlds/devkitworld"
	"github.com/stormctl/stormctl/worlds/postgres"
)

// needs skips the test, saying why, on a machine without node and npm or
// without the registry the kits install from.
func needs(t *testing.T) {
	t.Helper()
	nodetest.Need(t, "node", "npm")
}

// skipOnPrerequisite skips on what the machine lacks (node, npm, the
// registry, PostgreSQL binaries), never on a failure of stormctl's own.
func skipOnPrerequisite(t *testing.T, err error) {
	t.Helper()
	switch {
	case errors.Is(err, postgres.ErrNoPostgres):
		t.Skipf("skipping: %v", err)
	case errors.Is(err, worlds.ErrPrerequisite):
		nodetest.Skip(t, "%v", err) // node, npm or the registry
	}
}

// registry is the devkit worlds, served by one host stopped with the test.
func registry(t *testing.T) *worlds.Registry {
	t.Helper()
	h := devkitworld.NewHost(devkitworld.Config{Logger: slog.New(slog.DiscardHandler)})
	t.Cleanup(func() {
		if err := h.Stop(); err != nil {
			t.Error(err)
		}
	})
	reg := &worlds.Registry{}
	devkitworld.Register(reg, h)
	return reg
}

// stormControl storms 2 control runs of the published runtime on world
// and returns the storm's config and summary (skipping the test when the
// runtime's prerequisites are missing).
func stormControl(t *testing.T, reg *worlds.Registry, world string, with ...func(*stormdir.Config)) (stormdir.Config, *reports.Summary) {
	t.Helper()
	cfg := stormdir.Config{Worlds: []string{world}, Scenarios: []string{"control"}, Conditions: []string{"main"},
		Runs: 2, TimeScale: 0.3, Latency: "none", Timeout: 3 * time.Minute, Seed: 7, Engine: devkitengine.Name,
		Hosts: 2, Out: filepath.Join(t.TempDir(), "storm")}
	for _, f := range with {
		f(&cfg)
	}
	p, err := storm.NewPlan(cfg.Defaults(), reg, builtinengines.Engines())
	if err != nil {
		t.Fatal(err)
	}
	sum, err := storm.Run(t.Context(), p, storm.Deps{Worlds: reg, Version: "test"})
	skipOnPrerequisite(t, err)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	return cfg, sum
}

// TestStormDevkitEngine: a storm of the published runtime on devkit-local
// completes its control runs; every run's record and history come from
// the runtime (ids the package's, the run ids its own), storm.json names
// the runtime, and no host process outlives the storm.
func TestStormDevkitEngine(t *testing.T) {
	needs(t)
	t.Setenv("TMPDIR", t.TempDir())
	reg := registry(t)
	cfg, sum := stormControl(t, reg, devkitworld.LocalName)
	c := sum.Cells[0]
	if c.Runs != 2 || c.Completed != 2 {
		t.Fatalf("cell %s: %s, want 2 completed (the control is clean under the real runtime)", c.Key(), c.Compact())
	}
	d, err := stormdir.Open(cfg.Out)
	if err != nil {
		t.Fatal(err)
	}
	rt, ok := d.Meta.RuntimeOf(history.NewCellKey(devkitworld.LocalName, "control", "main"))
	if !ok || rt.Engine != devkitengine.Name || rt.Versions["@workflow/core"] == "" || rt.Scheme != string(eventlog.SchemeULID) || rt.Hosts != 2 {
		t.Errorf("storm.json's runtime of the cell: %+v, %v; want the devkit engine with @workflow/core's version, scheme ulid, 2 hosts", rt, ok)
	}
	if d.Meta.AdmissionRule == "" {
		t.Error("storm.json records no admission rule")
	}
	recs, err := d.Runs()
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		h := r.Stats.Harness
		if h == nil || h.Host < 1 || h.Host > 2 || h.Samples == 0 || h.HostCPUMs <= 0 || h.StormctlCPUMs <= 0 {
			t.Errorf("run %s: harness %+v, want its host (1 or 2), its reports and its CPU shares", r.RunID, h)
		}
		if m := r.Stats.Messages; m == nil || m.Start != 1 || m.Total() < 2 {
			t.Errorf("run %s: messages %+v, want its start's and more", r.RunID, m)
		}
	}
	events, err := os.ReadDir(filepath.Join(cfg.Out, "events", "devkit-local_control_main"))
	if err != nil || len(events) != 2 {
		t.Fatalf("events/: %v, %v; want the two runs' final logs", events, err)
	}
	for _, f := range events {
		b, err := os.ReadFile(filepath.Join(cfg.Out, "events", "devkit-local_control_main", f.Name()))
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
			var e eventlog.Event
			if err := json.Unmarshal([]byte(line), &e); err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(e.ID, "evnt_") || !strings.HasPrefix(e.RunID, "wrun_") {
				t.Errorf("event %+v: want world-local's evnt_ id in a run of the runtime's", e)
			}
		}
	}
	// The hosts are this process's children: none may outlive the storm.
	if out, err := exec.Command("pgrep", "-P", strconv.Itoa(os.Getpid()), "-f", "host-.*\\.mjs").Output(); err == nil && len(out) > 0 {
		t.Errorf("host processes still run after the storm: %s", out)
	}
}

// TestRuntimeFailureIsReportedWithItsMessage: a run the runtime fails (two
// runs given one hook token: the second's createHook conflicts, a failure
// the runtime decides) ends with run_failed, and what the engine collects
// carries the message the package stored, word for word.
func TestRuntimeFailureIsReportedWithItsMessage(t *testing.T) {
	needs(t)
	t.Setenv("TMPDIR", t.TempDir())
	reg := registry(t)
	entry, err := reg.Lookup(devkitworld.LocalName)
	if err != nil {
		t.Fatal(err)
	}
	w, err := entry.Open(t.Context(), worlds.Options{Dir: t.TempDir()})
	skipOnPrerequisite(t, err)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	sc, err := scenarios.Lookup("control")
	if err != nil {
		t.Fatal(err)
	}
	// One host: the two runs must meet in one store (a hook token is
	// unique within a store; each host has a store of its own).
	open := devkitengine.NewOpener(devkitengine.Config{Channel: devkitengine.Stable, Hosts: 1}).Open
	eng, err := open(t.Context(), engines.Setup{Key: history.NewCellKey(devkitworld.LocalName, "control", "main"), World: w, Sink: discard{}, Scenario: sc})
	skipOnPrerequisite(t, err)
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	input := sc.Input(scenarios.Env{Scale: 0.3, Seed: 1}, 0)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	first, err := eng.Start(ctx, "wrun_same", input)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * time.Second) // the first run's hook exists
	second, err := eng.Start(ctx, "wrun_same", input)
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-eng.Done(second):
	case <-ctx.Done():
		t.Fatalf("the second run did not end: %v", ctx.Err())
	}
	col := eng.(engines.Collector).Collect(ctx, second)
	if col.ReadErr != nil {
		t.Fatal(col.ReadErr)
	}
	var failed *eventlog.Event
	for i, e := range col.Final {
		if e.Type == eventlog.RunFailed {
			failed = &col.Final[i]
		}
	}
	if failed == nil {
		t.Fatalf("run %s (first %s) has no run_failed: %+v", second, first, col.Final)
	}
	got := engine.Failure(*failed)
	stored := storedFailure(t, w, second, failed.ID)
	if got.Message == "" || got.Message != stored {
		t.Fatalf("collected message %q, the package stored %q", got.Message, stored)
	}
	eng.Finish(first)
	eng.Finish(second)
}

// storedFailure reads the error message world-local wrote into run_failed's
// event file, in the engine's store beside the world's data.
func storedFailure(t *testing.T, w worlds.World, runID, eventID string) string {
	t.Helper()
	st, err := worlds.Inner(w).(interface {
		RuntimeStore(context.Context) (devkitworld.Store, error)
	}).RuntimeStore(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	// The engine's host has a store of its own beside the world's (one of
	// its runtime stores: RuntimeStore makes a new one every call).
	files, err := filepath.Glob(filepath.Join(filepath.Dir(st.DataDir), "runtime-local*", "events", runID+"-"+eventID+".json"))
	if err != nil || len(files) != 1 {
		t.Fatalf("the run_failed's file in the runtime's store: %v, %v", files, err)
	}
	b, err := os.ReadFile(files[0])
	if err != nil {
		t.Fatal(err)
	}
	var ev struct {
		EventData struct {
			Error struct {
				Message string `json:"message"`
			} `json:"error"`
		} `json:"eventData"`
	}
	if err := json.Unmarshal(b, &ev); err != nil {
		t.Fatal(err)
	}
	return ev.EventData.Error.Message
}

type discard struct{}

func (discard) Record(history.Op) {}
