package worlds_test

import (
	"errors"
	"slices"
	"testing"

	"github.com/stormctl/stormctl/internal/base/flagspec"
	"github.com/stormctl/stormctl/internal/eventlog"
	"github.com/stormctl/stormctl/internal/nemesis"
	"github.com/stormctl/stormctl/worlds"
)

// surfaceRegistry holds made-up worlds that declare endpoints: "db" and
// "replica" share --db-url, "queue" has --queue-url (idle without a
// guard) and --queue-dir (a checkout), "plain" has none.
func surfaceRegistry() *worlds.Registry {
	dbURL := worlds.Endpoint{String: flagspec.String{Name: "db-url", Help: "db",
		Validate: func(v string) error {
			if v == "bad" {
				return errors.New("--db-url: bad")
			}
			return nil
		}},
		Nemesis: func(v string, named func(nemesis.Kind) bool) error {
			if named(nemesis.PGRestart) {
				return errors.New("--db-url: pg-restart named")
			}
			return nil
		}}
	queueURL := worlds.Endpoint{String: flagspec.String{Name: "queue-url", Help: "queue",
		Validate: func(v string) error {
			if v == "bad" {
				return errors.New("--queue-url: bad")
			}
			return nil
		}},
		Nemesis: func(string, func(nemesis.Kind) bool) error { return errors.New("--queue-url: never under --nemesis") },
		Idle: func(given worlds.Values, guards []eventlog.Guard) string {
			if !slices.Contains(guards, eventlog.GuardCountIndex) {
				return "no guard"
			}
			return ""
		}}
	queueDir := worlds.Endpoint{String: flagspec.String{Name: "queue-dir", Help: "checkout"}, What: "checkout"}
	r := &worlds.Registry{}
	r.Register(worlds.Entry{Name: "replica", Endpoints: []worlds.Endpoint{dbURL}})
	r.Register(worlds.Entry{Name: "queue", Endpoints: []worlds.Endpoint{queueURL, queueDir}, Faults: []nemesis.Kind{nemesis.Latency}})
	r.Register(worlds.Entry{Name: "db", Endpoints: []worlds.Endpoint{dbURL}, Faults: []nemesis.Kind{nemesis.PGRestart, nemesis.Latency}})
	r.Register(worlds.Entry{Name: "plain"})
	return r
}

// TestRegistryEndpoints: the registry gathers each endpoint flag once, in
// the order first registered, and knows which worlds use it.
func TestRegistryEndpoints(t *testing.T) {
	r := surfaceRegistry()
	var names []string
	for _, e := range r.Endpoints() {
		names = append(names, e.Name)
	}
	if want := []string{"db-url", "queue-url", "queue-dir"}; !slices.Equal(names, want) {
		t.Errorf("Endpoints() = %v, want %v", names, want)
	}
	if specs := r.Specs(); len(specs) != 3 || specs[0].Name != "db-url" || specs[0].Help != "db" {
		t.Errorf("Specs() = %+v", specs)
	}
	for flag, want := range map[string][]string{"db-url": {"db", "replica"}, "queue-dir": {"queue"}, "nope": nil} {
		if got := r.Using(flag); !slices.Equal(got, want) {
			t.Errorf("Using(%s) = %v, want %v", flag, got, want)
		}
	}
	offers := r.Offers()
	if !slices.Equal(offers["db"], []nemesis.Kind{nemesis.PGRestart, nemesis.Latency}) || len(offers["plain"]) != 0 || len(offers) != 4 {
		t.Errorf("Offers() = %v", offers)
	}
}

// TestValidateEndpoints: given values are checked in the registry's order.
func TestValidateEndpoints(t *testing.T) {
	r := surfaceRegistry()
	tests := []struct {
		v    worlds.Values
		want string
	}{
		{worlds.Values{}, ""},
		{worlds.Values{"db-url": "ok", "queue-url": "ok"}, ""},
		{worlds.Values{"queue-url": "bad"}, "--queue-url: bad"},
		{worlds.Values{"queue-url": "bad", "db-url": "bad"}, "--db-url: bad"},
	}
	for _, tc := range tests {
		err := r.ValidateEndpoints(tc.v)
		if got := errText(err); got != tc.want {
			t.Errorf("ValidateEndpoints(%v) = %q, want %q", tc.v, got, tc.want)
		}
	}
}

// TestCheckNemesis: an endpoint's refusal counts only under a nemesis, for
// a value given, on a storm with one of the endpoint's worlds.
func TestCheckNemesis(t *testing.T) {
	r := surfaceRegistry()
	restart := nemesis.Config{Kinds: nemesis.KindList{nemesis.PGRestart}}
	all := nemesis.Config{Kinds: nemesis.KindList(nemesis.Kinds)}
	tests := []struct {
		name   string
		c      nemesis.Config
		worlds []string
		v      worlds.Values
		want   string
	}{
		{"off", nemesis.Config{}, []string{"queue"}, worlds.Values{"queue-url": "x"}, ""},
		{"refused", all, []string{"queue"}, worlds.Values{"queue-url": "x"}, "--queue-url: never under --nemesis"},
		{"not given", all, []string{"queue"}, worlds.Values{}, ""},
		{"its world not in the storm", all, []string{"db"}, worlds.Values{"queue-url": "x"}, ""},
		{"a kind named", restart, []string{"replica"}, worlds.Values{"db-url": "x"}, "--db-url: pg-restart named"},
		{"all is no kind named", all, []string{"db"}, worlds.Values{"db-url": "x"}, ""},
		{"the first in order", restart, []string{"db", "queue"}, worlds.Values{"db-url": "x", "queue-url": "x"}, "--db-url: pg-restart named"},
	}
	for _, tc := range tests {
		if got := errText(r.CheckNemesis(tc.c, tc.worlds, tc.v)); got != tc.want {
			t.Errorf("%s: CheckNemesis = %q, want %q", tc.name, got, tc.want)
		}
	}
}

// TestUnused: a flag given is said unused when none of its worlds is in
// the storm, or when its Idle says why; its worlds' guards reach Idle.
func TestUnused(t *testing.T) {
	r := surfaceRegistry()
	none := []eventlog.Guard{eventlog.GuardNone}
	tests := []struct {
		name   string
		v      worlds.Values
		guards map[string][]eventlog.Guard
		want   []string
	}{
		{"nothing given", worlds.Values{}, map[string][]eventlog.Guard{"plain": none}, nil},
		{"no world of the flag", worlds.Values{"db-url": "x", "queue-dir": "d"}, map[string][]eventlog.Guard{"plain": none}, []string{
			"--db-url: no db or replica cell in this storm, so that server is not used (add --world db or replica)",
			"--queue-dir: no queue cell in this storm, so that checkout is not used (add --world queue)",
		}},
		{"one of its worlds", worlds.Values{"db-url": "x"}, map[string][]eventlog.Guard{"replica": none}, nil},
		{"idle", worlds.Values{"queue-url": "x"}, map[string][]eventlog.Guard{"queue": none}, []string{"--queue-url: no guard"}},
		{"used", worlds.Values{"queue-url": "x"}, map[string][]eventlog.Guard{"queue": {eventlog.GuardNone, eventlog.GuardCountIndex}}, nil},
		{"a guard on another world", worlds.Values{"queue-url": "x"}, map[string][]eventlog.Guard{"queue": none, "db": {eventlog.GuardCountIndex}}, []string{"--queue-url: no guard"}},
	}
	for _, tc := range tests {
		if got := r.Unused(tc.v, tc.guards); !slices.Equal(got, tc.want) {
			t.Errorf("%s: Unused = %q, want %q", tc.name, got, tc.want)
		}
	}
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
