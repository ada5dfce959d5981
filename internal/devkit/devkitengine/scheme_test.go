package devkitengine

import (
	"testing"

	"github.com/stormctl/stormctl/internal/eventlog"
)

// TestSchemeOf: slot ids from spec 6 on, ULIDs before, and no or a
// nonsensical version is an error rather than a guess.
func TestSchemeOf(t *testing.T) {
	v := func(n int) *int { return &n }
	for _, tc := range []struct {
		name string
		spec *int
		want eventlog.Scheme
		err  bool
	}{
		{"4.x (spec 3)", v(3), eventlog.SchemeULID, false},
		{"beta.27 (spec 5)", v(5), eventlog.SchemeULID, false},
		{"slot ids (spec 6)", v(6), eventlog.SchemeSlot, false},
		{"sealed logs (spec 7)", v(7), eventlog.SchemeSlot, false},
		{"no version", nil, "", true},
		{"zero", v(0), "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := schemeOf(tc.spec)
			if (err != nil) != tc.err || got != tc.want {
				t.Errorf("schemeOf = %q, %v; want %q, error %v", got, err, tc.want, tc.err)
			}
		})
	}
}
