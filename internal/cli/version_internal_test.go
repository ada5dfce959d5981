package cli

import (
	"runtime/debug"
	"testing"
)

// TestVersionOf: a release prints as it is; a (devel) build prints its VCS
// stamp (commit, time, modified), never "(devel)".
func TestVersionOf(t *testing.T) {
	stamp := func(kv ...string) []debug.BuildSetting {
		var out []debug.BuildSetting
		for i := 0; i < len(kv); i += 2 {
			out = append(out, debug.BuildSetting{Key: kv[i], Value: kv[i+1]})
		}
		return out
	}
	const rev = "027270d5e1c3a4b2f0e9d8c7b6a5f4e3d2c1b0a9"
	tests := []struct {
		name string
		bi   *debug.BuildInfo
		want string
	}{
		{"release", &debug.BuildInfo{Main: debug.Module{Version: "v1.4.0"}}, "v1.4.0"},
		{"pseudo-version", &debug.BuildInfo{Main: debug.Module{Version: "v0.0.0-20261203101112-027270d5e1c3+dirty"}}, "v0.0.0-20261203101112-027270d5e1c3+dirty"},
		{"devel, modified", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"},
			Settings: stamp("vcs", "git", "vcs.revision", rev, "vcs.time", "2026-12-03T10:11:12Z", "vcs.modified", "true")},
			"devel+027270d (2026-12-03T10:11:12Z, modified)"},
		{"devel, clean", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"},
			Settings: stamp("vcs.revision", rev, "vcs.time", "2026-12-03T10:11:12Z", "vcs.modified", "false")},
			"devel+027270d (2026-12-03T10:11:12Z)"},
		{"devel, a revision alone", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: stamp("vcs.revision", "abc")}, "devel+abc"},
		{"devel, no stamp", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}, "devel (no VCS stamp)"},
		{"empty version, no stamp", &debug.BuildInfo{}, "devel (no VCS stamp)"},
		{"no build info", nil, "devel (no build info)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := versionOf(tc.bi); got != tc.want {
				t.Errorf("versionOf = %q, want %q", got, tc.want)
			}
		})
	}
}
