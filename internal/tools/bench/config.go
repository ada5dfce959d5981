package bench

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Script is one write statement the append benchmark runs on both sides.
type Script string

// The append scripts: what the postgres world sends for one append.
const (
	// ScriptLegacy is the ulid scheme's insert of one event: a client-minted
	// id, no counter (World.Append on a ulid run).
	ScriptLegacy Script = "legacy"
	// ScriptSeq is the seq scheme's counter UPDATE … RETURNING feeding the
	// insert of one event, one statement (World.Append on a seq run).
	ScriptSeq Script = "seq"
	// ScriptFenced is a fenced batch of 3 on a seq run: read the run's counter,
	// then the counter statement conditioned on next_seq (World.AppendFenced).
	// A rejected attempt commits nothing.
	ScriptFenced Script = "fenced"
)

// Scripts lists the append scripts in table order.
var Scripts = []Script{ScriptLegacy, ScriptSeq, ScriptFenced}

// Events returns how many events one attempt of the script appends.
func (s Script) Events() int {
	if s == ScriptFenced {
		return 3
	}
	return 1
}

// Label is the script's name in result tables.
func (s Script) Label() string {
	switch s {
	case ScriptLegacy:
		return "legacy insert"
	case ScriptSeq:
		return "seq counter+insert"
	case ScriptFenced:
		return "fenced batch of 3"
	}
	return string(s)
}

// Placement says which run each attempt appends to.
type Placement string

// The placements.
const (
	// PlaceHot: every client appends to one run (one hot counter row).
	PlaceHot Placement = "hot"
	// PlaceSpread: each attempt picks a random run among AppendConfig.Runs.
	PlaceSpread Placement = "spread"
)

// Placements lists the placements in table order.
var Placements = []Placement{PlaceHot, PlaceSpread}

// AppendConfig configures the append benchmark: every combination of
// Scripts x Placements x Clients is one row, measured over Rounds rounds of
// Duration per side.
type AppendConfig struct {
	Scripts    []Script    `json:"scripts"`
	Placements []Placement `json:"placements"`
	Clients    []int       `json:"clients"`
	// Runs is the number of runs of a SPREAD row.
	Runs int `json:"runs"`
	// Rounds is how many times each side runs per row, alternating which
	// side goes first.
	Rounds int `json:"rounds"`
	// Duration is one side's time per round; pgbench counts whole seconds, so
	// it is rounded up to a second and both sides use the rounded value.
	Duration time.Duration `json:"duration"`
	// Pgbench is the pgbench binary ("": next to the server binaries, else
	// on PATH).
	Pgbench string `json:"pgbench,omitempty"`
}

// Defaults fills unset fields: the full matrix, 1,000 runs, 3 rounds of 4 s.
func (c AppendConfig) Defaults() AppendConfig {
	if len(c.Scripts) == 0 {
		c.Scripts = slices.Clone(Scripts)
	}
	if len(c.Placements) == 0 {
		c.Placements = slices.Clone(Placements)
	}
	if len(c.Clients) == 0 {
		c.Clients = []int{1, 4, 16}
	}
	c.Runs, c.Rounds, c.Duration = cmp.Or(c.Runs, 1000), cmp.Or(c.Rounds, 3), cmp.Or(c.Duration, 4*time.Second)
	return c
}

// maxClients keeps pgbench's client ids within the 1024 slots its id
// arithmetic reserves, and the pools well inside the embedded cluster's
// max_connections.
const maxClients = 100

// Validate checks c; each message names the flag at fault.
func (c AppendConfig) Validate() error {
	for _, s := range c.Scripts {
		if !slices.Contains(Scripts, s) {
			return fmt.Errorf("--script %q: valid scripts are %s", s, joinAny(Scripts))
		}
	}
	for _, p := range c.Placements {
		if !slices.Contains(Placements, p) {
			return fmt.Errorf("--placement %q: valid placements are %s", p, joinAny(Placements))
		}
	}
	for _, n := range c.Clients {
		if n < 1 || n > maxClients {
			return fmt.Errorf("--clients %d: want 1 to %d", n, maxClients)
		}
	}
	switch {
	case len(c.Scripts) == 0 || len(c.Placements) == 0 || len(c.Clients) == 0:
		return fmt.Errorf("--script, --placement and --clients need at least one value each")
	case c.Runs < 1 || c.Runs > 1_000_000:
		return fmt.Errorf("--runs %d: want 1 to 1000000", c.Runs)
	case c.Rounds < 1:
		return fmt.Errorf("--rounds %d: want at least 1", c.Rounds)
	case c.Duration <= 0 || c.Duration > time.Hour:
		return fmt.Errorf("--duration %s: want more than 0 and at most 1h", c.Duration)
	}
	return nil
}

// seconds is Duration rounded up to whole seconds, what pgbench -T takes.
func (c AppendConfig) seconds() int {
	return int((c.Duration + time.Second - 1) / time.Second)
}

// ForensicsConfig configures the forensics benchmark.
type ForensicsConfig struct {
	// Events and Runs size the table: Events spread uniformly over Runs.
	Events int `json:"events"`
	Runs   int `json:"runs"`
	// Batch is the number of events one loading transaction commits, and
	// Loaders the number of concurrent loading transactions.
	Batch   int `json:"batch"`
	Loaders int `json:"loaders"`
	// Rounds is how many times each side runs, alternating which goes first.
	Rounds int `json:"rounds"`
	// Seed seeds the runs' and types' draws.
	Seed uint64 `json:"seed"`
}

// Defaults fills unset fields: 1,000,000 events over 10,000 runs, 50 events
// per transaction, 8 loaders, 3 rounds.
func (c ForensicsConfig) Defaults() ForensicsConfig {
	c.Events, c.Runs, c.Batch = cmp.Or(c.Events, 1_000_000), cmp.Or(c.Runs, 10_000), cmp.Or(c.Batch, 50)
	c.Loaders, c.Rounds, c.Seed = cmp.Or(c.Loaders, 8), cmp.Or(c.Rounds, 3), cmp.Or(c.Seed, 1)
	return c
}

// Validate checks c; each message names the flag at fault.
func (c ForensicsConfig) Validate() error {
	switch {
	case c.Events < 1 || c.Events > 100_000_000:
		return fmt.Errorf("--events %d: want 1 to 100000000", c.Events)
	case c.Runs < 1 || c.Runs > c.Events:
		return fmt.Errorf("--runs %d: want 1 to --events (%d)", c.Runs, c.Events)
	case c.Batch < 1 || c.Batch > 10_000:
		return fmt.Errorf("--batch %d: want 1 to 10000", c.Batch)
	case c.Loaders < 1 || c.Loaders > 64:
		return fmt.Errorf("--loaders %d: want 1 to 64", c.Loaders)
	case c.Rounds < 1:
		return fmt.Errorf("--rounds %d: want at least 1", c.Rounds)
	}
	return nil
}

func joinAny[T ~string](xs []T) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = string(x)
	}
	return strings.Join(s, ", ")
}
