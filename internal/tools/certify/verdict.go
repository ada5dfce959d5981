// Package certify is the report card of one World package (stormctl
// certify): the conformance suite's checks that apply to it
// (worlds/worldtest, run on a runner of its own, RunSuite), contention
// checks under concurrent writers and readers (Contend), and, beside them,
// a short storm's table. Each check ends as a Result with a Verdict that
// Decide derives from what the check observed: nothing passes on nothing
// (a check with no evidence, or one that could not run, is UNKNOWN; one
// that does not apply is SKIP with the reason).
package certify

import (
	"errors"
	"fmt"
)

// Verdict is a check's outcome.
type Verdict string

// The verdicts.
const (
	// Pass: the check ran, observed what it looks for, and found no
	// counterexample.
	Pass Verdict = "PASS"
	// Fail: the check found a counterexample (Result.Detail).
	Fail Verdict = "FAIL"
	// Skip: the check does not apply to the package (Result.Detail says why:
	// a limit its contract declares, or an ability it lacks).
	Skip Verdict = "SKIP"
	// Unknown: the check could not decide: it did not run to its end (an
	// error of the harness or the machine) or observed nothing.
	Unknown Verdict = "UNKNOWN"
)

// Section groups a card's checks.
type Section string

// The sections of a card, in order.
const (
	Conformance Section = "conformance"
	Contention  Section = "contention"
)

// Result is one check's line on the card.
type Result struct {
	Section Section `json:"section"`
	Name    string  `json:"name"`
	Verdict Verdict `json:"verdict"`
	// Detail is the first counterexample (FAIL), the reason (SKIP,
	// UNKNOWN) or the evidence (PASS).
	Detail string `json:"detail"`
	// Layer is who a FAIL or UNKNOWN is about: "world" (the package's
	// store), "harness" (stormctl) or "machine" (infrastructure).
	Layer string `json:"layer,omitempty"`
}

// Evidence is what one check observed.
type Evidence struct {
	// Observed counts the observations the check made (contended
	// creations, reads compared, events ordered); Of says what they are.
	Observed int
	Of       string
	// Counterexample is the first violation found ("" for none).
	Counterexample string
	// Skip is why the check does not apply ("" when it does).
	Skip string
	// Err is why the check could not run to its end.
	Err error
	// Also is said after the verdict's detail when the check ran.
	Also string
}

// ErrMachine marks an Evidence.Err of the machine (a server down, npm
// unreachable), not of stormctl: its Result's layer is "machine".
var ErrMachine = errors.New("infrastructure")

// Decide turns what a check observed into its verdict: a counterexample
// fails it whatever else happened (it was observed); a check that does
// not apply is SKIP; one that could not run, or observed nothing, is
// UNKNOWN; only a check that observed something and found no
// counterexample passes.
func Decide(section Section, name string, e Evidence) Result {
	r := Result{Section: section, Name: name}
	switch {
	case e.Counterexample != "":
		r.Verdict, r.Detail, r.Layer = Fail, e.Counterexample, "world"
	case e.Skip != "":
		r.Verdict, r.Detail = Skip, e.Skip
	case e.Err != nil:
		r.Verdict, r.Detail, r.Layer = Unknown, "could not run: "+e.Err.Error(), "harness"
		if errors.Is(e.Err, ErrMachine) {
			r.Layer = "machine"
		}
	case e.Observed <= 0:
		r.Verdict, r.Detail = Unknown, "no evidence: nothing was observed"
		if e.Of != "" {
			r.Detail = "no evidence: no " + e.Of + " observed"
		}
	default:
		r.Verdict, r.Detail = Pass, fmt.Sprintf("%d %s", e.Observed, e.Of)
	}
	if e.Also != "" && (r.Verdict == Pass || r.Verdict == Fail) {
		r.Detail += "; " + e.Also
	}
	return r
}
