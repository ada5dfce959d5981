package stormdir

import (
	"fmt"
	"slices"
	"strings"

	"github.com/stormctl/stormctl/internal/base/redact"
	"github.com/stormctl/stormctl/worlds"
)

// This file keeps the servers a storm's worlds ran on (storm.json's
// endpoints) and gives them back to a resumed storm. Which flags there
// are, and how each names its server and hides its secrets, is the
// worlds' to say (worlds.Endpoint).

// StoreEndpoints is what storm.json keeps of the endpoint flags eps given
// the values v: every flag, in the order of eps, its value as its Store
// gives it ("" when not given).
func StoreEndpoints(eps []worlds.Endpoint, v worlds.Values) []Endpoint {
	out := make([]Endpoint, 0, len(eps))
	for _, f := range eps {
		e := Endpoint{Flag: f.Name}
		if x := v[f.Name]; x != "" {
			e.Value, e.Secret = storeValue(f, x)
		}
		out = append(out, e)
	}
	return out
}

// storeValue is a value of flag f as storm.json keeps it.
func storeValue(f worlds.Endpoint, v string) (string, bool) {
	if f.Store != nil {
		return f.Store(v)
	}
	s := redact.String(v)
	return s, s != v
}

// Endpoints are the endpoint values a resumed storm of the worlds
// worldNames runs on: for each flag of reg one of those worlds uses, the
// storm's own (storm.json) when the flag is not given (changed reports
// which are), the value given when it picks the same server. It refuses
// (an error of one line) a flag given for another server, and a stored
// server that needed a secret when the flag is not given again. A
// storm.json from before endpoints were stored has none: the values given
// are used as they are, and note says so, once. given is not changed.
func (res *Resume) Endpoints(reg *worlds.Registry, worldNames []string, given worlds.Values, changed func(flag string) bool) (v worlds.Values, note string, err error) {
	v = given.Clone()
	if v == nil {
		v = worlds.Values{}
	}
	var used []worlds.Endpoint
	for _, f := range reg.Endpoints() {
		if slices.ContainsFunc(reg.Using(f.Name), func(w string) bool { return slices.Contains(worldNames, w) }) {
			used = append(used, f)
		}
	}
	stored := res.Meta.Endpoints
	if stored == nil {
		if len(used) == 0 {
			return v, "", nil
		}
		var flags []string
		for _, f := range used {
			flags = append(flags, "--"+f.Name)
		}
		return v, fmt.Sprintf("storm: resume %s: its %s does not say which servers it ran on (an older stormctl): the flags given now pick them, as before; give the %s the storm began with",
			res.Dir, FileStorm, strings.Join(flags, ", ")), nil
	}
	for _, f := range used {
		i := slices.IndexFunc(stored, func(e Endpoint) bool { return e.Flag == f.Name })
		if i < 0 {
			continue // a flag this storm.json does not know: as given
		}
		s := stored[i]
		if !changed(f.Name) {
			if s.Secret {
				return v, "", fmt.Errorf("--resume %s: the storm ran on --%s %s, which needs its password: give --%s again",
					res.Dir, f.Name, storedValue(s), f.Name)
			}
			v[f.Name] = s.Value // "": the world's own embedded server, as the storm ran
			continue
		}
		if s.Value == "" && s.Secret {
			continue // the server was not stored: the value given is taken on trust
		}
		if !sameServer(f, v[f.Name], s.Value) {
			fix := "drop --" + f.Name
			if s.Secret {
				fix = "give the storm's server"
			}
			return v, "", fmt.Errorf("--resume %s: --%s %s differs from the storm's %s (%s); a resumed storm keeps its servers: %s, or start a new storm",
				res.Dir, f.Name, redact.String(v[f.Name]), storedValue(s), FileStorm, fix)
		}
	}
	return v, "", nil
}

// sameServer says a value of flag f given to a resumed storm picks the
// server of the storm's stored value ("": the embedded one): the same
// server as f's Server names it; values that do not parse, or of a flag
// without Server, are compared as stored, secrets removed.
func sameServer(f worlds.Endpoint, given, stored string) bool {
	if stored == "" {
		return given == ""
	}
	if f.Server == nil {
		return redact.String(given) == stored
	}
	g, s := f.Server(given), f.Server(stored)
	if g == "" || s == "" {
		return redact.String(given) == stored
	}
	return g == s
}

// storedValue names a stored endpoint in a message.
func storedValue(e Endpoint) string {
	switch {
	case e.Value != "":
		return e.Value
	case e.Secret:
		return "(not stored: it held a password)"
	}
	return "(none: the embedded server)"
}
