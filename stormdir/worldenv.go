package stormdir

import (
	"fmt"
	"slices"
	"strings"

	"github.com/stormctl/stormctl/internal/redact"
)

// This file keeps --world-env (the settings package:… worlds read their
// configuration from) in storm.json and gives it back to a resumed storm,
// as endpoints.go does for the endpoint flags.

// Setting is a --world-env KEY=VALUE as storm.json keeps it: Value
// without its secrets (redact.Setting), Secret saying one was taken out
// (a resumed storm then needs the setting given again); a Secret with an
// empty Value was a secret whole (a key named like PASSWORD or TOKEN).
type Setting struct {
	Key    string `json:"key"`
	Value  string `json:"value"`
	Secret bool   `json:"secret,omitempty"`
}

// StoreWorldEnv is what storm.json keeps of --world-env settings env
// (each KEY=VALUE), in the order given.
func StoreWorldEnv(env []string) []Setting {
	var out []Setting
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		s := Setting{Key: k}
		s.Value, s.Secret = redact.Setting(k, v)
		out = append(out, s)
	}
	return out
}

// shown is the setting as a message names it.
func (s Setting) shown() string {
	if s.Secret && s.Value == "" {
		return s.Key + "=(not stored: a secret)"
	}
	return s.Key + "=" + s.Value
}

// WorldEnv is the --world-env a resumed storm runs with: the storm's own
// (storm.json) when none is given (changed false), the settings given
// when they are the storm's (the same keys, each value the same once its
// secrets are removed; a value stored as a whole secret is taken on
// trust). It refuses, in one line, a stored setting that held a secret
// when none is given (storm.json does not keep it: give them again), and
// settings given that are not the storm's. A storm.json without
// world_env (none given, or an older stormctl) takes what is given.
func (res *Resume) WorldEnv(given []string, changed bool) ([]string, error) {
	stored := res.Meta.WorldEnv
	if len(stored) == 0 {
		return given, nil
	}
	if !changed {
		out := make([]string, 0, len(stored))
		for _, s := range stored {
			if s.Secret {
				return nil, fmt.Errorf("--resume %s: the storm ran with --world-env %s, which held a secret %s does not keep: give its --world-env settings again", res.Dir, s.shown(), FileStorm)
			}
			out = append(out, s.Key+"="+s.Value)
		}
		return out, nil
	}
	now := StoreWorldEnv(given)
	keys := func(ss []Setting) []string {
		var k []string
		for _, s := range ss {
			k = append(k, s.Key)
		}
		slices.Sort(k)
		return slices.Compact(k)
	}
	if !slices.Equal(keys(now), keys(stored)) {
		return nil, fmt.Errorf("--resume %s: --world-env sets %s, the storm set %s (%s); a resumed storm keeps its world environment: give the same settings, or drop --world-env",
			res.Dir, strings.Join(keys(now), ", "), strings.Join(keys(stored), ", "), FileStorm)
	}
	for _, g := range now {
		i := slices.IndexFunc(stored, func(s Setting) bool { return s.Key == g.Key })
		s := stored[i]
		if s.Secret && s.Value == "" {
			continue // a whole secret: the value given is taken on trust
		}
		if g.Value != s.Value {
			return nil, fmt.Errorf("--resume %s: --world-env %s differs from the storm's %s (%s); a resumed storm keeps its world environment: give the storm's, or drop --world-env",
				res.Dir, g.shown(), s.shown(), FileStorm)
		}
	}
	return given, nil
}
