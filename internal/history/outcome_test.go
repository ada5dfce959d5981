package history

import "testing"

// TestOutcomes: one definition of a decided run (completed, corrupted,
// silent, gap, hole), and storm --help lists every outcome with its
// meaning, from Meaning.
func TestOutcomes(t *testing.T) {
	t.Parallel()
	for _, o := range Outcomes() {
		want := o != Stuck && o != Failed && o != Infra
		if o.Decided() != want {
			t.Errorf("%s.Decided() = %v, want %v", o, o.Decided(), want)
		}
		if o.Meaning() == "" {
			t.Errorf("outcome %s has no meaning", o)
		}
	}
	if m := Outcome("nonesuch").Meaning(); m != "" {
		t.Errorf("a name that is no outcome means %q, want nothing", m)
	}
}
