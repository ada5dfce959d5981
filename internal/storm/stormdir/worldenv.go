package stormdir

import (
	"fmt"
	"slices"
	"strings"

	"github.com/stormctl/stormctl/internal/base/redact"
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
	nowBy, nowKeys := byKey(now)
	storedBy, storedKeys := byKey(stored)
	if !slices.Equal(nowKeys, storedKeys) {
		return nil, fmt.Errorf("--resume %s: --world-env sets %s, the storm set %s (%s); a resumed storm keeps its world environment: give the same settings, or drop --world-env",
			res.Dir, strings.Join(nowKeys, ", "), strings.Join(storedKeys, ", "), FileStorm)
	}
	// A key given more than once is compared setting by setting, in order
	// (the last one is the one its sidecar reads): every stored setting of
	// the key, not only the first.
	for _, k := range nowKeys {
		gs, ss := nowBy[k], storedBy[k]
		if !sameSettings(gs, ss) {
			return nil, fmt.Errorf("--resume %s: --world-env %s differs from the storm's %s (%s); a resumed storm keeps its world environment: give the storm's, or drop --world-env",
				res.Dir, shownAll(gs), shownAll(ss), FileStorm)
		}
	}
	return given, nil
}

// byKey groups settings by key, each key's in the order given, and lists
// the keys, sorted.
func byKey(ss []Setting) (map[string][]Setting, []string) {
	by := map[string][]Setting{}
	var keys []string
	for _, s := range ss {
		if _, ok := by[s.Key]; !ok {
			keys = append(keys, s.Key)
		}
		by[s.Key] = append(by[s.Key], s)
	}
	slices.Sort(keys)
	return by, keys
}

// sameSettings reports whether the settings given of one key are the
// storm's: as many, each value the stored one once its secrets are removed
// (a value stored as a whole secret is taken on trust).
func sameSettings(given, stored []Setting) bool {
	if len(given) != len(stored) {
		return false
	}
	for i, s := range stored {
		if !(s.Secret && s.Value == "") && given[i].Value != s.Value {
			return false
		}
	}
	return true
}

// shownAll is settings of one key as a message names them.
func shownAll(ss []Setting) string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = s.shown()
	}
	return strings.Join(out, ", ")
}
