package devkitworld

import (
	"log/slog"
	"path/filepath"

	"github.com/stormctl/stormctl/internal/base/flagspec"
	"github.com/stormctl/stormctl/worlds"
	"github.com/stormctl/stormctl/worlds/devkitworld/sidecar"
	"github.com/stormctl/stormctl/worlds/postgres"
)

// DirFlag is --devkit-dir (Config.Dir): a vercel/workflow checkout whose
// built packages both devkit worlds run instead of the published ones. It
// is stored absolute (a resumed storm may run from another directory) and
// never masked: a path holds no password.
var DirFlag = worlds.Endpoint{
	String: flagspec.String{Name: "devkit-dir",
		Help: "a vercel/workflow checkout whose built packages (packages/world-local/dist, packages/world-postgres/dist) the devkit worlds run instead of the published ones",
		Validate: func(v string) error {
			_, err := sidecar.CheckoutLayout(v)
			return err
		}},
	What:   "checkout",
	Server: absDir,
	Store: func(v string) (string, bool) {
		if abs, err := filepath.Abs(v); err == nil {
			return abs, false
		}
		return v, false
	},
}

// Package is the devkit worlds as stormctl builds them in: both served by
// one Host (one sidecar), on the packages of --devkit-dir or the published
// ones.
var Package = worlds.Package{Register: func(r *worlds.Registry, s worlds.Setup, logger *slog.Logger) func() error {
	h := NewHost(Config{Dir: s.Endpoints[DirFlag.Name], URL: s.Endpoints[postgres.URLFlag.Name], Keep: s.Keep, Progress: s.Progress, Logger: logger})
	Register(r, h)
	return h.Stop
}}

// absDir is a directory's absolute path (as given when it has none).
func absDir(v string) string {
	abs, err := filepath.Abs(v)
	if err != nil {
		return filepath.Clean(v)
	}
	return abs
}
