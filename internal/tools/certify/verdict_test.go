package certify_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stormctl/stormctl/internal/tools/certify"
)

// TestDecide: a counterexample fails whatever else happened; a check that
// does not apply skips; one that could not run, or observed nothing, is
// UNKNOWN: nothing passes on nothing.
func TestDecide(t *testing.T) {
	for _, tt := range []struct {
		name   string
		e      certify.Evidence
		want   certify.Verdict
		layer  string
		detail string
	}{
		{"observed, no counterexample", certify.Evidence{Observed: 3, Of: "reads"}, certify.Pass, "", "3 reads"},
		{"no evidence is not a pass", certify.Evidence{Of: "reads"}, certify.Unknown, "", "no evidence: no reads observed"},
		{"no evidence, unnamed", certify.Evidence{}, certify.Unknown, "", "no evidence: nothing was observed"},
		{"negative count is no evidence", certify.Evidence{Observed: -1}, certify.Unknown, "", "no evidence: nothing was observed"},
		{"counterexample", certify.Evidence{Observed: 3, Counterexample: "run r: two"}, certify.Fail, "world", "run r: two"},
		{"counterexample before an error", certify.Evidence{Counterexample: "dup", Err: errors.New("later")}, certify.Fail, "world", "dup"},
		{"counterexample beats skip", certify.Evidence{Counterexample: "dup", Skip: "n/a"}, certify.Fail, "world", "dup"},
		{"skip", certify.Evidence{Skip: "no clock"}, certify.Skip, "", "no clock"},
		{"skip with observations", certify.Evidence{Observed: 5, Skip: "no clock"}, certify.Skip, "", "no clock"},
		{"error, with observations", certify.Evidence{Observed: 5, Err: errors.New("boom")}, certify.Unknown, "harness", "could not run: boom"},
		{"machine error", certify.Evidence{Err: fmt.Errorf("%w: redis down", certify.ErrMachine)}, certify.Unknown, "machine", "could not run: infrastructure: redis down"},
		{"a pass says the refusals too", certify.Evidence{Observed: 3, Of: "creations", Also: "2 writes refused"}, certify.Pass, "", "3 creations; 2 writes refused"},
		{"a failure says them too", certify.Evidence{Observed: 3, Counterexample: "dup", Also: "2 writes refused"}, certify.Fail, "world", "dup; 2 writes refused"},
		{"no evidence says nothing of them", certify.Evidence{Also: "2 writes refused"}, certify.Unknown, "", "no evidence: nothing was observed"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := certify.Decide(certify.Contention, "check", tt.e)
			if r.Verdict != tt.want || r.Layer != tt.layer || r.Detail != tt.detail {
				t.Errorf("Decide(%+v) = %s [%s] %q, want %s [%s] %q", tt.e, r.Verdict, r.Layer, r.Detail, tt.want, tt.layer, tt.detail)
			}
		})
	}
}

// TestOutcome: a card passes only with a pass and neither a failure nor
// an unknown; a card with no check run never passes.
func TestOutcome(t *testing.T) {
	res := func(vs ...certify.Verdict) []certify.Result {
		var out []certify.Result
		for _, v := range vs {
			out = append(out, certify.Result{Verdict: v})
		}
		return out
	}
	for _, tt := range []struct {
		name string
		rs   []certify.Result
		want certify.Outcome
	}{
		{"nothing", nil, certify.Undecided},
		{"only skips", res(certify.Skip, certify.Skip), certify.Undecided},
		{"passes and skips", res(certify.Pass, certify.Skip), certify.Passed},
		{"an unknown", res(certify.Pass, certify.Unknown), certify.Undecided},
		{"a failure", res(certify.Pass, certify.Fail, certify.Unknown), certify.Failed},
	} {
		if got := (certify.Card{Results: tt.rs}).Outcome(); got != tt.want {
			t.Errorf("%s: Outcome = %s, want %s", tt.name, got, tt.want)
		}
	}
}
