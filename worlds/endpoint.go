package worlds

import (
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"

	"github.com/stormctl/stormctl/internal/base/flagspec"
	"github.com/stormctl/stormctl/internal/base/leftover"
	"github.com/stormctl/stormctl/internal/eventlog"
	"github.com/stormctl/stormctl/internal/nemesis"
)

// Values are the endpoint flags' values by flag name, without dashes ("" or
// absent: not given, the world's own embedded server).
type Values = flagspec.Values

// Endpoint declares a flag that points worlds at a server of the user's (or
// at a checkout) instead of what they start themselves. The entries of the
// worlds that use it carry it (Entry.Endpoints), and the registry gathers
// each once (Registry.Endpoints): the command line declares, validates,
// stores for --resume, checks under --nemesis and warns about every flag
// from this declaration alone. Only the String's Name and Help are
// required.
type Endpoint struct {
	flagspec.String
	// What names what a value points at in messages ("" reads "server").
	What string
	// Keeps says what the world writes on the value's server stays there
	// with --keep (schemas, tables, keys), to be named at the storm's end
	// (worlds.Keeper).
	Keeps bool
	// Server names what a value picks (host, port and database; a
	// directory), so that a resumed storm can tell a value for its own
	// server from one for another; "" when the value does not parse. nil:
	// values are compared as stored.
	Server func(v string) string
	// Store is a value as storm.json keeps it: without its secrets, secret
	// saying one was removed (stored "" with secret: not stored at all, the
	// value's form left the secret in). nil: redact.String's masking.
	Store func(v string) (stored string, secret bool)
	// Nemesis refuses, with one line, a value a storm under --nemesis
	// cannot use: a server off this machine's loopback, or one in place of
	// the embedded server a kind the user named acts on (named reports
	// whether the user named kind k, not through "all"). nil: no refusal.
	Nemesis func(v string, named func(k nemesis.Kind) bool) error
	// Idle says why a value is not used by a storm that has the flag's
	// worlds, or "": it is used. given holds every endpoint flag's value,
	// guards the guards the storm's cells of those worlds run. nil: used
	// whenever one of its worlds is. (A storm with none of them is said so
	// by Registry.Unused.)
	Idle func(given Values, guards []eventlog.Guard) string
}

// what is what a value of e points at, in messages.
func (e Endpoint) what() string {
	if e.What == "" {
		return "server"
	}
	return e.What
}

// Setup is what registering a world package reads: the values of its
// endpoint flags, and what the command sets for every world.
type Setup struct {
	// Endpoints are the endpoint flags' values.
	Endpoints Values
	// Keep keeps the worlds' schemas and directories after the storm.
	Keep bool
	// Progress receives what setting a world up reports once (the devkit
	// packages' first install). Nil: nothing is reported.
	Progress io.Writer
	// Nemesis says the storm breaks the worlds' stores (--nemesis): a
	// package may send its clients' own logs of the faults (a Redis
	// client's failed dials) to the logger, off stderr.
	Nemesis bool
}

// Package is a world package as stormctl builds it in (the list of
// worlds/builtin): how its worlds are registered, and what it sweeps up
// after killed stormctl processes.
type Package struct {
	// Register adds the package's worlds to r, set up from s and logging
	// to logger; stop releases what they started (an embedded cluster, a
	// sidecar). Registering starts nothing: every server starts on the
	// first Open.
	Register func(r *Registry, s Setup, logger *slog.Logger) (stop func() error)
	// Sweep removes what killed stormctl processes left of the package's
	// own (embedded clusters whose watcher is gone too). nil: nothing.
	Sweep func() ([]leftover.Removed, error)
}

// Endpoints returns the endpoint flags of the registered worlds, each once,
// in the order they were first registered: the order of --help, of
// storm.json's endpoints and of every check.
func (r *Registry) Endpoints() []Endpoint { return slices.Clone(r.endpoints) }

// Specs returns the flag declarations of Endpoints.
func (r *Registry) Specs() []flagspec.String {
	out := make([]flagspec.String, len(r.endpoints))
	for i, e := range r.endpoints {
		out[i] = e.String
	}
	return out
}

// Using returns the names of the registered worlds whose entries carry the
// endpoint flag, in name order.
func (r *Registry) Using(flag string) []string {
	var out []string
	for _, e := range r.entries {
		if slices.ContainsFunc(e.Endpoints, func(x Endpoint) bool { return x.Name == flag }) {
			out = append(out, e.Name)
		}
	}
	return out
}

// ValidateEndpoints checks the syntax of each endpoint flag given in v,
// in the registry's order, and returns the first refusal; the message
// names the flag and the form it wants.
func (r *Registry) ValidateEndpoints(v Values) error {
	return flagspec.Validate(r.Specs(), v)
}

// CheckNemesis refuses, with the first endpoint's refusal
// (Endpoint.Nemesis), a storm of the worlds stormWorlds whose nemesis c
// would act on an endpoint it does not own; nil when c is off.
func (r *Registry) CheckNemesis(c nemesis.Config, stormWorlds []string, v Values) error {
	if !c.On() {
		return nil
	}
	for _, e := range r.endpoints {
		x := v[e.Name]
		if x == "" || e.Nemesis == nil || !r.uses(e.Name, stormWorlds) {
			continue
		}
		if err := e.Nemesis(x, c.Named); err != nil {
			return err
		}
	}
	return nil
}

// Unused names each endpoint flag given in v that a storm gives no work
// to, one line each, with why: none of the flag's worlds is in the storm,
// or the flag's Idle says why its worlds leave it unused. guards maps each
// world of the storm to the guards its cells run. A storm runs on
// regardless; the lines only keep a user from believing a server was
// exercised that was not.
func (r *Registry) Unused(v Values, guards map[string][]eventlog.Guard) []string {
	var lines []string
	for _, e := range r.endpoints {
		if v[e.Name] == "" {
			continue
		}
		using := r.Using(e.Name)
		var used []eventlog.Guard
		in := false
		for _, w := range using {
			if g, ok := guards[w]; ok {
				in = true
				used = append(used, g...)
			}
		}
		switch {
		case !in:
			lines = append(lines, fmt.Sprintf("--%s: no %s cell in this storm, so that %s is not used (add --world %s)",
				e.Name, strings.Join(using, " or "), e.what(), strings.Join(using, " or ")))
		case e.Idle != nil:
			if why := e.Idle(v, used); why != "" {
				lines = append(lines, "--"+e.Name+": "+why)
			}
		}
	}
	return lines
}

// uses reports whether one of worldNames uses the endpoint flag.
func (r *Registry) uses(flag string, worldNames []string) bool {
	return slices.ContainsFunc(r.Using(flag), func(w string) bool { return slices.Contains(worldNames, w) })
}

// Offers maps every registered world to the fault kinds it offers
// (Entry.Faults).
func (r *Registry) Offers() map[string][]nemesis.Kind {
	out := map[string][]nemesis.Kind{}
	for _, e := range r.entries {
		out[e.Name] = slices.Clone(e.Faults)
	}
	return out
}
