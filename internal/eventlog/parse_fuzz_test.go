package eventlog

import (
	"strconv"
	"strings"
	"testing"
)

// nameSeeds are the seeds of the name parsers' fuzz targets: every known
// name and near misses of them.
func nameSeeds(f *testing.F) {
	var seeds []string
	for _, t := range Types() {
		seeds = append(seeds, string(t))
	}
	for _, s := range Schemes() {
		seeds = append(seeds, string(s))
	}
	for _, g := range Guards() {
		seeds = append(seeds, g.String())
	}
	seeds = append(seeds, "", "step_exploded", "uuid", "bogus", "None", " seq", "seq ", "ulid\x00", "count-index,none", "\xff")
	for _, s := range seeds {
		f.Add(s)
	}
}

// checkNameParser asserts the contract of a parser of names: it accepts s
// exactly when s is the name of one of known, returns that member, and
// otherwise refuses it with an error that quotes s and lists every valid
// name.
func checkNameParser[T comparable](t *testing.T, s string, known []T, name func(T) string, parse func(string) (T, error)) {
	t.Helper()
	got, err := parse(s)
	var names []string
	for _, k := range known {
		names = append(names, name(k))
		if name(k) == s && (err != nil || got != k) {
			t.Fatalf("parse(%q) = %v, %v; want %v", s, got, err, k)
		}
	}
	if err != nil {
		if msg := err.Error(); !strings.Contains(msg, strconv.Quote(s)) || !strings.Contains(msg, "(valid: "+strings.Join(names, ", ")+")") {
			t.Fatalf("parse(%q): error %q does not quote the value and list the valid names", s, msg)
		}
		return
	}
	if name(got) != s {
		t.Fatalf("parse(%q) = %v, whose name is %q", s, got, name(got))
	}
}

// FuzzParseType: ParseType accepts exactly the names of Types.
func FuzzParseType(f *testing.F) {
	nameSeeds(f)
	f.Fuzz(func(t *testing.T, s string) {
		checkNameParser(t, s, Types(), func(t Type) string { return string(t) }, ParseType)
	})
}

// FuzzParseScheme: ParseScheme accepts exactly the names of Schemes.
func FuzzParseScheme(f *testing.F) {
	nameSeeds(f)
	f.Fuzz(func(t *testing.T, s string) {
		checkNameParser(t, s, Schemes(), func(s Scheme) string { return string(s) }, ParseScheme)
	})
}

// FuzzParseGuard: ParseGuard accepts exactly the names of Guards ("none"
// for GuardNone, not ""), and what MarshalText writes of a guard it
// accepted reads back through UnmarshalText as the same guard.
func FuzzParseGuard(f *testing.F) {
	nameSeeds(f)
	f.Fuzz(func(t *testing.T, s string) {
		checkNameParser(t, s, Guards(), Guard.String, ParseGuard)
		g, err := ParseGuard(s)
		if err != nil {
			return
		}
		var back Guard
		if b, err := g.MarshalText(); err != nil || back.UnmarshalText(b) != nil || back != g {
			t.Fatalf("ParseGuard(%q) = %q does not round-trip MarshalText/UnmarshalText: %q", s, g, back)
		}
	})
}
