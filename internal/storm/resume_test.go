package storm_test

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/oklog/ulid/v2"

	"github.com/stormctl/stormctl/internal/engines/builtinengines"
	"github.com/stormctl/stormctl/internal/history"
	"github.com/stormctl/stormctl/internal/storm"
	"github.com/stormctl/stormctl/internal/storm/stormdir"
	"github.com/stormctl/stormctl/reports"
	"github.com/stormctl/stormctl/worlds"
)

// TestRunID: a run's id depends on the storm's seed and start, the cell and
// the run index, and on nothing else.
func TestRunID(t *testing.T) {
	started := time.Date(2026, 12, 2, 14, 11, 0, 0, time.UTC)
	k := history.CellKey{World: "local", Scenario: "step-storm", Condition: "main"}
	id := storm.RunID(1, started, k, 0)
	u, err := ulid.ParseStrict(strings.TrimPrefix(id, "wrun_"))
	if !strings.HasPrefix(id, "wrun_") || err != nil || !ulid.Time(u.Time()).Equal(started) {
		t.Fatalf("RunID = %q (%v): want wrun_ and a ULID of the storm's start", id, err)
	}
	if again := storm.RunID(1, started, k, 0); again != id {
		t.Errorf("the same run got %s, then %s", id, again)
	}
	other := k
	other.Condition = "seq"
	for name, diff := range map[string]string{
		"seed":      storm.RunID(2, started, k, 0),
		"start":     storm.RunID(1, started.Add(time.Millisecond), k, 0),
		"cell":      storm.RunID(1, started, other, 0),
		"run index": storm.RunID(1, started, k, 1),
	} {
		if diff == id {
			t.Errorf("another %s gives the same id %s", name, id)
		}
	}
}

func TestResumeConfig(t *testing.T) {
	stored := stormdir.Config{Worlds: []string{"local"}, Scenarios: []string{"control"}, Conditions: []string{"main", "seq"},
		Runs: 6, Concurrency: 20, Seed: 7, TimeScale: 0.25, Latency: "seed", Timeout: time.Minute, Out: "elsewhere/original"}
	tests := []struct {
		name    string
		given   func(c *stormdir.Config)
		flags   []string
		want    func(c *stormdir.Config) // edits stored into the wanted config
		wantErr []string
	}{
		{name: "nothing given", want: func(*stormdir.Config) {}},
		{name: "the same values given", given: func(c *stormdir.Config) { c.Runs, c.Seed = 6, 7 }, flags: []string{"runs", "seed"},
			want: func(*stormdir.Config) {}},
		{name: "--keep given", given: func(c *stormdir.Config) { c.Keep = true }, flags: []string{"keep"},
			want: func(c *stormdir.Config) { c.Keep = true }},
		{name: "a flag not given is storm.json's", given: func(c *stormdir.Config) { c.Runs = 24 }, want: func(*stormdir.Config) {}},
		{name: "other runs", given: func(c *stormdir.Config) { c.Runs = 8 }, flags: []string{"runs"},
			wantErr: []string{"--runs 8 differs from the storm's 6", "storm.json", "drop --runs"}},
		{name: "other seed", given: func(c *stormdir.Config) { c.Seed = 1 }, flags: []string{"seed"}, wantErr: []string{"--seed 1", "7"}},
		{name: "other world", given: func(c *stormdir.Config) { c.Worlds = []string{"postgres"} }, flags: []string{"world"},
			wantErr: []string{"--world postgres", "local"}},
		{name: "conditions reordered", given: func(c *stormdir.Config) { c.Conditions = []string{"seq", "main"} }, flags: []string{"condition"},
			wantErr: []string{"--condition seq,main", "main,seq"}},
		{name: "other time scale", given: func(c *stormdir.Config) { c.TimeScale = 1 }, flags: []string{"time-scale"}, wantErr: []string{"--time-scale 1 ", "0.25"}},
		{name: "the default rounds given to a storm.json without rounds", given: func(c *stormdir.Config) { c.Rounds = 6 }, flags: []string{"rounds"},
			want: func(*stormdir.Config) {}},
		{name: "other rounds", given: func(c *stormdir.Config) { c.Rounds = 8 }, flags: []string{"rounds"}, wantErr: []string{"--rounds 8 ", "6"}},
		{name: "other latency", given: func(c *stormdir.Config) { c.Latency = "none" }, flags: []string{"latency"}, wantErr: []string{"--latency none"}},
		{name: "other timeout", given: func(c *stormdir.Config) { c.Timeout = time.Second }, flags: []string{"timeout"}, wantErr: []string{"--timeout 1s", "1m0s"}},
		{name: "a shard given", given: func(c *stormdir.Config) { c.Shard = stormdir.Shard{Index: 1, Count: 2} }, flags: []string{"shard"},
			wantErr: []string{"--shard 1/2", `""`}},
		{name: "--out elsewhere", given: func(c *stormdir.Config) { c.Out = "other" }, flags: []string{"out"}, wantErr: []string{"--out other"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res := &stormdir.Resume{Dir: "storms/x", Meta: &stormdir.Meta{Config: stored}}
			given := stormdir.Config{Runs: 24, Seed: 1, TimeScale: 1, Latency: "seed", Timeout: 240 * time.Second, Concurrency: 20}
			if tc.given != nil {
				tc.given(&given)
			}
			got, err := res.Config(given, func(f string) bool { return slices.Contains(tc.flags, f) })
			if len(tc.wantErr) > 0 {
				if err == nil {
					t.Fatalf("Config = %+v, want an error", got)
				}
				for _, w := range append(tc.wantErr, "--resume storms/x") {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("error %q does not mention %q", err, w)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			want := stored
			want.Out = "storms/x"
			tc.want(&want)
			if !slices.Equal(got.Worlds, want.Worlds) || !slices.Equal(got.Conditions, want.Conditions) || got.Runs != want.Runs ||
				got.Seed != want.Seed || got.TimeScale != want.TimeScale || got.Out != want.Out || got.Keep != want.Keep {
				t.Errorf("Config = %+v, want %+v", got, want)
			}
			// stored has no rounds, as a storm.json from before --rounds:
			// it ran the harness's 6, and NewPlan must accept it.
			if got.Rounds != 6 {
				t.Errorf("Rounds = %d, want 6 for a storm.json without rounds", got.Rounds)
			}
		})
	}
}

// TestResumeCheck: a directory whose storm.json or runs.jsonl is not the
// storm the resumed plan would run is refused.
func TestResumeCheck(t *testing.T) {
	p := plan(t, stormdir.Config{Worlds: []string{"local"}, Scenarios: []string{"control"}, Conditions: []string{"main"}, Runs: 4, Seed: 7})
	k := p.Cells[0]
	rec := func(idx int, id string) reports.RunRecord {
		return reports.RunRecord{CellKey: k, Index: idx, RunID: id}
	}
	tests := []struct {
		name    string
		edit    func(m *stormdir.Meta)
		runs    []reports.RunRecord
		wantErr string
		missing int
	}{
		{name: "nothing recorded", missing: 4},
		{name: "two recorded", runs: []reports.RunRecord{rec(0, "a"), rec(2, "b")}, missing: 2},
		{name: "another build", edit: func(m *stormdir.Meta) { m.Version = "v9" }, wantErr: "stormctl v9, this is test"},
		{name: "an older schema", edit: func(m *stormdir.Meta) { m.Schema = 1 }, wantErr: "artifacts are of schema 1, this build writes 2"},
		{name: "other cells", edit: func(m *stormdir.Meta) { m.Cells = nil }, wantErr: "other cells"},
		{name: "other knobs", edit: func(m *stormdir.Meta) { m.Conditions = nil }, wantErr: "knobs"},
		{name: "a run of another cell", runs: []reports.RunRecord{{CellKey: history.NewCellKey("local", "step-storm", "main"), RunID: "x"}},
			wantErr: "run x is of cell local/step-storm/main"},
		{name: "a run index beyond --runs", runs: []reports.RunRecord{rec(4, "x")}, wantErr: "run index 4"},
		{name: "a run index twice", runs: []reports.RunRecord{rec(1, "a"), rec(1, "b")}, wantErr: "run index 1 of local/control/main is recorded twice"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			meta := &stormdir.Meta{Schema: reports.SchemaVersion, Version: "test", Config: p.Config, Conditions: p.Conditions, Cells: p.Cells}
			if tc.edit != nil {
				tc.edit(meta)
			}
			res := &stormdir.Resume{Dir: "storms/x", Meta: meta, Stored: &stormdir.Recorded{Runs: tc.runs}}
			err := res.Check(p.Cells, p.Conditions, p.Config, "test")
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("Check = %v, want an error with %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := res.Missing(p.Cells, p.Config); got != tc.missing {
				t.Errorf("Missing = %d, want %d", got, tc.missing)
			}
		})
	}
}

// TestResumeAfterInterrupt: a storm interrupted after a few runs, then
// resumed, holds every (cell, run index) exactly once, each under the id
// RunID gives it, with history and final logs of those runs only, and a
// summary over all of them.
func TestResumeAfterInterrupt(t *testing.T) {
	cfg := stormdir.Config{Worlds: []string{"local"}, Scenarios: []string{"control"}, Conditions: []string{"main", "seq"},
		Runs: 4, RunsInFlight: 4, TimeScale: 0.1, Latency: "none", Timeout: 30 * time.Second, Seed: 3}
	p := plan(t, cfg)
	dir := p.Config.Out
	if r := interruptAfter(t, p, 2); !errors.Is(r.err, storm.ErrInterrupted) {
		t.Fatalf("Run = %v, want ErrInterrupted", r.err)
	}
	before := jsonLines[reports.RunRecord](t, filepath.Join(dir, stormdir.FileRuns))

	res, err := stormdir.ReadResume(dir)
	if err != nil {
		t.Fatal(err)
	}
	rcfg, err := res.Config(stormdir.Config{}, func(string) bool { return false })
	if err != nil {
		t.Fatal(err)
	}
	var reg worlds.Registry
	for _, w := range deps().Worlds.Entries() {
		reg.Register(w)
	}
	rp, err := storm.NewPlan(rcfg, &reg, builtinengines.Engines())
	if err != nil {
		t.Fatal(err)
	}
	if err := res.Check(rp.Cells, rp.Conditions, rp.Config, "test"); err != nil {
		t.Fatal(err)
	}
	if got, want := res.Missing(rp.Cells, rp.Config), 8-len(before); got != want {
		t.Fatalf("Missing = %d, want %d (%d recorded)", got, want, len(before))
	}
	rp.Resume = res
	sum, err := storm.Run(t.Context(), rp, deps())
	if err != nil {
		t.Fatal(err)
	}
	noScratchLeft(t)

	runs := jsonLines[reports.RunRecord](t, filepath.Join(dir, stormdir.FileRuns))
	if !slices.EqualFunc(runs[:len(before)], before, func(a, b reports.RunRecord) bool { return a.RunID == b.RunID }) {
		t.Errorf("the runs recorded before the interruption changed")
	}
	seen := map[history.CellKey]map[int]bool{}
	ids := map[string]bool{}
	for _, r := range runs {
		k := r.CellKey
		if seen[k] == nil {
			seen[k] = map[int]bool{}
		}
		if seen[k][r.Index] {
			t.Errorf("run index %d of %s is recorded twice", r.Index, k)
		}
		seen[k][r.Index] = true
		if want := storm.RunID(3, res.Meta.Started, k, r.Index); r.RunID != want {
			t.Errorf("run %d of %s is %s, want %s", r.Index, k, r.RunID, want)
		}
		ids[r.RunID] = true
	}
	for _, k := range rp.Cells {
		if len(seen[k]) != 4 {
			t.Errorf("%s has run indexes %v, want 0-3", k, seen[k])
		}
	}
	for _, op := range jsonLines[history.Op](t, filepath.Join(dir, stormdir.FileHistory)) {
		if !ids[op.RunID] {
			t.Fatalf("history.jsonl holds an operation of run %s, which runs.jsonl does not list", op.RunID)
		}
	}
	events, _ := filepath.Glob(filepath.Join(dir, stormdir.DirEvents, "*", "*.jsonl"))
	if len(events) != len(runs) {
		t.Errorf("%d final logs for %d runs", len(events), len(runs))
	}
	onDisk := readSummary(t, dir)
	for i, c := range sum.Cells {
		if c.Runs != 4 || onDisk.Cells[i].Runs != 4 || onDisk.Interrupted {
			t.Errorf("%s: %d runs, %d in summary.json (interrupted: %v); want 4", c.Key(), c.Runs, onDisk.Cells[i].Runs, onDisk.Interrupted)
		}
	}
	meta, err := stormdir.ReadMeta(dir)
	if err != nil || !meta.Started.Equal(res.Meta.Started) || len(meta.Resumed) != 1 {
		t.Errorf("storm.json: started %v, resumed %v (%v); want the first start and one resume", meta.Started, meta.Resumed, err)
	}
	if _, err := os.Stat(filepath.Join(dir, stormdir.FileMD)); err != nil {
		t.Error(err)
	}
}
