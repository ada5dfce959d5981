package engines

import (
	"fmt"
	"strings"

	"github.com/stormctl/stormctl/internal/engine"
)

// Registry holds the engines a storm can run, in registration order: the
// first is the default of a storm that names none (--engine).
type Registry struct {
	plugins []Plugin
}

// NewRegistry returns a registry of plugins, the first the default.
func NewRegistry(plugins ...Plugin) *Registry {
	r := &Registry{}
	for _, p := range plugins {
		r.Register(p)
	}
	return r
}

// Register adds an engine; a second engine of one name is a bug.
func (r *Registry) Register(p Plugin) {
	if _, ok := r.Lookup(p.Name()); ok {
		panic(fmt.Sprintf("engines: %q registered twice", p.Name()))
	}
	r.plugins = append(r.plugins, p)
}

// Lookup returns the engine called name; "" is the default.
func (r *Registry) Lookup(name string) (Plugin, bool) {
	if name == "" {
		return r.Default(), len(r.plugins) > 0
	}
	for _, p := range r.plugins {
		if p.Name() == name {
			return p, true
		}
	}
	return nil, false
}

// Get is Lookup with an error naming the valid engines.
func (r *Registry) Get(name string) (Plugin, error) {
	if p, ok := r.Lookup(name); ok {
		return p, nil
	}
	return nil, fmt.Errorf("unknown engine %q (valid: %s)", name, strings.Join(r.Names(), ", "))
}

// CheckKnobs refuses condition knobs k that name an engine the registry
// does not hold, or that their engine refuses (KnobChecker): what a
// storm's plan checks, for the commands that take a condition without one
// (replay --pg-url, fidelity --model-condition).
func (r *Registry) CheckKnobs(k engine.Knobs) error {
	p, err := r.Get(k.Engine)
	if err != nil {
		return err
	}
	if kc, ok := p.(KnobChecker); ok {
		return kc.CheckKnobs(k)
	}
	return nil
}

// Default is the engine of a storm and condition that name none.
func (r *Registry) Default() Plugin {
	if len(r.plugins) == 0 {
		return nil
	}
	return r.plugins[0]
}

// Names lists the engines' names in registration order.
func (r *Registry) Names() []string {
	out := make([]string, len(r.plugins))
	for i, p := range r.plugins {
		out[i] = p.Name()
	}
	return out
}

// Plugins lists the engines in registration order.
func (r *Registry) Plugins() []Plugin { return append([]Plugin(nil), r.plugins...) }

// With returns the names of the engines whose traits pass keep.
func (r *Registry) With(keep func(Traits) bool) []string {
	var out []string
	for _, p := range r.plugins {
		if keep(p.Traits()) {
			out = append(out, p.Name())
		}
	}
	return out
}

// Traits returns the traits of the engine called name ("" the default),
// and the zero Traits for an engine it does not hold.
func (r *Registry) Traits(name string) Traits {
	if p, ok := r.Lookup(name); ok {
		return p.Traits()
	}
	return Traits{}
}

// Model is the name of the first engine that is the model ("" when none
// is registered): the model side of a fidelity pair or a benchmark.
func (r *Registry) Model() string { return r.first(IsModel) }

// Published is the name of the first engine that runs the published
// runtime ("" when none is registered): the real side.
func (r *Registry) Published() string { return r.first(IsPublished) }

func (r *Registry) first(keep func(Traits) bool) string {
	if names := r.With(keep); len(names) > 0 {
		return names[0]
	}
	return ""
}

// IsModel says whether traits are the model's.
func IsModel(t Traits) bool { return t.Model }

// IsPublished says whether an engine runs the published runtime.
func IsPublished(t Traits) bool { return t.Published }
