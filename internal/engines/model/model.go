// Package model is the plug-in of stormctl's model of the replay runtime
// (package engine): the default engine, which runs on every world and
// takes a condition's knobs as its policy.
package model

import (
	"context"
	"time"

	"github.com/stormctl/stormctl/internal/engine"
	"github.com/stormctl/stormctl/internal/engines"
)

// Name is how --engine and engine= name the model.
const Name = "model"

// Plugin is the model as the engine registry holds it.
type Plugin struct{}

var (
	_ engines.Plugin = Plugin{}
	_ engines.Engine = (*engine.Runtime)(nil)
)

// Name implements engines.Plugin.
func (Plugin) Name() string { return Name }

// Summary implements engines.Plugin.
func (Plugin) Summary() string {
	return "stormctl's model of the replay runtime, on every world; a condition's knobs are its policy"
}

// Traits implements engines.Plugin: the model.
func (Plugin) Traits() engines.Traits { return engines.Traits{Model: true} }

// Opener implements engines.Plugin; the model takes no storm options.
func (Plugin) Opener(engines.Options) (engines.Open, error) { return Open, nil }

// Open opens the model of the replay runtime on the cell's world.
func Open(ctx context.Context, s engines.Setup) (engines.Engine, error) {
	return engine.New(ctx, engine.Config{
		World: s.World, Program: s.Scenario.Program, Workflow: s.Scenario.Name, SharedTokens: s.Scenario.SharedTokens, Steps: s.Scenario.Steps, Knobs: s.Knobs,
		Concurrency: s.Concurrency, PageSize: s.PageSize,
		TimerTick: engine.TimerTickAt(s.TimeScale), SealAfter: SealAfter(s.Knobs.Policy, s.TimeScale),
		FenceRedelivery: time.Duration(float64(engine.DefaultFenceRedelivery) * s.TimeScale),
		Logger:          s.Logger,
	}), nil
}

// SealAfter is a condition's seal timeout at the storm's time scale.
func SealAfter(p engine.Policy, scale float64) time.Duration {
	d := p.SealAfter
	if d <= 0 {
		d = engine.DefaultSealAfter
	}
	return time.Duration(float64(d) * scale)
}
