package storm

import (
	"cmp"

	"github.com/stormctl/stormctl/internal/engine"
	"github.com/stormctl/stormctl/internal/engines"
	"github.com/stormctl/stormctl/internal/storm/stormdir"
)

// EngineOf is the engine that runs a condition's runs in a storm of c: the
// condition's own (engine=...), else the storm's (--engine), else the
// registry's default.
func EngineOf(reg *engines.Registry, c stormdir.Config, k engine.Knobs) string {
	if d := reg.Default(); d != nil {
		return cmp.Or(k.Engine, c.Engine, d.Name())
	}
	return cmp.Or(k.Engine, c.Engine)
}
