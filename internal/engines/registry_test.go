package engines_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/stormctl/stormctl/internal/engines"
)

// fake is a plug-in of a name and traits that opens nothing.
type fake struct {
	name   string
	traits engines.Traits
}

func (f fake) Name() string                                 { return f.name }
func (f fake) Summary() string                              { return f.name }
func (f fake) Traits() engines.Traits                       { return f.traits }
func (f fake) Opener(engines.Options) (engines.Open, error) { return nil, nil }

func TestRegistry(t *testing.T) {
	reg := engines.NewRegistry(fake{"first", engines.Traits{Model: true}}, fake{"second", engines.Traits{Published: true}})
	tests := []struct {
		name      string
		lookup    string
		want      string
		ok        bool
		published bool
	}{
		{"the default", "", "first", true, false},
		{"by name", "second", "second", true, true},
		{"unknown", "third", "", false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, ok := reg.Lookup(tt.lookup)
			if ok != tt.ok || (ok && p.Name() != tt.want) {
				t.Fatalf("Lookup(%q) = %v, %v; want %q, %v", tt.lookup, p, ok, tt.want, tt.ok)
			}
			if got := reg.Traits(tt.lookup).Published; got != tt.published {
				t.Errorf("Traits(%q).Published = %v, want %v", tt.lookup, got, tt.published)
			}
		})
	}
	if _, err := reg.Get("third"); err == nil || !strings.Contains(err.Error(), "valid: first, second") {
		t.Errorf("Get(third) = %v, want an error naming the valid engines", err)
	}
	if got := reg.With(engines.IsPublished); !slices.Equal(got, []string{"second"}) {
		t.Errorf("With(IsPublished) = %v", got)
	}
	if got := reg.Names(); !slices.Equal(got, []string{"first", "second"}) {
		t.Errorf("Names() = %v", got)
	}
}

func TestRegisterTwicePanics(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("registering a name twice did not panic")
		}
	}()
	engines.NewRegistry(fake{name: "a"}, fake{name: "a"})
}

func TestEmptyRegistry(t *testing.T) {
	reg := engines.NewRegistry()
	if p, ok := reg.Lookup(""); ok || p != nil || reg.Default() != nil {
		t.Errorf("an empty registry has a default: %v", p)
	}
}
