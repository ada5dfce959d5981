package eventlog

import (
	"fmt"
	"strings"
)

// Guard names a legacy interim guard a world applies to a run's
// AppendFenced instead of a fence.
//
// GuardNone, the zero value, is the one way to say "no guard". It is written
// "none" where a guard is always shown (storm.json's condition knobs, the
// conditions listing) and left out where it is optional (a Run's JSON, the
// vercel world's items); "none" reads back as GuardNone.
type Guard string

// The guards.
const (
	// GuardNone is no guard: fenced appends are fenced, or not, by the
	// world's own scheme.
	GuardNone Guard = ""
	// GuardCountIndex is the legacy interim guard: a per-run event count in a
	// side index (Redis), checked by the handler before the write, one-sided.
	GuardCountIndex Guard = "count-index"
)

// Guards returns every guard, GuardNone first.
func Guards() []Guard { return []Guard{GuardNone, GuardCountIndex} }

// String returns the guard's name: "none" for GuardNone.
func (g Guard) String() string {
	if g == GuardNone {
		return "none"
	}
	return string(g)
}

// ParseGuard parses a guard name ("none" or "count-index"), naming the valid
// ones on failure.
func ParseGuard(s string) (Guard, error) {
	names := make([]string, 0, len(Guards()))
	for _, g := range Guards() {
		if g.String() == s {
			return g, nil
		}
		names = append(names, g.String())
	}
	return GuardNone, fmt.Errorf("unknown guard %q (valid: %s)", s, strings.Join(names, ", "))
}

// MarshalText writes the guard's name, "none" for GuardNone.
func (g Guard) MarshalText() ([]byte, error) { return []byte(g.String()), nil }

// UnmarshalText reads a guard name; "none" and "" both read as GuardNone. An
// unknown name is kept as it is, for the world that is asked to apply it to
// refuse.
func (g *Guard) UnmarshalText(b []byte) error {
	if string(b) == GuardNone.String() {
		*g = GuardNone
		return nil
	}
	*g = Guard(b)
	return nil
}
