package builtin_test

import (
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/stormctl/stormctl/internal/eventlog"
	"github.com/stormctl/stormctl/internal/nemesis"
	"github.com/stormctl/stormctl/worlds"
	"github.com/stormctl/stormctl/worlds/builtin"
	"github.com/stormctl/stormctl/worlds/devkitworld"
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

// builtinFlags are the built-in worlds' endpoint flags, in the order
// storm.json stores them.
var builtinFlags = []string{"pg-url", "ingest-url", "dynamo-endpoint", "redis-url", "devkit-dir"}

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
// each offers. A world added later adds to these; it changes none of them.
func TestRegistry(t *testing.T) {
	reg := surface(t)
	for _, w := range []string{"devkit-local", "devkit-postgres", "devkit-vercel", "local", "postgres", "vercel"} {
		if !slices.Contains(reg.Names(), w) {
			t.Errorf("world %s is not registered (got %v)", w, reg.Names())
		}
	}
	var flags []string
	for _, e := range reg.Endpoints() {
		if slices.Contains(builtinFlags, e.Name) {
			flags = append(flags, e.Name)
		}
	}
	if !slices.Equal(flags, builtinFlags) {
		t.Errorf("endpoint flags %v, want %v in this order", flags, builtinFlags)
	}
	using := map[string][]string{
		"pg-url": {"devkit-postgres", "postgres"}, "ingest-url": {"vercel"}, "dynamo-endpoint": {"vercel"}, "redis-url": {"vercel"},
		"devkit-dir": {"devkit-local", "devkit-postgres"},
	}
	for flag, want := range using {
		if got := reg.Using(flag); !slices.Equal(got, want) {
			t.Errorf("--%s points %v, want %v", flag, got, want)
		}
	}
	offers := map[string][]nemesis.Kind{
		"postgres":     {nemesis.PGRestart, nemesis.PGTerminate, nemesis.Latency},
		"vercel":       {nemesis.Ingest503, nemesis.DynamoPause, nemesis.RedisDown, nemesis.Latency},
		"local":        {nemesis.FSUnavailable},
		"devkit-local": nil, "devkit-postgres": nil,
		"devkit-vercel": {nemesis.Ingest503, nemesis.DynamoPause, nemesis.Latency},
	}
	for w, want := range offers {
		if got := reg.Offers()[w]; !slices.Equal(got, want) {
			t.Errorf("world %s offers %v, want %v", w, got, want)
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
	for _, sentinel := range []error{postgres.ErrNoPostgres, devkitworld.ErrNoNode, devkitworld.ErrInstall, devkitworld.ErrWindowNotSpent} {
		err := error(&devkitworld.WindowError{World: "devkit-local"})
		if sentinel != devkitworld.ErrWindowNotSpent {
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
