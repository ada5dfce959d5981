package forensics

import (
	"testing"

	"github.com/stormctl/stormctl/internal/eventlog"
)

func TestExtraEnds(t *testing.T) {
	t.Parallel()
	ev := func(typ eventlog.Type) eventlog.Event { return eventlog.Event{Type: typ} }
	created, completed, failed := ev(eventlog.RunCreated), ev(eventlog.RunCompleted), ev(eventlog.RunFailed)
	for _, tc := range []struct {
		name string
		evs  []eventlog.Event
		want int
	}{
		{"empty", nil, 0},
		{"a run not ended", []eventlog.Event{created, ev(eventlog.StepCreated)}, 0},
		{"ended once", []eventlog.Event{created, completed}, 0},
		{"completed twice", []eventlog.Event{created, completed, completed}, 1},
		{"failed twice (world-local 4.4.1, a storm of 12-06)", []eventlog.Event{created, failed, failed}, 1},
		{"completed nine times", []eventlog.Event{created, completed, completed, completed, completed, completed, completed, completed, completed, completed}, 8},
		{"completed, then failed", []eventlog.Event{created, completed, failed}, 1},
	} {
		if got := ExtraEnds(tc.evs); got != tc.want {
			t.Errorf("%s: ExtraEnds = %d, want %d", tc.name, got, tc.want)
		}
		var f RunFindings
		checkEnds(&run{RunInput: RunInput{Final: tc.evs}}, &f)
		if f.DuplicateEnds != tc.want {
			t.Errorf("%s: checkEnds counts %d, want %d", tc.name, f.DuplicateEnds, tc.want)
		}
	}
}
