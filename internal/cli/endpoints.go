package cli

import (
	"github.com/spf13/pflag"

	"github.com/stormctl/stormctl/internal/base/flagspec"
	"github.com/stormctl/stormctl/worlds"
)

// This file declares flags their owners declare (flagspec.String): the
// worlds' endpoint flags (worlds.Endpoint), each world package's own.
// What a flag means, how its value is checked, stored for --resume,
// checked under --nemesis and warned about when unused is the world's to
// say; the command line only declares the flags and hands their values on.

// addSpecs declares the flags specs on fl, their values going into v.
func addSpecs(fl *pflag.FlagSet, specs []flagspec.String, v flagspec.Values) {
	for _, s := range specs {
		fl.Var(flagspec.NewValue(s, v), s.Name, s.Help)
	}
}

// addEndpointFlags declares the built-in worlds' endpoint flags on fl, their
// values going into v.
func addEndpointFlags(fl *pflag.FlagSet, v worlds.Values) {
	addSpecs(fl, declaredWorlds().Specs(), v)
}

// declaredWorlds is the registry of the built-in worlds set up with
// nothing: their names, endpoint flags and fault kinds. Registering them
// starts nothing.
func declaredWorlds() *worlds.Registry {
	reg, stop := DefaultWorlds(worlds.Setup{}, nil)
	_ = stop() // nothing was started
	return reg
}

// endpointFlagNames are the names of the built-in worlds' endpoint flags,
// in their order.
func endpointFlagNames() []string {
	var names []string
	for _, s := range declaredWorlds().Specs() {
		names = append(names, s.Name)
	}
	return names
}
