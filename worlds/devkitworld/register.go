package devkitworld

import (
	"context"

	"github.com/stormctl/stormctl/internal/eventlog"
	"github.com/stormctl/stormctl/worlds"
	"github.com/stormctl/stormctl/worlds/postgres"
)

// Names of the devkit worlds in the registry.
const (
	LocalName    = "devkit-local"
	PostgresName = "devkit-postgres"
	// VercelName is registered by package devkitvercel, which adds the
	// backend the package calls.
	VercelName = "devkit-vercel"
)

// Register adds devkit-local and devkit-postgres to r, both served by h.
// The packages implement the legacy contract only: scheme ulid, no fence,
// no guard; the conditions whose other knobs are engine-side (ids, wake,
// admission) run on them.
func Register(r *worlds.Registry, h *Host) {
	for _, k := range []struct {
		kind      Kind
		name      string
		desc      string
		endpoints []worlds.Endpoint
	}{
		{Local, LocalName, "the published @workflow/world-local (or --devkit-dir's), run in a Node sidecar: one JSON file per event, listed by a directory scan", []worlds.Endpoint{DirFlag}},
		{Postgres, PostgresName, "the published @workflow/world-postgres (or --devkit-dir's), run in a Node sidecar against its own embedded PostgreSQL (or a database of its own on --pg-url's server)", []worlds.Endpoint{DirFlag, postgres.URLFlag}},
	} {
		r.Register(worlds.Entry{
			Name:        k.name,
			Description: k.desc,
			Schemes:     []string{string(eventlog.SchemeULID)},
			Limits:      Limits(k.kind),
			Endpoints:   k.endpoints,
			Engines:     []string{"devkit"},
			OwnWindows:  true,
			Open: func(ctx context.Context, opts worlds.Options) (worlds.World, error) {
				w, err := Open(ctx, h, k.kind, opts)
				if err != nil {
					return nil, err
				}
				return w, nil
			},
		})
	}
}

// KindOf returns the package kind of the devkit world named name.
func KindOf(name string) (Kind, bool) {
	switch name {
	case LocalName:
		return Local, true
	case PostgresName:
		return Postgres, true
	case VercelName:
		return Vercel, true
	}
	return "", false
}
