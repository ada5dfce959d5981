package storm_test

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stormctl/stormctl/internal/base/filetest"
	"github.com/stormctl/stormctl/internal/engines/builtinengines"
	"github.com/stormctl/stormctl/internal/history"
	"github.com/stormctl/stormctl/internal/storm"
	"github.com/stormctl/stormctl/internal/storm/stormdir"
	"github.com/stormctl/stormctl/worlds"
	"github.com/stormctl/stormctl/worlds/local"
)

// defaults is what Config.Defaults fills into a zero Config (Out aside: it
// depends on the clock).
var defaults = stormdir.Config{
	Worlds:       []string{"local"},
	Scenarios:    []string{"step-storm", "hook-storm", "control"},
	Conditions:   []string{"main", "seq+callsite+ordered"},
	Runs:         24,
	Concurrency:  20,
	RunsInFlight: 0, // DefaultRunsInFlight, or the worlds' own
	TimeScale:    1,
	Rounds:       6,
	Latency:      "auto",
	Timeout:      240 * time.Second,
	PageSize:     0, // each world's own
	Admission:    storm.AdmissionAuto,
}

func TestConfigDefaults(t *testing.T) {
	full := stormdir.Config{
		Worlds: []string{"w"}, Scenarios: []string{"s"}, Conditions: []string{"c"},
		Runs: 3, Concurrency: 4, RunsInFlight: 5, Seed: 6, TimeScale: 0.5, Rounds: 2, Latency: "none",
		Timeout: time.Second, PageSize: 7, Out: "dir", Keep: true, Hosts: 3, Admission: "off",
	}
	with := func(edit func(c *stormdir.Config)) stormdir.Config {
		c := defaults
		edit(&c)
		return c
	}
	tests := []struct {
		name string
		in   stormdir.Config
		want stormdir.Config // Out "" means "a fresh directory under storms/"
	}{
		{"zero gets every default", stormdir.Config{}, defaults},
		{"set fields are kept", full, full},
		{"one set field is kept", stormdir.Config{Runs: 2, Out: "x"}, with(func(c *stormdir.Config) { c.Runs, c.Out = 2, "x" })},
		{"seed is never defaulted", stormdir.Config{Seed: 9}, with(func(c *stormdir.Config) { c.Seed = 9 })},
		{"negatives are left for Validate", stormdir.Config{Runs: -3, TimeScale: -1, Timeout: -time.Second},
			with(func(c *stormdir.Config) { c.Runs, c.TimeScale, c.Timeout = -3, -1, -time.Second })},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.in.Defaults()
			if tc.want.Out == "" {
				if dir, base := filepath.Split(got.Out); dir != "storms"+string(filepath.Separator) || base == "" {
					t.Errorf("Out = %q, want a directory under storms/", got.Out)
				}
				got.Out = ""
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Defaults() =\n%+v\nwant\n%+v", got, tc.want)
			}
		})
	}
}

// testRegistry holds the local world, a world that supports ulid only and
// one whose seq pages are its own size.
func testRegistry() *worlds.Registry {
	r := &worlds.Registry{}
	local.Register(r)
	r.Register(worlds.Entry{Name: "ulid-only", Description: "test world", Schemes: []string{"ulid"}, PageSizes: map[string]int{"ulid": 1000}, RunsPerCore: 3, OwnWindows: true})
	r.Register(worlds.Entry{Name: "paged", Description: "test world", Schemes: []string{"ulid", "seq"}, PageSizes: map[string]int{"seq": 500}})
	r.Register(worlds.Entry{Name: "unfenced", Description: "test world without AppendFenced", Schemes: []string{"ulid"},
		Limits: worlds.Limits{Fence: "the test world has no AppendFenced"}})
	r.Register(worlds.Entry{Name: "unhosted", Description: "test world the devkit engine cannot host", Schemes: []string{"ulid"},
		NoEngines: map[string]string{"devkit": "its contract is newer than the runtime's"}})
	return r
}

// validConfig is a small config that validates; each case below breaks one
// field of it.
func validConfig(t *testing.T) stormdir.Config {
	return stormdir.Config{
		Worlds: []string{"local"}, Scenarios: []string{"control"}, Conditions: []string{"main"},
		Out: filepath.Join(t.TempDir(), "out"),
	}.Defaults()
}

func TestConfigValidateRejects(t *testing.T) {
	tests := []struct {
		name string
		edit func(t *testing.T, c *stormdir.Config)
		want []string // the message must contain each
	}{
		{"runs zero", func(_ *testing.T, c *stormdir.Config) { c.Runs = 0 }, []string{"--runs", "0"}},
		{"runs negative", func(_ *testing.T, c *stormdir.Config) { c.Runs = -3 }, []string{"--runs", "-3"}},
		{"runs past the bound", func(_ *testing.T, c *stormdir.Config) { c.Runs = storm.MaxRuns + 1 }, []string{"--runs", "[1, 1000000]", "1000001"}},
		{"concurrency", func(_ *testing.T, c *stormdir.Config) { c.Concurrency = 0 }, []string{"--concurrency"}},
		{"runs in flight", func(_ *testing.T, c *stormdir.Config) { c.RunsInFlight = -1 }, []string{"--runs-in-flight"}},
		{"time scale zero", func(_ *testing.T, c *stormdir.Config) { c.TimeScale = 0 }, []string{"--time-scale"}},
		{"time scale negative", func(_ *testing.T, c *stormdir.Config) { c.TimeScale = -1 }, []string{"--time-scale"}},
		{"time scale too big", func(_ *testing.T, c *stormdir.Config) { c.TimeScale = 101 }, []string{"--time-scale", "101"}},
		{"rounds negative", func(_ *testing.T, c *stormdir.Config) { c.Rounds = -1 }, []string{"--rounds", "[1, 64]", "-1"}},
		{"rounds too many", func(_ *testing.T, c *stormdir.Config) { c.Rounds = 65 }, []string{"--rounds", "65"}},
		{"timeout", func(_ *testing.T, c *stormdir.Config) { c.Timeout = 0 }, []string{"--timeout"}},
		{"page size", func(_ *testing.T, c *stormdir.Config) { c.PageSize = -1 }, []string{"--page-size"}},
		{"latency", func(_ *testing.T, c *stormdir.Config) { c.Latency = "weird" }, []string{"--latency", "weird", "seed", "none", "fixed:"}},
		{"latency negative", func(_ *testing.T, c *stormdir.Config) { c.Latency = "fixed:-5ms" }, []string{"--latency", "fixed:"}},
		{"world", func(_ *testing.T, c *stormdir.Config) { c.Worlds = []string{"nope"} }, []string{"--world", `"nope"`, "local", "ulid-only"}},
		{"scenario", func(_ *testing.T, c *stormdir.Config) { c.Scenarios = []string{"control", "nope"} },
			[]string{"--scenario", `"nope"`, "step-storm", "hook-storm", "control"}},
		{"condition", func(_ *testing.T, c *stormdir.Config) { c.Conditions = []string{"nope"} }, []string{"--condition", `"nope"`, "main"}},
		{"condition override", func(_ *testing.T, c *stormdir.Config) { c.Conditions = []string{"seq/wake=sideways"} },
			[]string{"--condition", "wake", "sideways", "racy", "ordered"}},
		{"scheme the world lacks", func(_ *testing.T, c *stormdir.Config) { c.Conditions = []string{"sequence"} },
			[]string{"--condition", `"sequence"`, "local", "ulid, seq"}},
		{"scheme set by an override", func(_ *testing.T, c *stormdir.Config) { c.Conditions = []string{"main/scheme=sequence"} },
			[]string{"--condition", `"main/scheme=sequence"`, "local"}},
		{"scheme one of two worlds lacks", func(_ *testing.T, c *stormdir.Config) {
			c.Worlds, c.Conditions = []string{"local", "ulid-only"}, []string{"main", "seq"}
		}, []string{"--condition", `"seq"`, "ulid-only"}},
		{"fence the world lacks", func(_ *testing.T, c *stormdir.Config) {
			c.Worlds, c.Conditions = []string{"unfenced"}, []string{"tail-fence"}
		},
			[]string{"--condition", `"tail-fence"`, "needs fence all", "unfenced", "fence none", "conditions main, callsite"}},
		{"fence set by an override", func(_ *testing.T, c *stormdir.Config) {
			c.Worlds, c.Conditions = []string{"unfenced"}, []string{"callsite/fence=decisions"}
		}, []string{"--condition", `"callsite/fence=decisions"`, "needs fence decisions", "unfenced"}},
		{"scheme an unfenced world lacks", func(_ *testing.T, c *stormdir.Config) {
			c.Worlds, c.Conditions = []string{"unfenced"}, []string{"seq+callsite"}
		},
			[]string{"--condition", `"seq+callsite"`, "needs scheme seq", "unfenced", "conditions main, callsite"}},
		{"an engine the world says why it cannot run", func(_ *testing.T, c *stormdir.Config) {
			c.Worlds, c.Engine = []string{"unhosted"}, "devkit"
		}, []string{"--engine devkit: engine devkit cannot run on world unhosted: its contract is newer than the runtime's"}},
		{"an engine no registry holds", func(_ *testing.T, c *stormdir.Config) { c.Engine = "nonesuch" },
			[]string{"--engine", `unknown engine "nonesuch"`, "valid: model, devkit"}},
		{"a condition naming an engine no registry holds", func(_ *testing.T, c *stormdir.Config) { c.Conditions = []string{"main/engine=nonesuch"} },
			[]string{"--condition", `"main/engine=nonesuch"`, `unknown engine "nonesuch"`}},
		{"the published runtime with the model's knobs (writes)", func(_ *testing.T, c *stormdir.Config) { c.Conditions = []string{"main/engine=devkit/writes=parallel"} },
			[]string{"--condition", "engine=devkit", "only main's knobs apply", "writes"}},
		{"the published runtime with the model's knobs (page)", func(_ *testing.T, c *stormdir.Config) { c.Conditions = []string{"main/engine=devkit/page=20"} },
			[]string{"--condition", "engine=devkit", "only main's knobs apply", "page"}},
		{"world twice", func(_ *testing.T, c *stormdir.Config) { c.Worlds = []string{"local", "local"} }, []string{"--world", `"local"`, "twice"}},
		{"scenario twice", func(_ *testing.T, c *stormdir.Config) { c.Scenarios = []string{"control", "hook-storm", "control"} },
			[]string{"--scenario", `"control"`, "twice"}},
		{"condition twice", func(_ *testing.T, c *stormdir.Config) { c.Conditions = []string{"main", " main"} }, []string{"--condition", `"main"`, "twice"}},
		{"out under a file", func(t *testing.T, c *stormdir.Config) { c.Out = filetest.UnderFile(t) }, []string{"--out"}},
		{"out read-only", func(t *testing.T, c *stormdir.Config) { c.Out = filetest.ReadOnlyDir(t) }, []string{"--out", "not writable"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := validConfig(t)
			tc.edit(t, &c)
			plan, err := storm.NewPlan(c, testRegistry(), builtinengines.Engines())
			if err == nil {
				t.Fatalf("Validate() = %+v, want an error", plan)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
		})
	}
}

func TestConfigValidatePlan(t *testing.T) {
	tests := []struct {
		name      string
		edit      func(c *stormdir.Config)
		wantCells []history.CellKey
		latency   string
		// byWorld is the profile each world draws, when the case checks it.
		byWorld   map[string]string
		pageSizes map[string]int
		inFlight  int
	}{
		{
			name:      "one cell",
			edit:      func(*stormdir.Config) {},
			wantCells: []history.CellKey{{World: "local", Scenario: "control", Condition: "main"}},
			latency:   "real",
			pageSizes: map[string]int{"local/ulid": storm.DefaultPageSize},
			inFlight:  storm.DefaultRunsInFlight,
		},
		{
			name: "page sizes per scheme",
			edit: func(c *stormdir.Config) { c.Worlds, c.Conditions = []string{"local", "paged"}, []string{"main", "seq"} },
			wantCells: []history.CellKey{
				{World: "local", Scenario: "control", Condition: "main"}, {World: "local", Scenario: "control", Condition: "seq"},
				{World: "paged", Scenario: "control", Condition: "main"}, {World: "paged", Scenario: "control", Condition: "seq"},
			},
			latency:   "real",
			pageSizes: map[string]int{"local/ulid": storm.DefaultPageSize, "local/seq": storm.DefaultPageSize, "paged/ulid": storm.DefaultPageSize, "paged/seq": 500},
			inFlight:  storm.DefaultRunsInFlight,
		},
		{
			name:      "--page-size beats every world's own",
			edit:      func(c *stormdir.Config) { c.Worlds, c.PageSize = []string{"local", "ulid-only"}, 7 },
			wantCells: []history.CellKey{{World: "local", Scenario: "control", Condition: "main"}, {World: "ulid-only", Scenario: "control", Condition: "main"}},
			latency:   "real",
			byWorld:   map[string]string{"local": "real", "ulid-only": "none"}, // auto: none where the package spends its own windows
			pageSizes: map[string]int{"local/ulid": 7, "ulid-only/ulid": 7},
			inFlight:  min(storm.DefaultRunsInFlight, 3*runtime.GOMAXPROCS(0)),
		},
		{
			name:      "--runs-in-flight beats every world's own",
			edit:      func(c *stormdir.Config) { c.Worlds, c.RunsInFlight = []string{"local", "ulid-only"}, 99 },
			wantCells: []history.CellKey{{World: "local", Scenario: "control", Condition: "main"}, {World: "ulid-only", Scenario: "control", Condition: "main"}},
			latency:   "real",
			pageSizes: map[string]int{"local/ulid": storm.DefaultPageSize, "ulid-only/ulid": 1000},
			inFlight:  99,
		},
		{
			name: "world x condition x scenario, conditions under their trimmed text",
			edit: func(c *stormdir.Config) {
				c.Worlds = []string{"local", "ulid-only"}
				c.Scenarios = []string{"control", "step-storm"}
				c.Conditions = []string{"main", " main/ids=callsite "}
				c.Latency = "fixed:5ms"
			},
			wantCells: []history.CellKey{
				{World: "local", Scenario: "control", Condition: "main"},
				{World: "local", Scenario: "step-storm", Condition: "main"},
				{World: "local", Scenario: "control", Condition: "main/ids=callsite"},
				{World: "local", Scenario: "step-storm", Condition: "main/ids=callsite"},
				{World: "ulid-only", Scenario: "control", Condition: "main"},
				{World: "ulid-only", Scenario: "step-storm", Condition: "main"},
				{World: "ulid-only", Scenario: "control", Condition: "main/ids=callsite"},
				{World: "ulid-only", Scenario: "step-storm", Condition: "main/ids=callsite"},
			},
			latency:   "fixed:5ms",
			pageSizes: map[string]int{"local/ulid": storm.DefaultPageSize, "ulid-only/ulid": 1000},
			inFlight:  min(storm.DefaultRunsInFlight, 3*runtime.GOMAXPROCS(0)),
		},
		{
			name: "seq on local",
			edit: func(c *stormdir.Config) {
				c.Conditions = []string{"seq+callsite+ordered", "seq/fence=decisions-only"}
				c.Latency = "none"
			},
			wantCells: []history.CellKey{
				{World: "local", Scenario: "control", Condition: "seq+callsite+ordered"},
				{World: "local", Scenario: "control", Condition: "seq/fence=decisions-only"},
			},
			latency:   "none",
			pageSizes: map[string]int{"local/seq": storm.DefaultPageSize},
			inFlight:  storm.DefaultRunsInFlight,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := validConfig(t)
			tc.edit(&c)
			plan, err := storm.NewPlan(c, testRegistry(), builtinengines.Engines())
			if err != nil {
				t.Fatalf("Validate: %v", err)
			}
			if !reflect.DeepEqual(plan.Config, c) {
				t.Errorf("plan.Config = %+v, want the config validated %+v", plan.Config, c)
			}
			if !reflect.DeepEqual(plan.Cells, tc.wantCells) {
				t.Errorf("plan.Cells =\n%v\nwant\n%v", plan.Cells, tc.wantCells)
			}
			for _, k := range plan.Cells {
				cond, ok := plan.Conditions[k.Condition]
				if !ok || cond.Name != k.Condition {
					t.Errorf("cell %s: plan.Conditions has %+v", k, cond)
				}
			}
			if plan.RunsInFlight != tc.inFlight {
				t.Errorf("plan.RunsInFlight = %d, want %d", plan.RunsInFlight, tc.inFlight)
			}
			if !reflect.DeepEqual(plan.PageSizes, tc.pageSizes) {
				t.Errorf("plan.PageSizes = %v, want %v", plan.PageSizes, tc.pageSizes)
			}
			if got := plan.Latency.String(); got != tc.latency {
				t.Errorf("plan.Latency = %s, want %s", got, tc.latency)
			}
			if tc.byWorld != nil && !reflect.DeepEqual(plan.LatencyByWorld, tc.byWorld) {
				t.Errorf("plan.LatencyByWorld = %v, want %v", plan.LatencyByWorld, tc.byWorld)
			}
			// Validate probes --out and leaves nothing: the storm makes it
			// when it starts, so a plan that never runs leaves no directory.
			if _, err := os.Stat(c.Out); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("Validate left --out behind (stat: %v)", err)
			}
		})
	}
}

func TestPlanOnly(t *testing.T) {
	key := func(w, s, c string) history.CellKey { return history.CellKey{World: w, Scenario: s, Condition: c} }
	tests := []struct {
		name      string
		keys      []history.CellKey
		wantCells []history.CellKey // nil: Only fails
		wantConds []string
		pageSizes map[string]int
		wantErr   []string // the message must contain each
	}{
		{
			name:      "keeps the plan's order, not the filter's",
			keys:      []history.CellKey{key("paged", "control", "seq"), key("local", "step-storm", "main")},
			wantCells: []history.CellKey{key("local", "step-storm", "main"), key("paged", "control", "seq")},
			wantConds: []string{"main", "seq"},
			pageSizes: map[string]int{"local/ulid": storm.DefaultPageSize, "paged/seq": 500},
		},
		{
			name:      "drops the conditions and page sizes no cell uses",
			keys:      []history.CellKey{key("paged", "control", "seq"), key("paged", "step-storm", "seq")},
			wantCells: []history.CellKey{key("paged", "step-storm", "seq"), key("paged", "control", "seq")},
			wantConds: []string{"seq"},
			pageSizes: map[string]int{"paged/seq": 500},
		},
		{
			name:    "a cell outside the matrix",
			keys:    []history.CellKey{key("local", "control", "main"), key("local", "hook-storm", "main")},
			wantErr: []string{"local/hook-storm/main", "not in the storm's matrix", "step-storm,control"},
		},
		{name: "nothing", keys: nil, wantErr: []string{"empty"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := validConfig(t)
			c.Worlds, c.Scenarios, c.Conditions = []string{"local", "paged"}, []string{"step-storm", "control"}, []string{"main", "seq"}
			plan, err := storm.NewPlan(c, testRegistry(), builtinengines.Engines())
			if err != nil {
				t.Fatalf("Validate: %v", err)
			}
			err = plan.Only(tc.keys)
			if tc.wantErr != nil {
				if err == nil {
					t.Fatalf("Only = nil, want an error; cells %v", plan.Cells)
				}
				for _, w := range tc.wantErr {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("error %q does not mention %q", err, w)
					}
				}
				return
			}
			if err != nil {
				t.Fatalf("Only: %v", err)
			}
			if !reflect.DeepEqual(plan.Cells, tc.wantCells) {
				t.Errorf("plan.Cells =\n%v\nwant\n%v", plan.Cells, tc.wantCells)
			}
			var conds []string
			for name := range plan.Conditions {
				conds = append(conds, name)
			}
			slices.Sort(conds)
			if !reflect.DeepEqual(conds, tc.wantConds) {
				t.Errorf("plan.Conditions = %v, want %v", conds, tc.wantConds)
			}
			if !reflect.DeepEqual(plan.PageSizes, tc.pageSizes) {
				t.Errorf("plan.PageSizes = %v, want %v", plan.PageSizes, tc.pageSizes)
			}
		})
	}
}

// TestUnfencedWorld: a world without AppendFenced runs the conditions whose
// fence is none, with any engine-side override, and lists them.
func TestUnfencedWorld(t *testing.T) {
	c := validConfig(t)
	c.Worlds = []string{"unfenced"}
	c.Conditions = []string{"main", "callsite", "main/ids=callsite", "callsite/wake=ordered", "main/admission=single-runner"}
	if _, err := storm.NewPlan(c, testRegistry(), builtinengines.Engines()); err != nil {
		t.Fatalf("Validate(%v on an unfenced world): %v", c.Conditions, err)
	}
	e, err := testRegistry().Lookup("unfenced")
	if err != nil {
		t.Fatal(err)
	}
	if got := storm.SupportedPresets(e); !slices.Equal(got, []string{"main", "callsite"}) {
		t.Errorf("SupportedPresets(unfenced) = %v, want [main callsite]", got)
	}
	l, err := testRegistry().Lookup("local")
	if err != nil {
		t.Fatal(err)
	}
	if got := storm.SupportedPresets(l); !slices.Contains(got, "tail-fence") || !slices.Contains(got, "seq+callsite+ordered") || slices.Contains(got, "sequence") {
		t.Errorf("SupportedPresets(local) = %v: want its schemes' presets with every fence, without sequence", got)
	}
}
