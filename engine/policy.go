package engine

import (
	"fmt"
	"strings"
	"time"
)

// IDPolicy is how correlation ids are drawn.
type IDPolicy string

// WakePolicy is how branches resumed by the log are scheduled.
type WakePolicy string

// FencePolicy is which appends are fenced.
type FencePolicy string

// RejectPolicy is what a writer does after a fenced rejection.
type RejectPolicy string

// AdmissionPolicy is how many invocations of one run may replay at once.
type AdmissionPolicy string

// SealPolicy is what a reader does about an empty slot below a committed one
// (the slot scheme's hole).
type SealPolicy string

// Policy values.
const (
	IDsPositional IDPolicy = "positional"
	IDsCallsite   IDPolicy = "callsite"

	// WakeOrdered delivers results in log order and lets each woken branch
	// run until it blocks before the next delivery (strict in-order
	// delivery: #3196's fixes and the seed's Phase D).
	WakeOrdered WakePolicy = "ordered"
	// WakeEngine is the shipped engine's delivery: log order through
	// delivery barriers, with its one named gap (GapBufferedHook).
	WakeEngine WakePolicy = "engine"
	// WakeShuffle resumes the branches a run of consecutive facts woke
	// through goroutines of their own, on every replay, so they draw ids in
	// whatever order the Go scheduler gives: far more nondeterminism than
	// the real engine has, kept for sensitivity studies.
	WakeShuffle WakePolicy = "shuffle"
	// WakeRacy is the old name of WakeShuffle, still accepted.
	WakeRacy WakePolicy = "racy"

	FenceNone          FencePolicy = "none"
	FenceDecisions     FencePolicy = "decisions"
	FenceDecisionsOnly FencePolicy = "decisions-only"
	FenceAll           FencePolicy = "all"

	RejectRederive RejectPolicy = "rederive"
	RejectRepost   RejectPolicy = "repost"

	AdmitAll          AdmissionPolicy = "none"
	AdmitSingleRunner AdmissionPolicy = "single-runner"

	// SealNone refuses the load (spec 6): the invocation is retried as a
	// recovery, and a hole that outlives the recovery budget fails the run
	// with CORRUPTED_EVENT_LOG rather than replay across it.
	SealNone SealPolicy = "none"
	// SealNoop waits on the hole, re-reading, for SealAfter; a slot still
	// empty then is sealed with a noop (spec 7, Corfu-style hole filling)
	// and the load goes on.
	SealNoop SealPolicy = "noop"
)

// DefaultSealAfter is how long a reader waits on an empty slot before it
// seals it, at time scale 1, unless the condition sets seal-after. It sits
// above the measured step_created window's p99 (about 400 ms for p50 31 ms
// with its tail to 2 s) and below that tail: a writer slower than nearly
// all others is sealed out, and a reader waits at most half a second per
// hole. Storms that ran with a longer wait (1 s) sealed nothing: every
// hole filled by its own commit first.
const DefaultSealAfter = 500 * time.Millisecond

// Policy is the engine's share of a storm condition.
type Policy struct {
	IDs       IDPolicy        `json:"ids"`
	Wake      WakePolicy      `json:"wake"`
	Fence     FencePolicy     `json:"fence"`
	OnReject  RejectPolicy    `json:"on_reject"`
	Admission AdmissionPolicy `json:"admission"`
	// Seal and SealAfter matter under the slot scheme only; empty means
	// SealNone (storms recorded before seals existed).
	Seal      SealPolicy    `json:"seal,omitempty"`
	SealAfter time.Duration `json:"seal_after,omitempty"`
}

// Validate names the first knob with an unknown value.
func (p Policy) Validate() error {
	check := func(knob, v string, valid ...string) error {
		for _, x := range valid {
			if v == x {
				return nil
			}
		}
		var shown []string // "" is only storm.json's way of saying none
		for _, x := range valid {
			if x != "" {
				shown = append(shown, x)
			}
		}
		return fmt.Errorf("unknown %s %q (valid: %s)", knob, v, strings.Join(shown, ", "))
	}
	for _, err := range []error{
		check("ids", string(p.IDs), string(IDsPositional), string(IDsCallsite)),
		check("wake", string(p.Wake), string(WakeOrdered), string(WakeEngine), string(WakeShuffle), string(WakeRacy)),
		check("fence", string(p.Fence), string(FenceNone), string(FenceDecisions), string(FenceDecisionsOnly), string(FenceAll)),
		check("on-reject", string(p.OnReject), string(RejectRederive), string(RejectRepost)),
		check("admission", string(p.Admission), string(AdmitAll), string(AdmitSingleRunner)),
		check("seal", string(p.Seal), "", string(SealNone), string(SealNoop)),
	} {
		if err != nil {
			return err
		}
	}
	if p.SealAfter < 0 {
		return fmt.Errorf("invalid seal-after %s: want a duration >= 0", p.SealAfter)
	}
	return nil
}

// Sealing reports whether readers seal holes.
func (p Policy) Sealing() bool { return p.Seal == SealNoop }

// GapBufferedHook names the wake gap WakeEngine models, from the delivery
// barriers of core before #3196: a hook payload that no Next is waiting for
// is buffered behind an unarmed barrier; a wait_completed (and a hook
// payload behind it) consumed after it in the same load defers behind that
// barrier until the payload is claimed or the replay idles, while a step
// result skips barriers that cannot resolve on their own and is delivered at
// once. So a step result that the log puts after a wait's completion can
// reach the code first: it wins a race against that wait and its branch
// draws ids first.
const GapBufferedHook = "buffered-hook"

// Canonical returns the policy under its current name (racy: shuffle).
func (w WakePolicy) Canonical() WakePolicy {
	if w == WakeRacy {
		return WakeShuffle
	}
	return w
}

// Shuffled reports whether the policy is the shuffle wake (or its old name).
func (w WakePolicy) Shuffled() bool { return w.Canonical() == WakeShuffle }

// Fenced reports whether decisions are appended as one fenced batch.
func (p Policy) Fenced() bool { return p.Fence != FenceNone }
