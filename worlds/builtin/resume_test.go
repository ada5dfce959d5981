package builtin_test

import (
	"encoding/json"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stormctl/stormctl/internal/storm/stormdir"
	"github.com/stormctl/stormctl/worlds"
)

// TestStoredEndpoints: storm.json keeps every endpoint flag, never a
// secret: a password is replaced (redact.String, every DSN form), and the
// endpoint is marked as needing it.
func TestStoredEndpoints(t *testing.T) {
	const secret = "Hunter2"
	// A relative --devkit-dir is stored absolute: a resumed storm may run
	// from another directory.
	parent := t.TempDir()
	t.Chdir(parent)
	rel, dir := "checkout", filepath.Join(parent, "checkout")
	tests := []struct {
		name string
		ep   worlds.Values
		want []stormdir.Endpoint
	}{
		{"none given: the embedded servers", worlds.Values{}, []stormdir.Endpoint{
			{Flag: "pg-url"}, {Flag: "ingest-url"}, {Flag: "dynamo-endpoint"}, {Flag: "redis-url"}, {Flag: "devkit-dir"}}},
		{"a pg-url with a password", worlds.Values{"pg-url": "postgres://u:" + secret + "@db/app"}, []stormdir.Endpoint{
			{Flag: "pg-url", Value: "postgres://u:xxxxx@db/app", Secret: true}, {Flag: "ingest-url"}, {Flag: "dynamo-endpoint"}, {Flag: "redis-url"}, {Flag: "devkit-dir"}}},
		{"a pg-url without one", worlds.Values{"pg-url": "postgres://u@db:5433/app?sslmode=disable"}, []stormdir.Endpoint{
			{Flag: "pg-url", Value: "postgres://u@db:5433/app?sslmode=disable"}, {Flag: "ingest-url"}, {Flag: "dynamo-endpoint"}, {Flag: "redis-url"}, {Flag: "devkit-dir"}}},
		{"keyword settings with a password", worlds.Values{"pg-url": "host=db dbname=app user=u password=" + secret}, []stormdir.Endpoint{
			{Flag: "pg-url", Value: "host=db dbname=app user=u password=xxxxx", Secret: true}, {Flag: "ingest-url"}, {Flag: "dynamo-endpoint"}, {Flag: "redis-url"}, {Flag: "devkit-dir"}}},
		{"a password parameter", worlds.Values{"pg-url": "postgres://u@db/app?password=" + secret}, []stormdir.Endpoint{
			{Flag: "pg-url", Value: "postgres://u@db/app?password=xxxxx", Secret: true}, {Flag: "ingest-url"}, {Flag: "dynamo-endpoint"}, {Flag: "redis-url"}, {Flag: "devkit-dir"}}},
		{"the vercel servers and a checkout", worlds.Values{"ingest-url": "http://ingest:8080", "dynamo-endpoint": "https://u:" + secret + "@dynamo",
			"redis-url": "redis://:" + secret + "@cache:6379/2", "devkit-dir": rel}, []stormdir.Endpoint{
			{Flag: "pg-url"}, {Flag: "ingest-url", Value: "http://ingest:8080"}, {Flag: "dynamo-endpoint", Value: "https://u:xxxxx@dynamo", Secret: true},
			{Flag: "redis-url", Value: "redis://:xxxxx@cache:6379/2", Secret: true}, {Flag: "devkit-dir", Value: dir}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := stormdir.StoreEndpoints(surface(t).Endpoints(), tt.ep)
			// Flags of worlds added later are stored too: empty, as not given.
			got = slices.DeleteFunc(got, func(e stormdir.Endpoint) bool {
				return !slices.Contains(builtinFlags, e.Flag) && e == stormdir.Endpoint{Flag: e.Flag}
			})
			if !slices.Equal(got, tt.want) {
				t.Errorf("stored\n  %+v\nwant\n  %+v", got, tt.want)
			}
			b, err := json.Marshal(got)
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(string(b), secret) {
				t.Errorf("storm.json would hold the password: %s", b)
			}
		})
	}
}

// TestResumeEndpoints: a resumed storm runs on the servers it began on. A
// stored endpoint is used when its flag is not given; one that needed a
// password refuses until the flag is given again; a flag for another
// server is refused; a flag no world of the storm uses is not compared;
// a storm.json without endpoints takes the flags as given, with a note.
func TestResumeEndpoints(t *testing.T) {
	checkout := t.TempDir()
	stored := func(edit func(map[string]stormdir.Endpoint)) []stormdir.Endpoint {
		m := map[string]stormdir.Endpoint{}
		for _, f := range surface(t).Endpoints() {
			m[f.Name] = stormdir.Endpoint{Flag: f.Name}
		}
		edit(m)
		var out []stormdir.Endpoint
		for _, f := range surface(t).Endpoints() {
			out = append(out, m[f.Name])
		}
		return out
	}
	pgSecret := stored(func(m map[string]stormdir.Endpoint) {
		m["pg-url"] = stormdir.Endpoint{Flag: "pg-url", Value: "postgres://u:xxxxx@db/app", Secret: true}
	})
	pgOpen := stored(func(m map[string]stormdir.Endpoint) {
		m["pg-url"] = stormdir.Endpoint{Flag: "pg-url", Value: "postgres://u@db:5433/app?sslmode=disable"}
	})
	pgHidden := stored(func(m map[string]stormdir.Endpoint) { m["pg-url"] = stormdir.Endpoint{Flag: "pg-url", Secret: true} })
	embedded := stored(func(map[string]stormdir.Endpoint) {})
	vercelSet := stored(func(m map[string]stormdir.Endpoint) {
		m["ingest-url"] = stormdir.Endpoint{Flag: "ingest-url", Value: "http://ingest:8080"}
		m["redis-url"] = stormdir.Endpoint{Flag: "redis-url", Value: "redis://:xxxxx@cache:6379/2", Secret: true}
	})
	devkitSet := stored(func(m map[string]stormdir.Endpoint) {
		m["devkit-dir"] = stormdir.Endpoint{Flag: "devkit-dir", Value: checkout}
	})
	pg, vc, local, dk := []string{"postgres"}, []string{"vercel"}, []string{"local"}, []string{"devkit-local"}

	tests := []struct {
		name   string
		stored []stormdir.Endpoint
		worlds []string
		given  worlds.Values
		want   worlds.Values
		// err, when set, is the error wanted; note the note.
		err, note string
	}{
		{name: "a password: the flag not given", stored: pgSecret, worlds: pg,
			err: "--resume D: the storm ran on --pg-url postgres://u:xxxxx@db/app, which needs its password: give --pg-url again"},
		{name: "a password: the flag given again", stored: pgSecret, worlds: pg,
			given: worlds.Values{"pg-url": "postgres://u:pw@db/app"}, want: worlds.Values{"pg-url": "postgres://u:pw@db/app"}},
		{name: "a password: the same server in keyword settings", stored: pgSecret, worlds: pg,
			given: worlds.Values{"pg-url": "host=db port=5432 dbname=app user=u password=pw"}, want: worlds.Values{"pg-url": "host=db port=5432 dbname=app user=u password=pw"}},
		{name: "a password: another host", stored: pgSecret, worlds: pg, given: worlds.Values{"pg-url": "postgres://u:pw@elsewhere/app"},
			err: "--resume D: --pg-url postgres://u:xxxxx@elsewhere/app differs from the storm's postgres://u:xxxxx@db/app (storm.json); a resumed storm keeps its servers: give the storm's server, or start a new storm"},
		{name: "a password: another database", stored: pgSecret, worlds: pg, given: worlds.Values{"pg-url": "postgres://u:pw@db/other"},
			err: "--resume D: --pg-url postgres://u:xxxxx@db/other differs from the storm's postgres://u:xxxxx@db/app (storm.json); a resumed storm keeps its servers: give the storm's server, or start a new storm"},
		{name: "no password: the stored one is used", stored: pgOpen, worlds: pg, want: worlds.Values{"pg-url": "postgres://u@db:5433/app?sslmode=disable"}},
		{name: "no password: another port", stored: pgOpen, worlds: pg, given: worlds.Values{"pg-url": "postgres://u@db/app"},
			err: "--resume D: --pg-url postgres://u@db/app differs from the storm's postgres://u@db:5433/app?sslmode=disable (storm.json); a resumed storm keeps its servers: drop --pg-url, or start a new storm"},
		{name: "a password that could not be stored", stored: pgHidden, worlds: pg,
			err: "--resume D: the storm ran on --pg-url (not stored: it held a password), which needs its password: give --pg-url again"},
		{name: "a password that could not be stored, given", stored: pgHidden, worlds: pg,
			given: worlds.Values{"pg-url": "host=db password=pw"}, want: worlds.Values{"pg-url": "host=db password=pw"}},
		{name: "the embedded server", stored: embedded, worlds: pg},
		{name: "the embedded server, a server given", stored: embedded, worlds: pg, given: worlds.Values{"pg-url": "postgres://u@db/app"},
			err: "--resume D: --pg-url postgres://u@db/app differs from the storm's (none: the embedded server) (storm.json); a resumed storm keeps its servers: drop --pg-url, or start a new storm"},
		{name: "a server no world of the storm uses", stored: pgSecret, worlds: local,
			given: worlds.Values{"pg-url": "postgres://u@other/app"}, want: worlds.Values{"pg-url": "postgres://u@other/app"}},
		{name: "vercel: the ingest server kept, redis needs its password", stored: vercelSet, worlds: vc,
			err: "--resume D: the storm ran on --redis-url redis://:xxxxx@cache:6379/2, which needs its password: give --redis-url again"},
		{name: "vercel: redis given again", stored: vercelSet, worlds: vc, given: worlds.Values{"redis-url": "redis://:pw@cache:6379/2"},
			want: worlds.Values{"ingest-url": "http://ingest:8080", "redis-url": "redis://:pw@cache:6379/2"}},
		{name: "vercel: another redis database", stored: vercelSet, worlds: vc, given: worlds.Values{"redis-url": "redis://:pw@cache:6379/3"},
			err: "--resume D: --redis-url redis://:xxxxx@cache:6379/3 differs from the storm's redis://:xxxxx@cache:6379/2 (storm.json); a resumed storm keeps its servers: give the storm's server, or start a new storm"},
		{name: "vercel: another ingest server", stored: vercelSet, worlds: vc, given: worlds.Values{"ingest-url": "http://ingest:9090", "redis-url": "redis://:pw@cache:6379/2"},
			err: "--resume D: --ingest-url http://ingest:9090 differs from the storm's http://ingest:8080 (storm.json); a resumed storm keeps its servers: drop --ingest-url, or start a new storm"},
		{name: "devkit: the checkout kept", stored: devkitSet, worlds: dk, want: worlds.Values{"devkit-dir": checkout}},
		{name: "older storm.json: as given, with a note", worlds: pg, given: worlds.Values{"pg-url": "postgres://u@db/app"}, want: worlds.Values{"pg-url": "postgres://u@db/app"},
			note: "storm: resume D: its storm.json does not say which servers it ran on (an older stormctl): the flags given now pick them, as before; give the --pg-url the storm began with"},
		{name: "older storm.json of local cells: nothing to say", worlds: local},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := &stormdir.Resume{Dir: "D", Meta: &stormdir.Meta{Endpoints: tt.stored}}
			changed := func(flag string) bool { return tt.given[flag] != "" }
			given := tt.given.Clone()
			got, note, err := res.Endpoints(surface(t), tt.worlds, tt.given, changed)
			if !maps.Equal(tt.given, given) {
				t.Errorf("the values given changed: %v, were %v", tt.given, given)
			}
			switch {
			case tt.err != "":
				if err == nil || err.Error() != tt.err {
					t.Fatalf("err = %v\nwant %s", err, tt.err)
				}
				return
			case err != nil:
				t.Fatal(err)
			}
			if !maps.Equal(nonEmpty(got), nonEmpty(tt.want)) {
				t.Errorf("endpoints %+v, want %+v", got, tt.want)
			}
			if note != tt.note {
				t.Errorf("note %q, want %q", note, tt.note)
			}
		})
	}
}
