package worlds_test

import (
	"strings"
	"testing"

	"github.com/stormctl/stormctl/internal/eventlog"
	"github.com/stormctl/stormctl/worlds"
)

// TestRealProfileIsMeasured: the built-in real profile parses, draws a
// window for every event type, and every row says it was derived from the
// real runtime's windows (none is an assumption).
func TestRealProfileIsMeasured(t *testing.T) {
	p, err := worlds.ParseProfile(worlds.RealProfile, 1)
	if err != nil {
		t.Fatal(err)
	}
	if p.String() != worlds.RealProfile {
		t.Errorf("String() = %q, want %q", p.String(), worlds.RealProfile)
	}
	for _, w := range p.Windows() {
		if !strings.HasPrefix(w.Source, "measured") {
			t.Errorf("row %s: source %q, want a row measured under the real runtime", w.Type, w.Source)
		}
	}
	for _, typ := range eventlog.Types() {
		if d := p.Delay(typ); d <= 0 {
			t.Errorf("Delay(%s) = %s, want a drawn window", typ, d)
		}
	}
}

// TestResolveProfile: auto draws nothing on a world whose package spends
// its own windows and the real profile elsewhere; every other value is the
// same profile on every world.
func TestResolveProfile(t *testing.T) {
	own, ours := worlds.Entry{Name: "devkit-postgres", OwnWindows: true}, worlds.Entry{Name: "postgres"}
	for _, tc := range []struct {
		spec  string
		world worlds.Entry
		want  string
	}{
		{worlds.AutoProfile, own, "none"},
		{worlds.AutoProfile, ours, worlds.RealProfile},
		{worlds.RealProfile, own, worlds.RealProfile},
		{worlds.SeedProfile, own, worlds.SeedProfile},
		{worlds.SeedProfile, ours, worlds.SeedProfile},
		{"none", ours, "none"},
		{"fixed:3ms", own, "fixed:3ms"},
	} {
		p, err := worlds.ResolveProfile(tc.spec, tc.world, 1)
		if err != nil {
			t.Fatalf("%s on %s: %v", tc.spec, tc.world.Name, err)
		}
		if p.String() != tc.want {
			t.Errorf("%s on %s: drew %q, want %q", tc.spec, tc.world.Name, p.String(), tc.want)
		}
	}
	if _, err := worlds.ResolveProfile("weird", ours, 1); err == nil {
		t.Error("ResolveProfile(weird) succeeded, want the parse error")
	}
}
