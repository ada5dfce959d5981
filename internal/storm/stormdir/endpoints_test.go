package stormdir_test

import (
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/stormctl/stormctl/internal/base/flagspec"
	"github.com/stormctl/stormctl/internal/storm/stormdir"
	"github.com/stormctl/stormctl/worlds"
)

// endpointRegistry holds a made-up world with two endpoint flags: --plain
// (stored masked by default, compared as stored) and --named (stored as
// its Store says, compared by its Server).
func endpointRegistry() *worlds.Registry {
	plain := worlds.Endpoint{String: flagspec.String{Name: "plain"}}
	named := worlds.Endpoint{String: flagspec.String{Name: "named"},
		Store:  func(v string) (string, bool) { return strings.ToUpper(v), false },
		Server: func(v string) string { return strings.ToLower(strings.TrimSuffix(v, "/")) }}
	r := &worlds.Registry{}
	r.Register(worlds.Entry{Name: "w", Endpoints: []worlds.Endpoint{plain, named}})
	r.Register(worlds.Entry{Name: "other"})
	return r
}

// TestStoreEndpoints: every flag is stored, in the registry's order; a
// flag without Store is masked by redact.String, its secret flagged.
func TestStoreEndpoints(t *testing.T) {
	r := endpointRegistry()
	got := stormdir.StoreEndpoints(r.Endpoints(), worlds.Values{"plain": "redis://:pw@cache:6379", "named": "a/"})
	want := []stormdir.Endpoint{{Flag: "plain", Value: "redis://:xxxxx@cache:6379", Secret: true}, {Flag: "named", Value: "A/"}}
	if !slices.Equal(got, want) {
		t.Errorf("StoreEndpoints = %+v, want %+v", got, want)
	}
	if got := stormdir.StoreEndpoints(r.Endpoints(), nil); !slices.Equal(got, []stormdir.Endpoint{{Flag: "plain"}, {Flag: "named"}}) {
		t.Errorf("StoreEndpoints of none = %+v", got)
	}
}

// TestResumeEndpointsGeneric: a flag's Server decides whether a value given
// again picks the stored server; without one, values compare as stored.
func TestResumeEndpointsGeneric(t *testing.T) {
	r := endpointRegistry()
	stored := []stormdir.Endpoint{{Flag: "plain", Value: "http://h:1"}, {Flag: "named", Value: "SRV/"}}
	tests := []struct {
		name   string
		worlds []string
		given  worlds.Values
		want   worlds.Values
		err    string
	}{
		{"none given: the stored ones", []string{"w"}, worlds.Values{}, worlds.Values{"plain": "http://h:1", "named": "SRV/"}, ""},
		{"the same server by Server", []string{"w"}, worlds.Values{"named": "srv"}, worlds.Values{"plain": "http://h:1", "named": "srv"}, ""},
		{"compared as stored", []string{"w"}, worlds.Values{"plain": "http://h:2"}, nil,
			"--resume D: --plain http://h:2 differs from the storm's http://h:1 (storm.json); a resumed storm keeps its servers: drop --plain, or start a new storm"},
		{"a storm without the world", []string{"other"}, worlds.Values{"plain": "x"}, worlds.Values{"plain": "x"}, ""},
	}
	for _, tc := range tests {
		res := &stormdir.Resume{Dir: "D", Meta: &stormdir.Meta{Endpoints: stored}}
		got, _, err := res.Endpoints(r, tc.worlds, tc.given, func(flag string) bool { return tc.given[flag] != "" })
		switch {
		case tc.err != "":
			if err == nil || err.Error() != tc.err {
				t.Errorf("%s: err %v, want %s", tc.name, err, tc.err)
			}
		case err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case !maps.Equal(got, tc.want):
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}
