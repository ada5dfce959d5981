package cli

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"

	"github.com/stormctl/stormctl/internal/engines"
	"github.com/stormctl/stormctl/worlds"
	"github.com/stormctl/stormctl/worlds/pkgworld"
)

// worldEnvHelp is --world-env's help.
const worldEnvHelp = "KEY=VALUE added to the environment of a package:… world's sidecar (and of the runtime hosting it under --engine devkit), which the package reads its configuration from (e.g. WORKFLOW_REDIS_URI=redis://127.0.0.1:6379 for @workflow-worlds/redis, WORKFLOW_POSTGRES_URL for @workflow/world-postgres's server); repeatable"

// packageWorldHelp is what --world says of package:… worlds.
const packageWorldHelp = "; package:NAME[@VERSION] (a World package from the npm registry, installed into ~/.cache/stormctl/packages) or package:PATH (a local build) runs a World package through its factory (model engine; --engine devkit: the published runtime hosting it)"

// openPackage installs the package world names and opens it (its sidecar
// starts on the first Open), with env added to its sidecar's environment.
// The errors are typed for the exit code: a bad name, a bad --world-env
// or a package npm cannot fetch is bad input (exit 2); no node or npm,
// or npm failing otherwise, infrastructure (exit 3).
func openPackage(ctx context.Context, io *IOStreams, name string, po pkgworld.Options, logger *slog.Logger) (*pkgworld.World, error) {
	ref, err := pkgworld.Parse(name)
	if err != nil {
		return nil, &UsageError{Err: fmt.Errorf("--world: %w", err)}
	}
	if err := pkgworld.ParseEnv(po.Env); err != nil {
		return nil, &UsageError{Err: err}
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = os.TempDir()
	}
	in, err := pkgworld.Install(ctx, cache, ref, io.ErrOut)
	if err != nil {
		return nil, packageError(err)
	}
	po.CacheDir, po.Progress, po.Logger = cache, io.ErrOut, logger
	w, err := pkgworld.Open(ctx, in, po)
	if err != nil {
		return nil, packageError(err)
	}
	return w, nil
}

// packageError types a package world's error for the exit code.
func packageError(err error) error {
	switch {
	case errors.Is(err, pkgworld.ErrNotFound), errors.Is(err, pkgworld.ErrServer):
		return &UsageError{Err: err}
	case errors.Is(err, worlds.ErrPrerequisite):
		return &InfraError{Err: err}
	}
	return err
}

// registerPackages opens every package:… world of names and registers it
// in reg under its name as given; stop stops their sidecars. A package an
// engine cannot host as the storm would run it (engines.PackageHost, with
// the storm's engine options eo: its channel and --devkit-dir) is
// registered with the reason, which the plan gives if a condition asks
// for that engine there.
func registerPackages(ctx context.Context, io *IOStreams, reg *worlds.Registry, names []string, po pkgworld.Options, engs *engines.Registry, eo engines.Options, logger *slog.Logger) (stop func() error, err error) {
	env := po.Env
	var opened []*pkgworld.World
	stop = func() error {
		var errs []error
		for _, w := range opened {
			errs = append(errs, w.Stop())
		}
		return errors.Join(errs...)
	}
	for _, name := range names {
		if !pkgworld.IsPackage(name) {
			continue
		}
		w, err := openPackage(ctx, io, name, po, logger)
		if err != nil {
			return stop, err
		}
		opened = append(opened, w)
		spec, err := w.Spec(ctx)
		if err != nil {
			return stop, &InfraError{Err: fmt.Errorf("--world %s: the sidecar could not load the package: %w", name, err)}
		}
		entry := w.Entry(name, spec)
		for _, p := range engs.Plugins() {
			if h, ok := p.(engines.PackageHost); ok {
				if err := h.CheckPackage(eo, spec.SpecVersion); err != nil {
					entry.Engines = slices.DeleteFunc(entry.Engines, func(e string) bool { return e == p.Name() })
					if entry.NoEngines == nil {
						entry.NoEngines = map[string]string{}
					}
					entry.NoEngines[p.Name()] = err.Error()
				}
			}
		}
		reg.Register(entry)
	}
	if len(env) > 0 && len(opened) == 0 {
		return stop, usage("--world-env: no package:… world to give it to")
	}
	return stop, nil
}
