// Package engines is the seam between a storm and the engines that run its
// runs, and their registry. An engine is a plug-in, as a world is: it
// registers once (internal/engines/builtinengines), says what it is by its traits,
// owns its options, defaults, channel parsing and the checks of the worlds
// it runs on through the optional capabilities below, and opens a cell's
// engine from a Setup. Nothing outside an engine's own package switches on
// its name: callers ask the registry for a Plugin and ask it.
package engines

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"time"

	"github.com/stormctl/stormctl/internal/engine"
	"github.com/stormctl/stormctl/internal/engines/rerun"
	"github.com/stormctl/stormctl/internal/eventlog"
	"github.com/stormctl/stormctl/internal/history"
	"github.com/stormctl/stormctl/internal/prodlog"
	"github.com/stormctl/stormctl/scenarios"
	"github.com/stormctl/stormctl/worlds"
)

// Engine runs a cell's workflow runs: our model of the replay runtime
// (*engine.Runtime), or the published runtime in host processes of its
// own (the devkit engine). The runner starts each run, lets the scenario's
// driver work on it (scenarios.Hooks), waits for its end, and hands what
// it left (the engine's RunStats among it) to the post-run pipeline:
// nothing else of an engine reaches a run's record.
type Engine interface {
	// Start starts a run of input and returns its id, which every
	// artifact names it by. id is the one the runner minted (RunID, from
	// the storm's seed); an engine whose runtime mints its own ignores it
	// and returns that.
	Start(ctx context.Context, id string, input any) (string, error)
	// ResumeHook and Log are what a scenario's driver may do to a run.
	scenarios.Hooks
	// Done is closed once the engine has seen the run end.
	Done(runID string) <-chan struct{}
	// Finish stops the run's work, waits for it and returns what the
	// engine did for the run. An engine's own failures on a run (its
	// transport, its process) are in its stats as infrastructure
	// evidence, never an outcome.
	Finish(runID string) history.RunStats
	// Panicked is the first bug the engine met (a panic on one of its
	// goroutines), nil if none: the storm stops on it.
	Panicked() error
	// Close stops the engine's work and waits for it.
	Close()
}

// Setup is what opening a cell's engine takes.
type Setup struct {
	Key history.CellKey
	// World is the cell's world, every operation made through it
	// recorded into the storm's history. Sink takes the operations an
	// engine records itself (a runtime that reaches its store from a
	// process of its own), under the run ids Start returned.
	World worlds.World
	Sink  worlds.Sink
	// Scenario is the cell's workflow program and steps; Knobs its
	// condition's.
	Scenario scenarios.Scenario
	Knobs    engine.Knobs
	// Concurrency bounds a run's overlapping invocations, PageSize the
	// events each log load asks for; TimeScale is the storm's.
	Concurrency int
	PageSize    int
	TimeScale   float64
	Logger      *slog.Logger
}

// Open opens a cell's engine; the engine's work ends with ctx or Close.
type Open func(ctx context.Context, s Setup) (Engine, error)

// Collector is implemented by an engine whose runs are stored where the
// cell's world cannot read them (a runtime that opens its own store): the
// runner collects an ended run from the engine instead of the world.
type Collector interface {
	Collect(ctx context.Context, runID string) worlds.Collected
}

// Schemer is implemented by an engine whose runtime orders its runs' logs
// by a scheme of its own (the published 5.0 packages' slot ids): the
// pipeline reads the cell's runs by it instead of the condition's.
type Schemer interface {
	Scheme() eventlog.Scheme
}

// Describer is implemented by an engine that can say what it ran (a
// published runtime's versions): storm.json keeps it per cell.
type Describer interface {
	Describe() Runtime
}

// ReplayOpener is implemented by an open engine whose runs' refused writes
// the storm judges by counterfactual replays through the engine's own
// runtime (internal/analysis/counterfactual), once the storm's runs have
// ended: OpenReplay opens that runtime (the cell's own packages) for
// re-executing invocations of the cell's runs, until Close.
type ReplayOpener interface {
	OpenReplay(ctx context.Context) (Rerun, error)
}

// Loader is implemented by an engine that can say how busy it is: the
// runner admits a new run of its cells only while there is room.
type Loader interface {
	Load() Load
}

// Load is how busy an engine is where its next run would go (the devkit
// engine: its least busy host process).
type Load struct {
	// Busy is the event loop's recent utilisation (0 to 1), Delay its
	// recent worst loop delay; Known says they were reported lately.
	Busy  float64
	Delay time.Duration
	Known bool
	// Runs counts the runs live there.
	Runs int
}

// Runtime is what ran a cell when it was not (only) stormctl's model: the
// engine, where its packages came from ("published" or a checkout's
// directory), their versions by package name (and Node's under "node"),
// its channel, and the scheme its logs are ordered by. storm.json keeps
// one per such cell.
type Runtime struct {
	Cell     history.CellKey   `json:"cell"`
	Engine   string            `json:"engine"`
	Channel  string            `json:"channel,omitempty"`
	Source   string            `json:"source"`
	Versions map[string]string `json:"versions,omitempty"`
	Scheme   string            `json:"scheme"`
	// Queue says which queue delivered the runtime's messages (a package
	// world's own, or world-local's composed with its storage); "" in a
	// storm.json from before it was stored.
	Queue string `json:"queue,omitempty"`
	// Hosts is how many host processes the cell's runs were spread over
	// (each run's stats.harness.host says which); 0 in a storm.json from
	// before runs were spread.
	Hosts int `json:"hosts,omitempty"`
	// Spec is the World contract version the runtime speaks (core's
	// SPEC_VERSION_CURRENT as its host reports it); each run's record says
	// the one it was created under (spec_version). Absent in a storm.json
	// from before it was stored, or for a runtime that reports none.
	Spec *int `json:"spec,omitempty"`
	// BatchCreates says the world offered the runtime events.createBatch
	// (world-vercel 5.0): a replay of the cell's runs offers it too, as
	// core 5.0 decides per suspension whether to batch by whether the
	// world has it. False in a storm.json from before it was stored.
	BatchCreates bool `json:"batch_creates,omitempty"`
}

// Options are the storm's settings an engine may take when it opens its
// cells; each engine reads its own and ignores the rest.
type Options struct {
	// Channel is --devkit-channel as given ("" for the engine's default).
	Channel string
	// Hosts is --hosts (0: the engine decides).
	Hosts int
	// Endpoints are the storm's endpoint flags by name (--devkit-dir,
	// --pg-url, ...) as storm.json keeps them (secrets removed).
	Endpoints map[string]string
	// Progress gets the lines of long first-time work (an install).
	Progress io.Writer
	Logger   *slog.Logger
}

// Traits say what kind of engine a plug-in is, for the tools that treat
// the model and the published runtime differently.
type Traits struct {
	// Model: the engine is stormctl's model of the replay runtime. Its
	// runs re-execute through the model from the pages they read
	// (explain's reference replay, replay, shrink), and a condition's
	// knobs are its policy.
	Model bool
	// Published: the engine runs the published runtime, the real side of
	// a fidelity pair. Its runtime mints its own run ids and reads its
	// own scheme; a stored run replays through its Replayer, never the
	// model.
	Published bool
}

// Plugin is one engine as the registry holds it.
type Plugin interface {
	// Name is how --engine and a condition's engine= knob name it.
	Name() string
	// Summary is a line for help and listings.
	Summary() string
	// Traits say what kind of engine it is.
	Traits() Traits
	// Opener returns what opens each cell of a storm run with opts; an
	// error is the user's (a bad channel), said in one line.
	Opener(opts Options) (Open, error)
}

// Defaults are the storm settings an engine may default when the user
// gave none: its conditions and its latency profile.
type Defaults struct {
	Conditions []string
	Latency    string
}

// Defaulter is implemented by an engine with defaults of its own for what
// the flags leave unset (the devkit engine: condition main, latency none).
// given says whether the user gave a flag.
type Defaulter interface {
	Defaults(given func(flag string) bool, d *Defaults)
}

// StormChecker is implemented by an engine that refuses some storms before
// they start: a channel it does not know, a world its packages cannot
// serve. worldNames are the storm's --world entries.
type StormChecker interface {
	CheckStorm(opts Options, worldNames []string) error
}

// KnobChecker is implemented by an engine that refuses condition knobs it
// does not run (the published runtime runs only main's).
type KnobChecker interface {
	CheckKnobs(k engine.Knobs) error
}

// WorldSupport is implemented by an engine that can say, for `stormctl
// worlds`, what it runs on the world named world (the devkit engine: per
// channel, the pinned core and world package); "" when it runs nothing
// there, and the listing leaves it out.
type WorldSupport interface {
	Support(world string) string
}

// MaxHosts bounds --hosts, the host processes an engine may spread one
// cell's runs over.
const MaxHosts = 16

// Rerunner is implemented by an engine whose runs replay through its own
// runtime rather than the model (the published runtime): replay, shrink
// and explain re-execute a recorded invocation through what it opens.
type Rerunner interface {
	// Rerunner opens the runtime rt describes (storm.json's record of a
	// cell of world and scenario), installing it the first time (lines on
	// progress say so). An error wrapping ErrCannotRerun is the input's
	// (a runtime it cannot reopen), said in one line; node or npm missing
	// wraps worlds.ErrPrerequisite.
	Rerunner(ctx context.Context, rt Runtime, world, scenario string, progress io.Writer) (Rerun, error)
	// LogRuntime is the runtime that replays a production log l its
	// runtime wrote: the pinned packages for l's world and contract.
	LogRuntime(l prodlog.Log) Runtime
}

// Rerun is an opened runtime that re-executes recorded invocations, until
// Close.
type Rerun interface {
	rerun.Runtime
	Close()
}

// ErrCannotRerun is wrapped by a Rerunner's refusal of a runtime it cannot
// reopen: packages it does not pin, versions its kit does not hold.
var ErrCannotRerun = errors.New("the runtime cannot be reopened")

// CannotRerun marks err as a Rerunner's refusal: errors.Is finds
// ErrCannotRerun and err's own chain, and the message is err's alone.
func CannotRerun(err error) error { return &cannotRerun{err: err} }

type cannotRerun struct{ err error }

func (c *cannotRerun) Error() string   { return c.err.Error() }
func (c *cannotRerun) Unwrap() []error { return []error{ErrCannotRerun, c.err} }

// PackageHost is implemented by an engine that hosts package:… worlds
// (any World package, through a sidecar of its own): CheckPackage refuses,
// in one line, a package it cannot host as a storm of opts would run it,
// given the contract the package claims (spec, nil when it exports none).
type PackageHost interface {
	CheckPackage(opts Options, spec *int) error
}
