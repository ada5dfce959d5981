package stormdir

import (
	"path/filepath"
	"time"

	"github.com/stormctl/stormctl/internal/nemesis"
	"github.com/stormctl/stormctl/scenarios"
	"github.com/stormctl/stormctl/worlds"
)

// Config is a storm's plain configuration, built from flags, defaulted and
// validated before anything touches a store.
type Config struct {
	Worlds     []string `json:"worlds"`
	Scenarios  []string `json:"scenarios"`
	Conditions []string `json:"conditions"`
	// Runs is the number of runs per cell.
	Runs int `json:"runs"`
	// Concurrency bounds overlapping invocations of one run.
	Concurrency int `json:"concurrency"`
	// RunsInFlight bounds runs started and not yet ended, across cells;
	// 0: DefaultRunsInFlight, or less where a world asks for less
	// (worlds.Entry.RunsPerCore).
	RunsInFlight int     `json:"runs_in_flight"`
	Seed         uint64  `json:"seed"`
	TimeScale    float64 `json:"time_scale"`
	// Rounds is the rounds of step-storm, hook-storm, blocked-branch and fan-out
	// runs (8 branches each); 0: scenarios.DefaultRounds.
	Rounds  int    `json:"rounds"`
	Latency string `json:"latency"`
	// Timeout bounds one run; a run without a terminal event by then is stuck.
	Timeout time.Duration `json:"timeout"`
	// PageSize is the page size of invocations' log loads; 0: each world's
	// own for the scheme (worlds.Entry.PageSizes, else DefaultPageSize).
	PageSize int    `json:"page_size"`
	Out      string `json:"out"`
	// Keep keeps the worlds' namespaces (temp dirs, schemas) after the storm.
	Keep bool `json:"keep"`
	// Shard, when set (--shard i/n), runs only the run indexes r with
	// r mod n == i-1, of every cell; the zero Shard is the whole storm.
	Shard Shard `json:"shard,omitzero"`
	// Nemesis, when on (--nemesis), breaks the worlds' stores on loopback
	// during the storm (see package nemesis).
	Nemesis nemesis.Config `json:"nemesis,omitzero"`
	// Engine is the engine of the conditions that name none (--engine):
	// "" or "model" for stormctl's model, "devkit" for the published
	// runtime; DevkitChannel is the devkit engine's line of packages
	// (--devkit-channel: "" or "stable", "beta").
	Engine        string `json:"engine,omitempty"`
	DevkitChannel string `json:"devkit_channel,omitempty"`
	// Hosts is how many host processes the devkit engine spreads each
	// cell's runs over (--hosts); 0: one per core.
	Hosts int `json:"hosts,omitempty"`
	// Admission is when runs of an engine that says how busy it is start
	// (--admission): "auto" (or "", a storm.json from before it) while
	// its host and the machine have room, "off" as --runs-in-flight
	// allows.
	Admission string `json:"admission,omitempty"`
}

// DefaultSeed is the seed of a storm that names none (storm --seed). A
// seed is never defaulted by Defaults: 0 is a seed like any other.
const DefaultSeed = 1

// Defaults fills unset fields. They are the storm's defaults: the storm
// command's flags take theirs from a zero Config's Defaults.
func (c Config) Defaults() Config {
	if len(c.Worlds) == 0 {
		c.Worlds = []string{"local"}
	}
	if len(c.Scenarios) == 0 {
		c.Scenarios = []string{"step-storm", "hook-storm", "control"}
	}
	if len(c.Conditions) == 0 {
		c.Conditions = []string{"main", "seq+callsite+ordered"}
	}
	if c.Runs == 0 {
		c.Runs = 24
	}
	if c.Concurrency == 0 {
		c.Concurrency = 20
	}
	if c.TimeScale == 0 {
		c.TimeScale = 1
	}
	if c.Rounds == 0 {
		c.Rounds = scenarios.DefaultRounds
	}
	if c.Latency == "" {
		c.Latency = worlds.AutoProfile
	}
	if c.Timeout == 0 {
		c.Timeout = 240 * time.Second
	}
	if c.Admission == "" {
		c.Admission = "auto" // storm.AdmissionAuto (this package cannot import storm)
	}
	if c.Out == "" {
		c.Out = filepath.Join("storms", time.Now().UTC().Format("20060102-150405"))
	}
	c.Nemesis = c.Nemesis.Defaults()
	return c
}
