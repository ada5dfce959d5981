// Package builtinengines registers the engines built into stormctl: one line an
// engine. The first is the default of a storm that names none.
package builtinengines

import (
	"github.com/stormctl/stormctl/internal/devkit/devkitengine"
	"github.com/stormctl/stormctl/internal/engines"
	"github.com/stormctl/stormctl/internal/engines/model"
)

// Engines returns a registry of the built-in engines.
func Engines() *engines.Registry {
	return engines.NewRegistry(
		model.Plugin{},
		devkitengine.Plugin{},
	)
}

// Traits returns the traits of the built-in engine called name ("" the
// default); an unknown name has none.
func Traits(name string) engines.Traits { return Engines().Traits(name) }
