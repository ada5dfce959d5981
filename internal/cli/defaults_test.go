package cli_test

import (
	"maps"
	"reflect"
	"testing"

	"github.com/spf13/pflag"

	"github.com/stormctl/stormctl/internal/cli"
	"github.com/stormctl/stormctl/internal/nemesis"
	"github.com/stormctl/stormctl/internal/storm/stormdir"
	"github.com/stormctl/stormctl/worlds"
)

// TestFlagDefaultsAreTheConfigs: a storm given no flag is the config's own
// defaults (stormdir.Config.Defaults of a zero Config, seed
// stormdir.DefaultSeed; --out left empty for a fresh directory); the
// nemesis bounds are nemesis.Config's; every endpoint flag starts at its
// declaration's default; fidelity's storm flags are a storm's.
func TestFlagDefaultsAreTheConfigs(t *testing.T) {
	got := parseOptions(t, cli.NewCmdStorm)
	want := stormdir.Config{}.Defaults()
	want.Out, want.Seed = "", stormdir.DefaultSeed
	if !reflect.DeepEqual(got.Config, want) {
		t.Errorf("storm's flags give\n%+v\nthe config's defaults are\n%+v", got.Config, want)
	}
	on := nemesis.Config{Kinds: nemesis.KindList{nemesis.Latency}}
	flags := nemesis.Config{Kinds: on.Kinds, Faults: got.Nemesis.Faults, Window: got.Nemesis.Window, Gap: got.Nemesis.Gap}
	if !reflect.DeepEqual(flags, on.Defaults()) {
		t.Errorf("--nemesis-faults, -window, -gap default to %d, %s, %s; the nemesis config's are %d, %s, %s",
			got.Nemesis.Faults, got.Nemesis.Window, got.Nemesis.Gap, on.Defaults().Faults, on.Defaults().Window, on.Defaults().Gap)
	}
	reg, stop := cli.DefaultWorlds(worlds.Setup{}, nil)
	defer func() { _ = stop() }()
	wantEndpoints := worlds.Values{}
	for _, s := range reg.Specs() {
		if s.Default != "" {
			wantEndpoints[s.Name] = s.Default
		}
	}
	if !maps.Equal(got.Endpoints, wantEndpoints) {
		t.Errorf("endpoint flags give %v, their declarations %v", got.Endpoints, wantEndpoints)
	}

	fid := parseOptions(t, cli.NewCmdFidelity)
	if fid.Runs != want.Runs || fid.TimeScale != want.TimeScale || fid.Timeout != want.Timeout || fid.RunsInFlight != want.RunsInFlight {
		t.Errorf("fidelity's --runs, --time-scale, --timeout, --runs-in-flight default to %d, %g, %s, %d; a storm's are %d, %g, %s, %d",
			fid.Runs, fid.TimeScale, fid.Timeout, fid.RunsInFlight, want.Runs, want.TimeScale, want.Timeout, want.RunsInFlight)
	}
	if !maps.Equal(fid.Endpoints, wantEndpoints) {
		t.Errorf("fidelity's endpoint flags give %v, their declarations %v", fid.Endpoints, wantEndpoints)
	}
}

// TestEndpointFlagsAreDeclared: storm and fidelity declare every endpoint
// flag the worlds declare, with the worlds' help, as string flags.
func TestEndpointFlagsAreDeclared(t *testing.T) {
	reg, stop := cli.DefaultWorlds(worlds.Setup{}, nil)
	defer func() { _ = stop() }()
	f, _, _ := testFactory()
	for _, cmd := range []*pflag.FlagSet{cli.NewCmdStorm(f, nil).Flags(), cli.NewCmdFidelity(f, nil).Flags()} {
		for _, s := range reg.Specs() {
			fl := cmd.Lookup(s.Name)
			if fl == nil || fl.Usage != s.Help || fl.Value.Type() != "string" || fl.DefValue != s.Default {
				t.Errorf("--%s: declared as %+v, want the world's declaration %+v", s.Name, fl, s)
			}
		}
	}
}
