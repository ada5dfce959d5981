package cli

import (
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stormctl/stormctl/stormdir"
)

// TestEndpointFlagsCoverAddFlags: every flag that picks a server is stored
// for a resumed storm, a flag added to AddFlags included.
func TestEndpointFlagsCoverAddFlags(t *testing.T) {
	var names []string
	for _, f := range endpointFlags {
		names = append(names, f.name)
	}
	if declared := endpointFlagNames(); !slices.Equal(names, declared) {
		t.Fatalf("endpointFlags has %v, AddFlags declares %v: a flag that picks a server must be stored for --resume", names, declared)
	}
}

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
		ep   WorldEndpoints
		want []stormdir.Endpoint
	}{
		{"none given: the embedded servers", WorldEndpoints{}, []stormdir.Endpoint{
			{Flag: "pg-url"}, {Flag: "ingest-url"}, {Flag: "dynamo-endpoint"}, {Flag: "redis-url"}, {Flag: "devkit-dir"}}},
		{"a pg-url with a password", WorldEndpoints{PGURL: "postgres://u:" + secret + "@db/app"}, []stormdir.Endpoint{
			{Flag: "pg-url", Value: "postgres://u:xxxxx@db/app", Secret: true}, {Flag: "ingest-url"}, {Flag: "dynamo-endpoint"}, {Flag: "redis-url"}, {Flag: "devkit-dir"}}},
		{"a pg-url without one", WorldEndpoints{PGURL: "postgres://u@db:5433/app?sslmode=disable"}, []stormdir.Endpoint{
			{Flag: "pg-url", Value: "postgres://u@db:5433/app?sslmode=disable"}, {Flag: "ingest-url"}, {Flag: "dynamo-endpoint"}, {Flag: "redis-url"}, {Flag: "devkit-dir"}}},
		{"keyword settings with a password", WorldEndpoints{PGURL: "host=db dbname=app user=u password=" + secret}, []stormdir.Endpoint{
			{Flag: "pg-url", Value: "host=db dbname=app user=u password=xxxxx", Secret: true}, {Flag: "ingest-url"}, {Flag: "dynamo-endpoint"}, {Flag: "redis-url"}, {Flag: "devkit-dir"}}},
		{"a password parameter", WorldEndpoints{PGURL: "postgres://u@db/app?password=" + secret}, []stormdir.Endpoint{
			{Flag: "pg-url", Value: "postgres://u@db/app?password=xxxxx", Secret: true}, {Flag: "ingest-url"}, {Flag: "dynamo-endpoint"}, {Flag: "redis-url"}, {Flag: "devkit-dir"}}},
		{"the vercel servers and a checkout", WorldEndpoints{IngestURL: "http://ingest:8080", DynamoEndpoint: "https://u:" + secret + "@dynamo",
			RedisURL: "redis://:" + secret + "@cache:6379/2", DevkitDir: rel}, []stormdir.Endpoint{
			{Flag: "pg-url"}, {Flag: "ingest-url", Value: "http://ingest:8080"}, {Flag: "dynamo-endpoint", Value: "https://u:xxxxx@dynamo", Secret: true},
			{Flag: "redis-url", Value: "redis://:xxxxx@cache:6379/2", Secret: true}, {Flag: "devkit-dir", Value: dir}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := storedEndpoints(tt.ep)
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
		for _, f := range endpointFlags {
			m[f.name] = stormdir.Endpoint{Flag: f.name}
		}
		edit(m)
		var out []stormdir.Endpoint
		for _, f := range endpointFlags {
			out = append(out, m[f.name])
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
		given  WorldEndpoints
		want   WorldEndpoints
		// err, when set, is the error wanted; note the note.
		err, note string
	}{
		{name: "a password: the flag not given", stored: pgSecret, worlds: pg,
			err: "--resume D: the storm ran on --pg-url postgres://u:xxxxx@db/app, which needs its password: give --pg-url again"},
		{name: "a password: the flag given again", stored: pgSecret, worlds: pg,
			given: WorldEndpoints{PGURL: "postgres://u:pw@db/app"}, want: WorldEndpoints{PGURL: "postgres://u:pw@db/app"}},
		{name: "a password: the same server in keyword settings", stored: pgSecret, worlds: pg,
			given: WorldEndpoints{PGURL: "host=db port=5432 dbname=app user=u password=pw"}, want: WorldEndpoints{PGURL: "host=db port=5432 dbname=app user=u password=pw"}},
		{name: "a password: another host", stored: pgSecret, worlds: pg, given: WorldEndpoints{PGURL: "postgres://u:pw@elsewhere/app"},
			err: "--resume D: --pg-url postgres://u:xxxxx@elsewhere/app differs from the storm's postgres://u:xxxxx@db/app (storm.json); a resumed storm keeps its servers: give the storm's server, or start a new storm"},
		{name: "a password: another database", stored: pgSecret, worlds: pg, given: WorldEndpoints{PGURL: "postgres://u:pw@db/other"},
			err: "--resume D: --pg-url postgres://u:xxxxx@db/other differs from the storm's postgres://u:xxxxx@db/app (storm.json); a resumed storm keeps its servers: give the storm's server, or start a new storm"},
		{name: "no password: the stored one is used", stored: pgOpen, worlds: pg, want: WorldEndpoints{PGURL: "postgres://u@db:5433/app?sslmode=disable"}},
		{name: "no password: another port", stored: pgOpen, worlds: pg, given: WorldEndpoints{PGURL: "postgres://u@db/app"},
			err: "--resume D: --pg-url postgres://u@db/app differs from the storm's postgres://u@db:5433/app?sslmode=disable (storm.json); a resumed storm keeps its servers: drop --pg-url, or start a new storm"},
		{name: "a password that could not be stored", stored: pgHidden, worlds: pg,
			err: "--resume D: the storm ran on --pg-url (not stored: it held a password), which needs its password: give --pg-url again"},
		{name: "a password that could not be stored, given", stored: pgHidden, worlds: pg,
			given: WorldEndpoints{PGURL: "host=db password=pw"}, want: WorldEndpoints{PGURL: "host=db password=pw"}},
		{name: "the embedded server", stored: embedded, worlds: pg},
		{name: "the embedded server, a server given", stored: embedded, worlds: pg, given: WorldEndpoints{PGURL: "postgres://u@db/app"},
			err: "--resume D: --pg-url postgres://u@db/app differs from the storm's (none: the embedded server) (storm.json); a resumed storm keeps its servers: drop --pg-url, or start a new storm"},
		{name: "a server no world of the storm uses", stored: pgSecret, worlds: local,
			given: WorldEndpoints{PGURL: "postgres://u@other/app"}, want: WorldEndpoints{PGURL: "postgres://u@other/app"}},
		{name: "vercel: the ingest server kept, redis needs its password", stored: vercelSet, worlds: vc,
			err: "--resume D: the storm ran on --redis-url redis://:xxxxx@cache:6379/2, which needs its password: give --redis-url again"},
		{name: "vercel: redis given again", stored: vercelSet, worlds: vc, given: WorldEndpoints{RedisURL: "redis://:pw@cache:6379/2"},
			want: WorldEndpoints{IngestURL: "http://ingest:8080", RedisURL: "redis://:pw@cache:6379/2"}},
		{name: "vercel: another redis database", stored: vercelSet, worlds: vc, given: WorldEndpoints{RedisURL: "redis://:pw@cache:6379/3"},
			err: "--resume D: --redis-url redis://:xxxxx@cache:6379/3 differs from the storm's redis://:xxxxx@cache:6379/2 (storm.json); a resumed storm keeps its servers: give the storm's server, or start a new storm"},
		{name: "vercel: another ingest server", stored: vercelSet, worlds: vc, given: WorldEndpoints{IngestURL: "http://ingest:9090", RedisURL: "redis://:pw@cache:6379/2"},
			err: "--resume D: --ingest-url http://ingest:9090 differs from the storm's http://ingest:8080 (storm.json); a resumed storm keeps its servers: drop --ingest-url, or start a new storm"},
		{name: "devkit: the checkout kept", stored: devkitSet, worlds: dk, want: WorldEndpoints{DevkitDir: checkout}},
		{name: "older storm.json: as given, with a note", worlds: pg, given: WorldEndpoints{PGURL: "postgres://u@db/app"}, want: WorldEndpoints{PGURL: "postgres://u@db/app"},
			note: "storm: resume D: its storm.json does not say which servers it ran on (an older stormctl): the flags given now pick them, as before; give the --pg-url the storm began with"},
		{name: "older storm.json of local cells: nothing to say", worlds: local},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := &stormdir.Resume{Dir: "D", Meta: &stormdir.Meta{Endpoints: tt.stored}}
			changed := func(flag string) bool {
				for _, f := range endpointFlags {
					if f.name == flag {
						return *f.field(&tt.given) != ""
					}
				}
				return false
			}
			got, note, err := resumeEndpoints(res, tt.worlds, tt.given, changed)
			switch {
			case tt.err != "":
				if err == nil || err.Error() != tt.err {
					t.Fatalf("err = %v\nwant %s", err, tt.err)
				}
				return
			case err != nil:
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("endpoints %+v, want %+v", got, tt.want)
			}
			if note != tt.note {
				t.Errorf("note %q, want %q", note, tt.note)
			}
		})
	}
}
