package engine

import (
	"cmp"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/stormctl/stormctl/internal/base/knob"
	"github.com/stormctl/stormctl/internal/eventlog"
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

// WritesPolicy is how an unfenced, unguarded suspension issues the appends
// of its decisions.
type WritesPolicy string

// SealPolicy is what a reader does about an empty slot below a committed one
// (the slot scheme's hole).
type SealPolicy string

// RepeatPolicy is what a replay does with an event of an operation whose
// terminal event it has consumed.
type RepeatPolicy string

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
	// FenceInBand is spec 9's in-band fence (single orchestrator, slot
	// scheme only): the invocation's own writes (its decisions and the
	// wait completions it writes) carry its in-band count, adopted from
	// its load's first page (eventlog.Snapshot) and moved by each write it
	// lands; the world refuses a stale one (eventlog.FenceInBand). Step
	// workers' and hooks' facts are out of band, never fenced.
	FenceInBand FencePolicy = "in-band"

	RejectRederive RejectPolicy = "rederive"
	RejectRepost   RejectPolicy = "repost"
	// RejectRedeliver ends the invocation at a refusal, writing nothing
	// more, and the queue delivers the same message again after
	// Config.FenceRedelivery, with no budget: spec 9's answer to
	// InBandSupersededError (core: the delivery returns timeoutSeconds,
	// FENCE_REDELIVERY_DELAY_SECONDS = 5; no re-derivation in process).
	RejectRedeliver RejectPolicy = "redeliver"

	// RepeatsStrict is core 4.8.9's replay: an operation's consumer lives
	// until its terminal event, so a later event of it is consumed by
	// nobody ("Replay could not consume event"). The zero value reads as
	// it.
	RepeatsStrict RepeatPolicy = "strict"
	// RepeatsInert is spec 9's (and #3381's): "Replay treats any event for
	// an entity after its terminal event as inert".
	RepeatsInert RepeatPolicy = "inert"

	// HookClaimRefuse is every preset's: a forced creation of a hook whose
	// token another live run's hook holds is answered with a hook_conflict,
	// as without force (a world without spec 8's takeover). The zero value
	// reads as it.
	HookClaimRefuse HookClaimPolicy = "refuse"
	// HookClaimForce is spec 8 (HOOK_FORCE_CLAIM): the world takes the
	// token for a forced creation and disposes of the holder's hook in its
	// run's log (hook_disposed{forceClaimedBy}).
	HookClaimForce HookClaimPolicy = "force"

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

	// WritesSerial appends a suspension's decisions one at a time, in the
	// order the workflow code called them (the model before h4's
	// measurement; every preset's default). The zero value reads as it.
	WritesSerial WritesPolicy = "serial"
	// WritesParallel issues them as @workflow/core 4.8.9's suspension
	// handler does: every hook_created at once, then every hook_disposed at
	// once, then every step_created and wait_created at once; whatever else
	// a replay derived (attr_set, run_completed, run_failed) follows, one
	// append at a time in call order.
	WritesParallel WritesPolicy = "parallel"
)

// DefaultSealAfter is how long a reader waits on an empty slot before it
// seals it, at time scale 1, unless the condition sets seal-after. It sits
// above the measured step_created window's p99 (about 400 ms for p50 31 ms
// with its tail to 2 s) and below that tail: a writer slower than nearly
// all others is sealed out, and a reader waits at most half a second per
// hole. Storms that ran with a longer wait (1 s) sealed nothing: every
// hole filled by its own commit first.
const DefaultSealAfter = 500 * time.Millisecond

// Policy is the engine's share of a storm condition. Each field is a knob
// of PolicyKnobs.
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
	// Guard is the legacy interim guard stamped on every run; under a guard
	// decisions carry the writer's count.
	Guard eventlog.Guard `json:"guard"`
	// Writes is how an unfenced, unguarded suspension issues its appends;
	// empty means WritesSerial (storms recorded before the knob, and
	// every preset), so serial conditions record as they always did.
	Writes WritesPolicy `json:"writes,omitempty"`
	// Repeats is what a replay does with an event of a finished
	// operation; empty means RepeatsStrict (every preset before spec 9,
	// and storms recorded before the knob).
	Repeats RepeatPolicy `json:"repeats,omitempty"`
	// Page is how many events each page of an invocation's log load asks
	// for; 0 (every preset, and storms recorded before the knob) leaves the
	// storm's page size (--page-size, else the world's own for the scheme).
	// Core reads world-local's log in its default pages of 20.
	Page int `json:"page,omitempty"`
	// HookClaim is what the world does with a forced hook creation on a
	// token another run holds, for runs of scenarios that share tokens
	// across runs (Scenario.SharedTokens); empty means HookClaimRefuse
	// (every preset, and storms recorded before the knob).
	HookClaim HookClaimPolicy `json:"hook_claim,omitempty"`
}

// HookClaimPolicy is the hook-claim knob's value (spec 8).
type HookClaimPolicy string

// Stamp returns the eventlog.HookClaim a run is created with: none unless
// the run's scenario shares tokens across runs, else the policy's mode.
func (p Policy) Stamp(sharedTokens bool) eventlog.HookClaim {
	switch {
	case !sharedTokens:
		return eventlog.HookClaimNone
	case p.HookClaim == HookClaimForce:
		return eventlog.HookClaimForce
	}
	return eventlog.HookClaimRefuse
}

// DefaultPolicy is the policy a condition preset starts from: the legacy
// contract's engine, unfenced and unguarded.
func DefaultPolicy() Policy {
	return Policy{IDs: IDsPositional, Wake: WakeEngine, Fence: FenceNone, OnReject: RejectRederive,
		Admission: AdmitAll, Seal: SealNone, Guard: eventlog.GuardNone}
}

// PolicyKnobs is the table of the policy's knobs, in the order of the
// conditions listing's columns. It is the one place a knob is declared:
// Validate, the --condition override parser, `stormctl conditions` and its
// help read it.
func PolicyKnobs() []knob.Knob[Policy] {
	wake := choice("wake", "how results reach the workflow code (racy is the old name of shuffle)",
		func(p *Policy) *WakePolicy { return &p.Wake }, WakeOrdered, WakeEngine, WakeShuffle, WakeRacy)
	wake.Set = func(p *Policy, v string) error { p.Wake = WakePolicy(v).Canonical(); return nil }
	seal := choice("seal", "what a reader does about an empty slot below a committed one",
		func(p *Policy) *SealPolicy { return &p.Seal }, SealNone, SealNoop)
	seal.SlotOnly = true
	seal.Get = func(p Policy) string { return string(cmp.Or(p.Seal, SealNone)) }
	// Get reads an unset Seal (storms recorded before seals) as none, so
	// Validate cannot see an empty override ("slot/seal="): Set refuses it.
	valid := strings.Join(seal.Values, ", ")
	seal.Set = func(p *Policy, v string) error {
		if v == "" {
			return fmt.Errorf("unknown seal %q (valid: %s)", v, valid)
		}
		p.Seal = SealPolicy(v)
		return nil
	}
	seal.Cell = func(p Policy) string {
		if !p.Sealing() {
			return string(p.Seal)
		}
		return string(p.Seal) + " after " + cmp.Or(p.SealAfter, DefaultSealAfter).String()
	}
	writes := knob.Knob[Policy]{
		Name: "writes", Help: "how an unfenced suspension issues its appends: one at a time, or as core 4.8.9 (hooks at once, then steps and waits at once)",
		Values: []string{string(WritesSerial), string(WritesParallel)},
		// Set stores serial as the zero value, so that main/writes=serial
		// is main, knob for knob and in what a storm records.
		Set: func(p *Policy, v string) error {
			if v == "" {
				return fmt.Errorf("unknown writes %q (valid: %s, %s)", v, WritesSerial, WritesParallel)
			}
			p.Writes = WritesPolicy(v)
			if p.Writes == WritesSerial {
				p.Writes = ""
			}
			return nil
		},
		Get: func(p Policy) string { return string(cmp.Or(p.Writes, WritesSerial)) },
		Check: func(p Policy) error {
			switch cmp.Or(p.Writes, WritesSerial) {
			case WritesSerial:
				return nil
			case WritesParallel:
				if p.Fenced() || p.Guard != eventlog.GuardNone {
					return fmt.Errorf("writes=parallel applies to unfenced, unguarded conditions (fence=none, guard=none; this one has fence=%s, guard=%s): a fenced suspension is one batch, and the guard orders a suspension's appends by count", p.Fence, p.Guard)
				}
				return nil
			}
			return fmt.Errorf("unknown writes %q (valid: %s, %s)", p.Writes, WritesSerial, WritesParallel)
		},
	}
	seal.WorldSide = true
	fence := choice("fence", "which appends are fenced (in-band: spec 9, the orchestrator's writes on its in-band count; slot scheme only)",
		func(p *Policy) *FencePolicy { return &p.Fence }, FenceNone, FenceDecisions, FenceDecisionsOnly, FenceAll, FenceInBand)
	fence.WorldSide = true
	onReject := choice("on-reject", "what a writer does after a fenced rejection (redeliver: stop and let the queue deliver the message again after 5s, spec 9)",
		func(p *Policy) *RejectPolicy { return &p.OnReject }, RejectRederive, RejectRepost, RejectRedeliver)
	onReject.WorldSide = true // a rejection comes from the world's fence
	repeats := knob.Knob[Policy]{
		Name: "repeats", Help: "what a replay does with an event of an operation it has seen end: strict (core 4.8.9: could not consume) or inert (spec 9, #3381: stepped over)",
		Values: []string{string(RepeatsStrict), string(RepeatsInert)},
		// Set stores strict as the zero value, so that main/repeats=strict
		// is main, knob for knob and in what a storm records.
		Set: func(p *Policy, v string) error {
			if v == "" {
				return fmt.Errorf("unknown repeats %q (valid: %s, %s)", v, RepeatsStrict, RepeatsInert)
			}
			p.Repeats = RepeatPolicy(v)
			if p.Repeats == RepeatsStrict {
				p.Repeats = ""
			}
			return nil
		},
		Get: func(p Policy) string { return string(cmp.Or(p.Repeats, RepeatsStrict)) },
	}
	hookClaim := knob.Knob[Policy]{
		Name: "hook-claim", Help: "what the world does with a forced hook creation on a token another live run holds, in scenarios that share tokens across runs: refuse (a hook_conflict) or force (spec 8: take it, the holder's hook is disposed with forceClaimedBy)",
		Values:    []string{string(HookClaimRefuse), string(HookClaimForce)},
		WorldSide: true,
		// Set stores refuse as the zero value, so that
		// main/hook-claim=refuse is main, knob for knob.
		Set: func(p *Policy, v string) error {
			switch HookClaimPolicy(v) {
			case HookClaimRefuse:
				p.HookClaim = ""
			case HookClaimForce:
				p.HookClaim = HookClaimForce
			default:
				return fmt.Errorf("unknown hook-claim %q (valid: %s, %s)", v, HookClaimRefuse, HookClaimForce)
			}
			return nil
		},
		Get: func(p Policy) string { return string(cmp.Or(p.HookClaim, HookClaimRefuse)) },
	}
	return []knob.Knob[Policy]{
		fence,
		onReject,
		choice("ids", "how correlation ids are drawn",
			func(p *Policy) *IDPolicy { return &p.IDs }, IDsPositional, IDsCallsite),
		wake,
		choice("admission", "how many invocations of one run may replay at once",
			func(p *Policy) *AdmissionPolicy { return &p.Admission }, AdmitAll, AdmitSingleRunner),
		{
			Name: "guard", Help: "the legacy interim guard a world applies instead of a fence",
			Values:    names(eventlog.Guards(), eventlog.Guard.String),
			WorldSide: true,
			Set: func(p *Policy, v string) (err error) {
				p.Guard, err = eventlog.ParseGuard(v)
				return err
			},
			Get: func(p Policy) string { return p.Guard.String() },
		},
		writes,
		repeats,
		hookClaim,
		seal,
		{
			Name: "seal-after", Help: "how long a reader waits on an empty slot before sealing it (a duration; default " +
				DefaultSealAfter.String() + ", scaled by --time-scale)",
			SlotOnly: true, Hidden: true, WorldSide: true,
			Set: func(p *Policy, v string) error {
				d, err := time.ParseDuration(v)
				if err != nil || d <= 0 {
					return fmt.Errorf("invalid seal-after %q: want a positive duration such as 500ms", v)
				}
				p.SealAfter = d
				return nil
			},
			Get: func(p Policy) string { return p.SealAfter.String() },
			Check: func(p Policy) error {
				if p.SealAfter < 0 {
					return fmt.Errorf("invalid seal-after %s: want a duration >= 0", p.SealAfter)
				}
				return nil
			},
		},
		{
			Name: "page", Help: "events per page of an invocation's log load (a count; 0, the default, is the storm's --page-size, else the world's own; core reads world-local in pages of 20)",
			Set: func(p *Policy, v string) error {
				n, err := strconv.Atoi(v)
				if err != nil || n < 0 {
					return fmt.Errorf("invalid page %q: want a count of events >= 0 such as 20 (0: the storm's page size)", v)
				}
				p.Page = n
				return nil
			},
			Get: func(p Policy) string { return strconv.Itoa(p.Page) },
			Check: func(p Policy) error {
				if p.Page < 0 {
					return fmt.Errorf("invalid page %d: want a count of events >= 0", p.Page)
				}
				return nil
			},
			Cell: func(p Policy) string {
				if p.Page == 0 {
					return "-"
				}
				return strconv.Itoa(p.Page)
			},
		},
	}
}

// choice declares a knob whose value is one of values, held in the field
// that field returns.
func choice[V ~string](name, help string, field func(*Policy) *V, values ...V) knob.Knob[Policy] {
	return knob.Knob[Policy]{
		Name: name, Help: help, Values: names(values, func(v V) string { return string(v) }),
		Set: func(p *Policy, v string) error { *field(p) = V(v); return nil },
		Get: func(p Policy) string { return string(*field(&p)) },
	}
}

func names[V any](values []V, name func(V) string) []string {
	out := make([]string, len(values))
	for i, v := range values {
		out[i] = name(v)
	}
	return out
}

// Validate names the first knob, in PolicyKnobs order, with an unknown value.
func (p Policy) Validate() error { return knob.Validate(PolicyKnobs(), p) }

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

// InBand reports whether the invocation's writes are fenced in band (spec
// 9: FenceInBand).
func (p Policy) InBand() bool { return p.Fence == FenceInBand }

// ReplayMode is how a replay reads a log: the policy's knobs that shape it.
type ReplayMode struct {
	IDs     IDPolicy
	Wake    WakePolicy
	Repeats RepeatPolicy
}

// Mode returns the policy's replay mode.
func (p Policy) Mode() ReplayMode { return ReplayMode{IDs: p.IDs, Wake: p.Wake, Repeats: p.Repeats} }

// ParallelWrites reports whether a suspension's decisions are appended
// concurrently, phase by phase (WritesParallel): unfenced and unguarded
// only, as Validate insists.
func (p Policy) ParallelWrites() bool {
	return p.Writes == WritesParallel && !p.Fenced() && p.Guard == eventlog.GuardNone
}
