package storm

import (
	"cmp"
	"context"
	"log/slog"
	"time"

	"github.com/stormctl/stormctl/internal/engine"
	"github.com/stormctl/stormctl/internal/eventlog"
	"github.com/stormctl/stormctl/internal/history"
	"github.com/stormctl/stormctl/internal/storm/stormdir"
	"github.com/stormctl/stormctl/scenarios"
	"github.com/stormctl/stormctl/worlds"
)

// Engine runs a cell's workflow runs: our model of the replay runtime
// (*engine.Runtime) today, the real runtime in a process of its own next.
// The runner starts each run, lets the scenario's driver work on it
// (scenarios.Hooks), waits for its end, and hands what it left (the
// engine's RunStats among it) to the post-run pipeline: nothing else of an
// engine reaches a run's record.
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

var _ Engine = (*engine.Runtime)(nil)

// EngineSetup is what opening a cell's engine takes.
type EngineSetup struct {
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

// OpenEngine opens a cell's engine; the engine's work ends with ctx or
// Close.
type OpenEngine func(ctx context.Context, s EngineSetup) (Engine, error)

// DefaultEngine is the engine of a condition that names none in a storm
// whose config names none (--engine).
const DefaultEngine = engine.EngineModel

// EngineOf is the engine that runs a condition's runs in a storm of c: the
// condition's own (engine=...), else the storm's (--engine), else the
// model.
func EngineOf(c stormdir.Config, k engine.Knobs) string {
	return cmp.Or(k.Engine, c.Engine, DefaultEngine)
}

// Engines lists the engines a storm can run without help, by name: the
// model. An engine that needs what this package must not import (the
// devkit engine, which runs a Node process of its own) is added to
// Deps.Engines by its caller.
func Engines() map[string]OpenEngine {
	return map[string]OpenEngine{
		DefaultEngine: openModel,
	}
}

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
	Describe() stormdir.Runtime
}

// Loader is implemented by an engine that can say how busy it is: the
// runner admits a new run of its cells only while there is room
// (Admission).
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

// openModel opens our model of the replay runtime on the cell's world.
func openModel(ctx context.Context, s EngineSetup) (Engine, error) {
	return engine.New(ctx, engine.Config{
		World: s.World, Program: s.Scenario.Program, Workflow: s.Scenario.Name, Steps: s.Scenario.Steps, Knobs: s.Knobs,
		Concurrency: s.Concurrency, PageSize: s.PageSize,
		TimerTick: engine.TimerTickAt(s.TimeScale), SealAfter: sealAfter(s.Knobs.Policy, s.TimeScale),
		Logger: s.Logger,
	}), nil
}

// sealAfter is a condition's seal timeout at the storm's time scale.
func sealAfter(p engine.Policy, scale float64) time.Duration {
	d := p.SealAfter
	if d <= 0 {
		d = engine.DefaultSealAfter
	}
	return time.Duration(float64(d) * scale)
}
