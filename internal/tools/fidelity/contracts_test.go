package fidelity

import (
	"strings"
	"testing"
)

// TestJudgeContracts: a contract's claim passes only on figures of worlds
// whose real runs all carried its spec, compared with the model under its
// condition, none separated; it fails on a separated one; it is unknown
// (never a pass) when no real run carried the spec, the model ran another
// condition, or nothing was compared; a contract no spec names is always
// unknown.
func TestJudgeContracts(t *testing.T) {
	within := Figure{World: "devkit-local", Scenario: StepStorm, Name: "bad", Gap: Within}
	separated := Figure{World: "devkit-local", Scenario: StepStorm, Name: "bad", Gap: Off, Separated: true}
	otherWorld := Figure{World: "devkit-postgres", Scenario: StepStorm, Name: "bad", Gap: Off, Separated: true}
	unmeasured := Figure{World: "devkit-local", Scenario: StepStorm, Name: "corrupted+silent of decided runs", Gap: NoMeasure}
	spec := func(v int) map[string]map[int]int { return map[string]map[int]int{"devkit-local": {v: 12}} }
	tests := []struct {
		name      string
		figs      []Figure
		modelCond string
		specs     map[string]map[int]int
		want      map[string]Verdict // contract name -> verdict; the rest unknown
		evidence  map[string]string  // contract name -> text its evidence holds
	}{
		{"no spec recorded", []Figure{within}, Main, nil, nil,
			map[string]string{"legacy": "none recorded", "single orchestrator": "not on the registry"}},
		{"legacy agrees", []Figure{within}, Main, spec(3), map[string]Verdict{"legacy": Pass},
			map[string]string{"legacy": "1 figures on devkit-local compared", "slot ids, sealed log": "devkit-local spec 3 x12"}},
		{"legacy separated", []Figure{within, separated}, Main, spec(3), map[string]Verdict{"legacy": Fail},
			map[string]string{"legacy": "1 of 2 figures"}},
		{"spec 7 with the model under main", []Figure{within}, Main, spec(7), nil,
			map[string]string{"slot ids, sealed log": "--model-condition slot+noop"}},
		{"spec 7 agrees", []Figure{within, otherWorld}, "slot+noop",
			map[string]map[int]int{"devkit-local": {7: 12}, "devkit-postgres": {5: 12}}, map[string]Verdict{"slot ids, sealed log": Pass},
			map[string]string{"slot ids, sealed log": "1 figures on devkit-local"}},
		{"mixed specs in a world", []Figure{within}, Main, map[string]map[int]int{"devkit-local": {3: 6, 7: 6}}, nil, nil},
		{"nothing measured", []Figure{unmeasured}, Main, spec(3), nil,
			map[string]string{"legacy": "a side decided no run of devkit-local step-storm"}},
		{"both sides at 0 only", []Figure{{World: "devkit-local", Scenario: StepStorm, Name: "stuck of runs", Gap: BothZero}}, Main, spec(3), nil,
			map[string]string{"legacy": "measured above 0"}},
		{"an undecided cell among agreeing figures", []Figure{within, {World: "devkit-local", Scenario: HookStorm, Name: "corrupted+silent of decided runs", Gap: NoMeasure}}, Main, spec(3), nil,
			map[string]string{"legacy": "decided no run of devkit-local hook-storm"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := NewReferenceReport(tt.figs, nil)
			r.SetModelCondition(tt.modelCond)
			r.JudgeContracts(tt.specs)
			if len(r.Contracts) != len(Contracts()) {
				t.Fatalf("%d claims, want one per contract (%d)", len(r.Contracts), len(Contracts()))
			}
			for _, c := range r.Contracts {
				want := tt.want[c.Contract.Name]
				if want == "" {
					want = Unknown
				}
				if c.Verdict != want {
					t.Errorf("%s: %s (%s), want %s", c.Contract.Name, c.Verdict, c.Evidence, want)
				}
				if sub := tt.evidence[c.Contract.Name]; sub != "" && !strings.Contains(c.Evidence, sub) {
					t.Errorf("%s: evidence %q, want it to hold %q", c.Contract.Name, c.Evidence, sub)
				}
				if c.Contract.Spec == 9 && c.Verdict != Unknown {
					t.Errorf("spec 9 judged %s with no package carrying it", c.Verdict)
				}
			}
		})
	}
}
