package cli

import (
	"fmt"
	"net/url"
	"path/filepath"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/redis/go-redis/v9"

	"github.com/stormctl/stormctl/internal/redact"
	"github.com/stormctl/stormctl/stormdir"
	"github.com/stormctl/stormctl/worlds/devkit"
	"github.com/stormctl/stormctl/worlds/postgres"
	"github.com/stormctl/stormctl/worlds/vercel"
)

// endpointFlag is one flag that picks a server a storm's worlds run on.
type endpointFlag struct {
	// name is the flag's, without dashes (storm.Endpoint.Flag).
	name string
	// field is the WorldEndpoints field the flag sets.
	field func(*WorldEndpoints) *string
	// worlds are the worlds that use the server: a resumed storm with none
	// of them has no use for it.
	worlds []string
	// server is what names the server in a value of the flag (host, port,
	// database), so that two values of the flag can be told to pick the
	// same server or not; "" when the value does not parse.
	server func(v string) string
}

// endpointFlags are every flag WorldEndpoints.AddFlags declares
// (TestEndpointFlagsCoverAddFlags keeps the two in step).
var endpointFlags = []endpointFlag{
	{"pg-url", func(ep *WorldEndpoints) *string { return &ep.PGURL }, []string{postgres.Name}, pgServer},
	{"ingest-url", func(ep *WorldEndpoints) *string { return &ep.IngestURL }, []string{vercel.Name}, httpServer},
	{"dynamo-endpoint", func(ep *WorldEndpoints) *string { return &ep.DynamoEndpoint }, []string{vercel.Name}, httpServer},
	{"redis-url", func(ep *WorldEndpoints) *string { return &ep.RedisURL }, []string{vercel.Name}, redisServer},
	{"devkit-dir", func(ep *WorldEndpoints) *string { return &ep.DevkitDir }, []string{devkit.LocalName, devkit.PostgresName}, dirServer},
}

// storedEndpoints is ep as storm.json keeps it: every endpoint flag, its
// value with any secret removed by redactURL ("" when not given), a
// --devkit-dir made absolute (a resumed storm may run from another
// directory).
func storedEndpoints(ep WorldEndpoints) []stormdir.Endpoint {
	out := make([]stormdir.Endpoint, 0, len(endpointFlags))
	for _, f := range endpointFlags {
		v := *f.field(&ep)
		e := stormdir.Endpoint{Flag: f.name}
		switch {
		case v == "":
		case f.name == "devkit-dir":
			abs, err := filepath.Abs(v)
			if err != nil {
				abs = v
			}
			e.Value = abs
		default:
			e.Value = redact.String(v)
			e.Secret = e.Value != v
			if pw := pgPassword(f.name, v); pw != "" && strings.Contains(e.Value, pw) {
				// A form the redaction left the password in (keyword=value
				// settings, a password= parameter): not stored at all.
				e.Value, e.Secret = "", true
			}
		}
		out = append(out, e)
	}
	return out
}

// pgPassword is the password pgx reads from a --pg-url value ("" for
// another flag, or none).
func pgPassword(flag, v string) string {
	if flag != "pg-url" {
		return ""
	}
	c, err := pgx.ParseConfig(v)
	if err != nil {
		return ""
	}
	return c.Password
}

// resumeEndpoints are the endpoints a resumed storm runs on: for each flag
// that picks a server one of its worlds uses, the storm's own (from
// storm.json) when the flag is not given, the flag's value when it is and
// picks the same server. It refuses (a usage error's text) a flag given for
// another server, and a stored server that needed a secret when the flag
// is not given again. A storm.json from before endpoints were stored has
// none: the flags given are used as they are, and note says so, once.
func resumeEndpoints(res *stormdir.Resume, worldNames []string, given WorldEndpoints, changed func(flag string) bool) (ep WorldEndpoints, note string, err error) {
	ep = given
	var used []endpointFlag
	for _, f := range endpointFlags {
		if slices.ContainsFunc(f.worlds, func(w string) bool { return slices.Contains(worldNames, w) }) {
			used = append(used, f)
		}
	}
	stored := res.Meta.Endpoints
	if stored == nil {
		if len(used) == 0 {
			return ep, "", nil
		}
		var flags []string
		for _, f := range used {
			flags = append(flags, "--"+f.name)
		}
		return ep, fmt.Sprintf("storm: resume %s: its %s does not say which servers it ran on (an older stormctl): the flags given now pick them, as before; give the %s the storm began with",
			res.Dir, "storm.json", strings.Join(flags, ", ")), nil
	}
	for _, f := range used {
		i := slices.IndexFunc(stored, func(e stormdir.Endpoint) bool { return e.Flag == f.name })
		if i < 0 {
			continue // a flag this storm.json does not know: as given
		}
		s, v := stored[i], f.field(&ep)
		if !changed(f.name) {
			if s.Secret {
				return ep, "", fmt.Errorf("--resume %s: the storm ran on --%s %s, which needs its password: give --%s again",
					res.Dir, f.name, storedValue(s), f.name)
			}
			*v = s.Value // "": the world's own embedded server, as the storm ran
			continue
		}
		if s.Value == "" && s.Secret {
			continue // the server was not stored: the flag given is taken on trust
		}
		if !sameServer(f, *v, s.Value) {
			fix := "drop --" + f.name
			if s.Secret {
				fix = "give the storm's server"
			}
			return ep, "", fmt.Errorf("--resume %s: --%s %s differs from the storm's %s (storm.json); a resumed storm keeps its servers: %s, or start a new storm",
				res.Dir, f.name, redact.String(*v), storedValue(s), fix)
		}
	}
	return ep, "", nil
}

// sameServer says a value of flag f given to a resumed storm picks the
// server of the storm's stored value ("": the embedded one): the same host,
// port and database (or directory); values that do not parse are compared
// as they are, secrets removed.
func sameServer(f endpointFlag, given, stored string) bool {
	if stored == "" {
		return given == ""
	}
	g, s := f.server(given), f.server(stored)
	if g == "" || s == "" {
		return redact.String(given) == stored
	}
	return g == s
}

// storedValue names a stored endpoint in a message.
func storedValue(e stormdir.Endpoint) string {
	switch {
	case e.Value != "":
		return e.Value
	case e.Secret:
		return "(not stored: it held a password)"
	}
	return "(none: the embedded server)"
}

// pgServer names the server and database of a PostgreSQL connection string.
func pgServer(v string) string {
	c, err := pgx.ParseConfig(v)
	if err != nil {
		return ""
	}
	return fmt.Sprintf("%s:%d/%s", strings.ToLower(c.Host), c.Port, c.Database)
}

// httpServer names the host, port and path of an http(s) URL.
func httpServer(v string) string {
	u, err := url.Parse(v)
	if err != nil {
		return ""
	}
	return strings.ToLower(u.Host) + "/" + strings.Trim(u.Path, "/")
}

// redisServer names the address and database of a Redis URL.
func redisServer(v string) string {
	o, err := redis.ParseURL(v)
	if err != nil {
		return ""
	}
	return fmt.Sprintf("%s/%d", strings.ToLower(o.Addr), o.DB)
}

// dirServer names a directory by its absolute path.
func dirServer(v string) string {
	abs, err := filepath.Abs(v)
	if err != nil {
		return filepath.Clean(v)
	}
	return abs
}
