package storm

import (
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"runtime"
	"slices"
	"strings"

	"github.com/stormctl/stormctl/internal/engine"
	"github.com/stormctl/stormctl/internal/engine/conditions"
	"github.com/stormctl/stormctl/internal/engines"
	"github.com/stormctl/stormctl/internal/eventlog"
	"github.com/stormctl/stormctl/internal/history"
	"github.com/stormctl/stormctl/internal/storm/stormdir"
	"github.com/stormctl/stormctl/scenarios"
	"github.com/stormctl/stormctl/worlds"
)

// Plan is a validated config resolved into cells.
type Plan struct {
	Config stormdir.Config
	// Engines are the engines the storm's conditions may name, the
	// first the default.
	Engines    *engines.Registry
	Cells      []history.CellKey
	Conditions map[string]conditions.Condition
	// Latency is the --latency value's profile where it draws one (its
	// windows go to storm.json; the scenarios' margins use its longest).
	Latency worlds.Profile
	// LatencyByWorld is the profile each world draws, by its spelling
	// (worlds.ResolveProfile): under auto, none on a devkit package world.
	LatencyByWorld map[string]string
	// PageSizes is the invocation page size of each world and scheme in
	// this storm, keyed "world/scheme" (PageSizeKey).
	PageSizes map[string]int
	// RunsInFlight is the storm's bound on runs in flight: --runs-in-flight,
	// else DefaultRunsInFlight or the least a world's RunsPerCore allows.
	RunsInFlight int
	// PoolSizes is the connection pool of each cell of a world that shares
	// its server's connections (worlds.Entry.Connections), by world; a
	// world not listed sizes its own.
	PoolSizes map[string]int32
	// Resume, when set (storm --resume), is the interrupted storm this one
	// continues: only the runs it did not record run (Resume.Check first).
	Resume *stormdir.Resume
	// Endpoints are the servers the worlds run on, for storm.json, secrets
	// removed (the caller's: the endpoint flags are the CLI's).
	Endpoints []stormdir.Endpoint
	// WorldEnv is what the package:… worlds were configured with
	// (--world-env), for storm.json, secrets removed.
	WorldEnv []stormdir.Setting
}

// DefaultRunsInFlight bounds the runs in flight of a storm whose worlds ask
// for no lower bound: 8, the engine team's harness's per-PR concurrency
// (runs started and not ended). Load shapes timing, so rates measured at
// another bound are not comparable with the harness's.
const DefaultRunsInFlight = 8

// MaxRuns bounds --runs (and a storm.json's runs, read by --resume): far
// past any storm a machine finishes (a million runs of a cell take weeks
// at a few seconds a run), so it only stops a typo or a hostile storm.json
// from planning a storm that never ends.
const MaxRuns = 1_000_000

// MaxConcurrency bounds --concurrency, the invocations of one run that may
// overlap: world-local's own queue lets at most 1,000 deliveries run at
// once in a process, and the engine team's soak runs 40; a bound past that
// only plans a storm the machine cannot run (each invocation holds a
// goroutine, a connection wait and a loaded log).
const MaxConcurrency = 1000

// MaxRunsInFlight bounds --runs-in-flight: past the runs of any storm a
// machine can keep going at once (the engine team's soak keeps 40).
const MaxRunsInFlight = 1000

// MaxRounds bounds --rounds: 64 rounds of 8 branches make a blocked-branch
// run of about 8,000 events, far past what a 2-core machine storms in one
// --timeout.
const MaxRounds = 64

// DefaultPageSize is the invocation page size of a world and scheme that
// name none.
const DefaultPageSize = 100

// PageSizeKey is the key of Plan.PageSizes (and storm.json's pageSizes) for
// a world and scheme.
func PageSizeKey(world string, scheme eventlog.Scheme) string { return world + "/" + string(scheme) }

// NewPlan validates a storm's config (stormdir.Config, defaulted) and
// resolves its names into a plan: every field checked, each message naming
// the flag at fault and the valid values.
func NewPlan(c stormdir.Config, reg *worlds.Registry, engs *engines.Registry) (*Plan, error) {
	p := &Plan{Config: c, Engines: engs, Conditions: map[string]conditions.Condition{}, PageSizes: map[string]int{}, RunsInFlight: c.RunsInFlight}
	switch {
	case c.Runs < 1 || c.Runs > MaxRuns:
		return nil, fmt.Errorf("--runs must be in [1, %d], got %d", MaxRuns, c.Runs)
	case c.Concurrency < 1 || c.Concurrency > MaxConcurrency:
		return nil, fmt.Errorf("--concurrency must be in [1, %d], got %d", MaxConcurrency, c.Concurrency)
	case c.RunsInFlight < 0 || c.RunsInFlight > MaxRunsInFlight:
		return nil, fmt.Errorf("--runs-in-flight must be in [1, %d], got %d", MaxRunsInFlight, c.RunsInFlight)
	case c.TimeScale <= 0 || c.TimeScale > 100:
		return nil, fmt.Errorf("--time-scale must be in (0, 100], got %g", c.TimeScale)
	case c.Rounds < 1 || c.Rounds > MaxRounds:
		return nil, fmt.Errorf("--rounds must be in [1, %d], got %d", MaxRounds, c.Rounds)
	case c.Timeout <= 0:
		return nil, fmt.Errorf("--timeout must be positive, got %s", c.Timeout)
	case c.PageSize < 0:
		return nil, fmt.Errorf("--page-size must be at least 1, got %d", c.PageSize)
	case c.Hosts < 0 || c.Hosts > engines.MaxHosts:
		return nil, fmt.Errorf("--hosts must be in [0, %d] (0: one per core), got %d", engines.MaxHosts, c.Hosts)
	case c.Admission != "" && !slices.Contains(AdmissionModes(), c.Admission):
		return nil, fmt.Errorf("--admission: unknown mode %q (valid: %s)", c.Admission, strings.Join(AdmissionModes(), ", "))
	}
	if c.Engine != "" {
		if _, err := engs.Get(c.Engine); err != nil {
			return nil, fmt.Errorf("--engine: %w", err)
		}
	}
	if err := c.Shard.Validate(c.Runs); err != nil {
		return nil, err
	}
	if err := c.Nemesis.Validate(c.Worlds, reg.Offers()); err != nil {
		return nil, err
	}
	lat, err := worlds.ParseProfile(c.Latency, c.Seed)
	if err != nil {
		return nil, err
	}
	p.Latency = lat
	p.LatencyByWorld = map[string]string{}
	for _, w := range c.Worlds {
		e, err := reg.Lookup(w)
		if err != nil {
			return nil, fmt.Errorf("--world: %w", err)
		}
		drawn, err := worlds.ResolveProfile(c.Latency, e, c.Seed)
		if err != nil {
			return nil, err
		}
		p.LatencyByWorld[w] = drawn.String()
	}
	p.PoolSizes = poolSizes(c, reg)
	if p.RunsInFlight == 0 {
		p.RunsInFlight = DefaultRunsInFlight
		for _, w := range c.Worlds {
			if e, _ := reg.Lookup(w); e.RunsPerCore > 0 {
				p.RunsInFlight = min(p.RunsInFlight, e.RunsPerCore*runtime.GOMAXPROCS(0))
			}
		}
	}
	for _, s := range c.Scenarios {
		if _, err := scenarios.Lookup(s); err != nil {
			return nil, fmt.Errorf("--scenario: %w", err)
		}
	}
	for _, item := range c.Conditions {
		cond, err := conditions.Parse(item)
		if err != nil {
			return nil, fmt.Errorf("--condition: %w", err)
		}
		p.Conditions[cond.Name] = cond
	}
	// A repeated item would make two cells with one key: they would share a
	// world directory and one summary row would take both cells' runs.
	for _, l := range []struct {
		flag  string
		items []string
	}{{"--world", c.Worlds}, {"--scenario", c.Scenarios}, {"--condition", c.Conditions}} {
		if d, ok := FirstDuplicate(l.items); ok {
			return nil, fmt.Errorf("%s: %q is given twice (each item makes its own cells)", l.flag, d)
		}
	}
	for _, w := range c.Worlds {
		e, _ := reg.Lookup(w)
		for _, item := range c.Conditions {
			cond := p.Conditions[strings.TrimSpace(item)]
			eng := EngineOf(engs, c, cond.Knobs)
			k := cond.Knobs
			k.Engine = eng // the storm's engine, when the condition names none
			if err := engs.CheckKnobs(k); err != nil {
				return nil, fmt.Errorf("--condition %q: %w", cond.Name, err)
			}
			if err := Supports(e, cond.Knobs); err != nil {
				return nil, fmt.Errorf("--condition %q %w", cond.Name, err)
			}
			// The default engine runs on every world; another on the
			// worlds that name it.
			if eng != engs.Default().Name() && !slices.Contains(e.Engines, eng) {
				by := "--engine " + eng
				if cond.Knobs.Engine != "" {
					by = fmt.Sprintf("--condition %q", cond.Name)
				}
				if why := e.NoEngines[eng]; why != "" {
					return nil, fmt.Errorf("%s: engine %s cannot run on world %s: %s", by, eng, w, why)
				}
				where := reg.WithEngine(eng)
				for _, f := range reg.FormsWithEngine(eng) {
					where = append(where, f+" worlds")
				}
				return nil, fmt.Errorf("%s: engine %s runs on %s only, not on world %s", by, eng, cmp.Or(joinAnd(where), "no world"), w)
			}
			if g := cond.Knobs.Guard; g != eventlog.GuardNone && !slices.Contains(e.Guards, g) {
				return nil, fmt.Errorf("--condition %q needs guard %s, which world %s does not have (worlds with it: %s)", cond.Name, g, w, cmp.Or(strings.Join(reg.WithGuard(g), ", "), "none"))
			}
			if err := supportsSharedTokens(c.Scenarios, w, e, cond, eng, engs); err != nil {
				return nil, err
			}
			p.PageSizes[PageSizeKey(w, cond.Knobs.Scheme)] = cmp.Or(c.PageSize, e.PageSizes[string(cond.Knobs.Scheme)], DefaultPageSize)
			for _, s := range c.Scenarios {
				p.Cells = append(p.Cells, history.NewCellKey(w, s, cond.Name))
			}
		}
	}
	if err := checkWritable(c.Out); err != nil {
		return nil, err
	}
	return p, nil
}

// MinPoolSize is the least pool a cell of a world that shares its server's
// connections gets, however many cells share them.
const MinPoolSize = 4

// poolSizes shares each world's connections (worlds.Entry.Connections)
// among the storm's cells of that world (every scenario and condition of
// c: a plan pruned later keeps its sizes), at most --concurrency each and
// at least MinPoolSize. The worlds of c must be registered.
func poolSizes(c stormdir.Config, reg *worlds.Registry) map[string]int32 {
	out := map[string]int32{}
	cells := len(c.Scenarios) * len(c.Conditions)
	for _, w := range c.Worlds {
		if e, _ := reg.Lookup(w); e.Connections > 0 && cells > 0 {
			out[w] = int32(max(MinPoolSize, min(c.Concurrency, e.Connections/cells)))
		}
	}
	return out
}

// Uses maps each world of the plans' cells to the guards its cells run
// (worlds.Registry.Unused reads it).
func Uses(plans ...*Plan) map[string][]eventlog.Guard {
	out := map[string][]eventlog.Guard{}
	for _, p := range plans {
		for _, k := range p.Cells {
			g := p.Conditions[k.Condition].Knobs.Guard
			if !slices.Contains(out[k.World], g) {
				out[k.World] = append(out[k.World], g)
			}
		}
	}
	return out
}

// Only prunes a validated plan to the listed cells, in the plan's own
// order, and drops the conditions and page sizes no remaining cell uses.
// It is how a caller runs part of the matrix world x scenario x condition
// (stormctl fidelity runs only the cells its claims read): Run, storm.json's
// cells and every artifact then hold only these cells, as they would for a
// storm whose matrix had only them. A key the plan does not hold is an
// error naming it (a filter never adds a cell), and so is an empty list.
func (p *Plan) Only(keys []history.CellKey) error {
	if len(keys) == 0 {
		return fmt.Errorf("no cells to run: the cell filter is empty")
	}
	want := make(map[history.CellKey]bool, len(keys))
	for _, k := range keys {
		if !slices.Contains(p.Cells, k) {
			return fmt.Errorf("cell %s is not in the storm's matrix (worlds %s, scenarios %s, conditions %s)", k,
				strings.Join(p.Config.Worlds, ","), strings.Join(p.Config.Scenarios, ","), strings.Join(p.Config.Conditions, ","))
		}
		want[k] = true
	}
	p.Cells = slices.DeleteFunc(p.Cells, func(k history.CellKey) bool { return !want[k] })
	conds, pages := map[string]conditions.Condition{}, map[string]int{}
	for _, k := range p.Cells {
		cond := p.Conditions[k.Condition]
		conds[k.Condition] = cond
		key := PageSizeKey(k.World, cond.Knobs.Scheme)
		pages[key] = p.PageSizes[key]
	}
	p.Conditions, p.PageSizes = conds, pages
	return nil
}

// Supports says why world e cannot run a condition with knobs k (nil: it
// can): its scheme or fence is not one the world has. The error reads after
// the condition's name: "needs scheme seq, which world ... does not support
// (it supports: ...)". The guard is checked by NewPlan, which can name the
// worlds that have it.
func Supports(e worlds.Entry, k engine.Knobs) error {
	if !slices.Contains(e.Schemes, string(k.Scheme)) {
		return fmt.Errorf("needs scheme %s, which world %s does not support (it supports: %s)", k.Scheme, e.Name, supported(e))
	}
	if !honoursFence(e, k.Fence) {
		return fmt.Errorf("needs fence %s, which world %s does not have (it supports: %s)", k.Fence, e.Name, supported(e))
	}
	return nil
}

// honoursFence reports whether world e can run fence policy f: every one,
// unless its Limits.Fence says it has no fenced append (the devkit worlds),
// which leaves it fence none, the one policy that never calls AppendFenced.
func honoursFence(e worlds.Entry, f engine.FencePolicy) bool {
	return e.Limits.Fence == "" || f == engine.FenceNone
}

// supported lists what a world runs: its schemes, and, when it has no
// fenced append, the one fence it honours and the conditions that leaves.
func supported(e worlds.Entry) string {
	if e.Limits.Fence == "" {
		return strings.Join(e.Schemes, ", ")
	}
	return "scheme " + strings.Join(e.Schemes, ", ") + "; fence " + string(engine.FenceNone) + "; conditions " + strings.Join(SupportedPresets(e), ", ") + " and their engine-side overrides (" + strings.Join(engineSideKnobs(), ", ") + ")"
}

// engineSideKnobs names the condition knobs any world runs: those that ask
// nothing of the world (knob.Knob.WorldSide), listed, and not the choice
// of engine itself.
func engineSideKnobs() []string {
	var out []string
	for _, k := range engine.KnobTable() {
		if !k.WorldSide && !k.Hidden && k.Name != "engine" {
			out = append(out, k.Name)
		}
	}
	return out
}

// SupportedPresets names the presets world e can run as they are (their
// scheme, fence and guard are the world's).
func SupportedPresets(e worlds.Entry) []string {
	var out []string
	for _, p := range conditions.Presets() {
		k := p.Knobs
		if slices.Contains(e.Schemes, string(k.Scheme)) && honoursFence(e, k.Fence) &&
			(k.Guard == eventlog.GuardNone || slices.Contains(e.Guards, k.Guard)) {
			out = append(out, p.Name)
		}
	}
	return out
}

// FirstDuplicate returns the first item that occurs twice, ignoring
// surrounding space.
func FirstDuplicate(xs []string) (string, bool) {
	seen := map[string]bool{}
	for _, x := range xs {
		x = strings.TrimSpace(x)
		if seen[x] {
			return x, true
		}
		seen[x] = true
	}
	return "", false
}

// checkWritable makes sure the output directory can be created and written;
// a directory it had to create for that is removed again.
func checkWritable(dir string) error {
	_, statErr := os.Stat(dir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("--out %s: cannot create it: %w", dir, err)
	}
	if errors.Is(statErr, fs.ErrNotExist) {
		// Made for the probe only: the storm makes it when it starts, so a
		// plan that never runs leaves nothing.
		defer os.Remove(dir)
	}
	f, err := os.CreateTemp(dir, ".probe-*")
	if err != nil {
		return fmt.Errorf("--out %s: not writable: %w", dir, err)
	}
	f.Close()
	return os.Remove(f.Name())
}

// joinAnd joins items as a list in words: "a", "a and b", "a, b and c".
func joinAnd(items []string) string {
	if len(items) < 2 {
		return strings.Join(items, "")
	}
	return strings.Join(items[:len(items)-1], ", ") + " and " + items[len(items)-1]
}

// supportsSharedTokens refuses a cell of a scenario that shares hook tokens
// across runs (spec 8's hook-claim) that cannot run it: on an engine that
// is not the model (the published runtime has no createHook option to
// force), on a world without a cross-run token index, or under a scheme
// the index is not built for.
func supportsSharedTokens(scens []string, w string, e worlds.Entry, cond conditions.Condition, eng string, engs *engines.Registry) error {
	for _, name := range scens {
		s, err := scenarios.Lookup(name)
		if err != nil || !s.SharedTokens {
			continue
		}
		if p, err := engs.Get(eng); err == nil && !p.Traits().Model {
			return fmt.Errorf("--scenario %s shares hook tokens across runs (spec 8), which only the model engine runs (engine %s)", name, eng)
		}
		if !e.HookClaims {
			return fmt.Errorf("--scenario %s shares hook tokens across runs (spec 8): world %s has no cross-run token index", name, w)
		}
		run := eventlog.Run{Scheme: cond.Knobs.Scheme, HookClaim: cond.Knobs.Policy.Stamp(true)}
		if err := run.CheckHookClaim(); err != nil {
			return fmt.Errorf("--scenario %s under --condition %q: %w", name, cond.Name, err)
		}
	}
	return nil
}
