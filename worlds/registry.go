package worlds

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/stormctl/stormctl/internal/eventlog"
	"github.com/stormctl/stormctl/internal/nemesis"
)

// Factory opens a world instance.
type Factory func(ctx context.Context, opts Options) (World, error)

// FactoryFrom is the Factory of a world opened from a config of type C: it
// takes the config from src, lets set apply the storm's options to it and
// opens the world with open. A failed open gives a nil World (never a
// typed nil) and the error.
func FactoryFrom[C any, W World](src func(context.Context) (C, error), set func(*C, Options), open func(context.Context, C) (W, error)) Factory {
	return func(ctx context.Context, opts Options) (World, error) {
		cfg, err := src(ctx)
		if err != nil {
			return nil, err
		}
		set(&cfg, opts)
		w, err := open(ctx, cfg)
		if err != nil {
			return nil, err
		}
		return w, nil
	}
}

// Entry describes a registered world.
type Entry struct {
	Name        string
	Description string
	// Schemes lists the ordering schemes the world supports.
	Schemes []string
	// Guards lists the legacy interim guards the world can apply
	// (eventlog.Run.Guard), e.g. eventlog.GuardCountIndex.
	Guards []eventlog.Guard
	// HookClaims says the world indexes hook tokens across its runs for
	// runs stamped with eventlog.Run.HookClaim (spec 8's force-claim on
	// the schemes eventlog.Run.CheckHookClaim admits): the scenarios that
	// share tokens across runs (scenarios.Scenario.SharedTokens) run on
	// such worlds only.
	HookClaims bool
	// Limits are the parts of its schemes' contract the world cannot do
	// (the conformance suite skips them, saying why); zero for our own
	// worlds. A world whose Limits.Fence is set runs only the conditions
	// whose fence is none (storm.Supports).
	Limits Limits
	// PageSizes is, per scheme, how many events an invocation asks for per
	// List while loading its log on this world, unless the storm sets one
	// (a scheme not listed: 100, what every world uses). A scheme whose
	// every page costs a read of the whole run (the vercel world's seq) asks
	// for pages as large as its store's own; the others keep the common size,
	// so that cursors move alike across worlds.
	PageSizes map[string]int
	// RunsPerCore bounds the runs a storm keeps in flight on this world,
	// per core (GOMAXPROCS), unless the storm sets --runs-in-flight (0: no
	// bound of its own). A world whose every run costs much of a core in
	// this process (the vercel world's ingest server and embedded DynamoDB)
	// needs it: past that load, runs slow down, watchdogs fire and drivers
	// poke more, each run does more work, and the storm measures the
	// machine's overload instead of the store.
	RunsPerCore int
	// Connections is how many connections a storm may hold on the world's
	// server in all, shared among its cells of this world: each cell's
	// world is opened with Options.PoolSize Connections/cells (at least 4,
	// at most the storm's --concurrency). 0: the world sizes its own.
	Connections int
	// Endpoints are the flags that point the world at a server of the
	// user's instead of its own (Endpoint); worlds that share a server
	// carry one declaration.
	Endpoints []Endpoint
	// Faults are the fault kinds the world offers under --nemesis (opened
	// with Options.Nemesis, it offers targets of these kinds only).
	Faults []nemesis.Kind
	// Engines names the engines besides the model that run on the world
	// ("devkit": the published runtime, on the devkit worlds); every world
	// runs the model.
	Engines []string
	// NoEngines says, per engine name, why that engine does not run on the
	// world where one might expect it to (a package world the devkit
	// engine cannot host as asked): the plan's refusal gives the reason.
	NoEngines map[string]string
	// OwnWindows says the world's store is a published package that spends
	// its own mint-to-commit windows (devkit-local, devkit-postgres): under
	// --latency auto it draws none on top of them (ResolveProfile).
	OwnWindows bool
	Open       Factory
}

// Registry maps world names to factories. The zero value is empty and ready.
type Registry struct {
	entries []Entry
	// endpoints are the entries' endpoint flags, each once, in the order
	// they were first registered.
	endpoints []Endpoint
	// forms are the families of worlds registered when a storm names one
	// (package:NAME), for messages that list where an engine runs.
	forms []Form
}

// Form is a family of worlds that are registered one by one as a storm
// names them, not in advance: package:NAME, a World package's world.
type Form struct {
	// Pattern is how a world of the family is named, e.g. "package:NAME".
	Pattern string
	// Engines names the engines besides the model that run on its worlds.
	Engines []string
}

// AddForm declares a family of worlds registered on demand.
func (r *Registry) AddForm(f Form) { r.forms = append(r.forms, f) }

// FormsWithEngine lists the patterns of the families of worlds engine runs
// on (AddForm), e.g. "package:NAME".
func (r *Registry) FormsWithEngine(engine string) []string {
	var out []string
	for _, f := range r.forms {
		if slices.Contains(f.Engines, engine) {
			out = append(out, f.Pattern)
		}
	}
	return out
}

// WithEngine lists the worlds engine runs on, by name.
func (r *Registry) WithEngine(engine string) []string {
	var out []string
	for _, e := range r.entries {
		if slices.Contains(e.Engines, engine) {
			out = append(out, e.Name)
		}
	}
	return out
}

// Register adds a world; registering a name twice replaces the earlier entry.
func (r *Registry) Register(e Entry) {
	r.entries = slices.DeleteFunc(r.entries, func(x Entry) bool { return x.Name == e.Name })
	r.entries = append(r.entries, e)
	slices.SortFunc(r.entries, func(a, b Entry) int { return strings.Compare(a.Name, b.Name) })
	for _, ep := range e.Endpoints {
		if !slices.ContainsFunc(r.endpoints, func(x Endpoint) bool { return x.Name == ep.Name }) {
			r.endpoints = append(r.endpoints, ep)
		}
	}
}

// Lookup returns the named world or an error listing the valid names.
func (r *Registry) Lookup(name string) (Entry, error) {
	for _, e := range r.entries {
		if e.Name == name {
			return e, nil
		}
	}
	return Entry{}, fmt.Errorf("unknown world %q (valid: %s)", name, strings.Join(r.Names(), ", "))
}

// Names returns the registered names in order.
func (r *Registry) Names() []string {
	names := make([]string, len(r.entries))
	for i, e := range r.entries {
		names[i] = e.Name
	}
	return names
}

// Entries returns the registered worlds in name order.
func (r *Registry) Entries() []Entry { return slices.Clone(r.entries) }

// WithGuard returns the names of the worlds that can apply guard g.
func (r *Registry) WithGuard(g eventlog.Guard) []string {
	var out []string
	for _, e := range r.entries {
		if slices.Contains(e.Guards, g) {
			out = append(out, e.Name)
		}
	}
	return out
}
