package cli

import (
	"github.com/spf13/pflag"

	"github.com/stormctl/stormctl/internal/nemesis"
	"github.com/stormctl/stormctl/worlds"
)

// addNemesisFlags registers --nemesis and its bounds on fl; reg's worlds
// say which kinds they offer.
func addNemesisFlags(fl *pflag.FlagSet, c *nemesis.Config, reg *worlds.Registry) {
	fl.Var(&c.Kinds, "nemesis", "break the worlds' stores during the storm, on this machine's loopback only (off by default): "+
		"all, or kinds of "+nemesisKindsHelp(reg)+". Faults and the runs they overlap are recorded in storm.json and runs.jsonl")
	fl.IntVar(&c.Faults, "nemesis-faults", nemesis.DefaultFaults, "faults of each --nemesis kind per world, one at a time")
	fl.DurationVar(&c.Window, "nemesis-window", nemesis.DefaultWindow, "longest fault: each lasts between half of this and all of it")
	fl.DurationVar(&c.Gap, "nemesis-gap", nemesis.DefaultGap, "mean quiet time before each fault (drawn between half and 1.5 times it)")
}

// nemesisOf is the storm's nemesis from its flags: the zero Config (off)
// unless --nemesis names a kind, so that a storm without one records none.
func nemesisOf(c nemesis.Config) nemesis.Config {
	if !c.On() {
		return nemesis.Config{}
	}
	return c
}
