// Package builtin is the list of the worlds built into stormctl: the one
// place a new world package is added (a line in packages). Everything the
// command line offers of a world (its name, its endpoint flags and their
// checks, its fault kinds) comes from the package's registration.
package builtin

import (
	"errors"
	"log/slog"

	"github.com/stormctl/stormctl/internal/base/leftover"
	"github.com/stormctl/stormctl/worlds"
	"github.com/stormctl/stormctl/worlds/devkitvercel"
	"github.com/stormctl/stormctl/worlds/devkitworld"
	"github.com/stormctl/stormctl/worlds/local"
	"github.com/stormctl/stormctl/worlds/pkgworld"
	"github.com/stormctl/stormctl/worlds/postgres"
	"github.com/stormctl/stormctl/worlds/vercel"
)

// packages are the built-in world packages, in the order their endpoint
// flags are checked and stored.
var packages = []worlds.Package{
	local.Package,
	postgres.Package,
	vercel.Package,
	devkitworld.Package,
	devkitvercel.Package,
}

// Registry registers every built-in world, set up from s, and returns a
// function that releases what they started (an embedded PostgreSQL
// cluster, the devkit sidecar). Nothing is started until a world is
// opened, so the registry of a zero Setup tells the worlds' names and
// endpoint flags at no cost. A nil logger discards.
func Registry(s worlds.Setup, logger *slog.Logger) (*worlds.Registry, func() error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	r := &worlds.Registry{}
	r.AddForm(pkgworld.Form) // package:NAME worlds register when a storm names them
	stops := make([]func() error, 0, len(packages))
	for _, p := range packages {
		stops = append(stops, p.Register(r, s, logger))
	}
	return r, func() error {
		var errs []error
		for _, stop := range stops {
			errs = append(errs, stop())
		}
		return errors.Join(errs...)
	}
}

// Sweep removes what killed stormctl processes left of the built-in
// worlds' own (embedded clusters whose watcher is gone too).
func Sweep() ([]leftover.Removed, error) {
	var removed []leftover.Removed
	var errs []error
	for _, p := range packages {
		if p.Sweep == nil {
			continue
		}
		r, err := p.Sweep()
		removed, errs = append(removed, r...), append(errs, err)
	}
	return removed, errors.Join(errs...)
}
