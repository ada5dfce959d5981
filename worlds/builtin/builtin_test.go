package builtin_test

import (
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/stormctl/stormctl/eventlog"
	"github.com/stormctl/stormctl/nemesis"
	"github.com/stormctl/stormctl/worlds"
	"github.com/stormctl/stormctl/worlds/builtin"
	"github.com/stormctl/stormctl/worlds/devkit"
	"github.com/stormctl/stormctl/worlds/postgres"
)

// surface is the registry of the built-in worlds set up with nothing:
// their names, endpoint flags and fault kinds.
func surface(t *testing.T) *worlds.Registry {
	t.Helper()
	reg, stop := builtin.Registry(worlds.Setup{}, nil)
	t.Cleanup(func() { _ = stop() })
	return reg
}

// nonEmpty is v without its empty values (a flag not given).
func nonEmpty(v worlds.Values) worlds.Values {
	out := worlds.Values{}
	for k, x := range v {
		if x != "" {
			out[k] = x
		}
	}
	return out
}

// TestRegistry pins what the built-in worlds declare of their surface:
// their names, their endpoint flags in the order storm.json stores them
// and every check runs, the worlds each flag points, and the fault kinds
// each offers.
func TestRegistry(t *testing.T) {
	reg := surface(t)
	if got, want := reg.Names(), []string{"devkit-local", "devkit-postgres", "local", "postgres", "vercel"}; !slices.Equal(got, want) {
		t.Errorf("worlds %v, want %v", got, want)
	}
	var flags []string
	for _, e := range reg.Endpoints() {
		flags = append(flags, e.Name)
	}
	if want := []string{"pg-url", "ingest-url", "dynamo-endpoint", "redis-url", "devkit-dir"}; !slices.Equal(flags, want) {
		t.Errorf("endpoint flags %v, want %v", flags, want)
	}
	using := map[string][]string{
		"pg-url": {"postgres"}, "ingest-url": {"vercel"}, "dynamo-endpoint": {"vercel"}, "redis-url": {"vercel"},
		"devkit-dir": {"devkit-local", "devkit-postgres"},
	}
	for flag, want := range using {
		if got := reg.Using(flag); !slices.Equal(got, want) {
			t.Errorf("--%s points %v, want %v", flag, got, want)
		}
	}
	offers := map[string][]nemesis.Kind{
		"postgres": {nemesis.PGRestart, nemesis.PGTerminate, nemesis.Latency},
		"vercel":   {nemesis.Ingest503, nemesis.DynamoPause, nemesis.RedisDown, nemesis.Latency},
		"local":    {nemesis.FSUnavailable},
	}
	for w, got := range reg.Offers() {
		if !slices.Equal(got, offers[w]) {
			t.Errorf("world %s offers %v, want %v", w, got, offers[w])
		}
	}
	for _, k := range nemesis.Kinds {
		if len(nemesis.WorldsOf(k, reg.Offers())) == 0 {
			t.Errorf("no built-in world offers fault kind %s", k)
		}
	}
}

// TestPrerequisites: what a built-in world says when the machine lacks
// what it needs matches worlds.ErrPrerequisite (exit 3), wrapped or not,
// and still matches its own sentinel; an unreachable store does not.
func TestPrerequisites(t *testing.T) {
	for _, sentinel := range []error{postgres.ErrNoPostgres, devkit.ErrNoNode, devkit.ErrInstall, devkit.ErrWindowNotSpent} {
		err := error(&devkit.WindowError{World: "devkit-local"})
		if sentinel != devkit.ErrWindowNotSpent {
			err = fmt.Errorf("open: %w", sentinel)
		}
		if !errors.Is(err, worlds.ErrPrerequisite) || !errors.Is(err, sentinel) {
			t.Errorf("%q: errors.Is(ErrPrerequisite) %v, errors.Is(its sentinel) %v; want both", err, errors.Is(err, worlds.ErrPrerequisite), errors.Is(err, sentinel))
		}
	}
	if errors.Is(eventlog.Unavailable("read", errors.New("down")), worlds.ErrPrerequisite) {
		t.Error("an unreachable store matches ErrPrerequisite")
	}
}
