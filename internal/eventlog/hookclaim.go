package eventlog

import (
	"encoding/json"
	"errors"
	"fmt"
)

// HookClaim is how a world treats a run's hook tokens across the runs of
// the world (upstream's spec 8, HOOK_FORCE_CLAIM, vercel/workflow #4193).
// It is stamped on a run at creation; runs without it keep tokens unique
// per run only (the key "hook_token/"+token of Draft.Keys).
type HookClaim string

// The hook-claim modes.
const (
	// HookClaimNone: tokens are unique per run only (every storm before
	// spec 8, and every scenario that does not share tokens across runs).
	HookClaimNone HookClaim = ""
	// HookClaimRefuse: a token is held by at most one live hook among the
	// world's runs that share tokens; a hook_created whose token another
	// live run's hook holds is answered with a hook_conflict in its place,
	// forced or not (a world without spec 8's takeover).
	HookClaimRefuse HookClaim = "refuse"
	// HookClaimForce: as refuse, but a forced hook_created (Draft.Force,
	// createHook({experimental_force: true})) takes the token from the live
	// hook that holds it: atomically with the claimer's hook_created, the
	// world appends a hook_disposed{forceClaimedBy} for that hook to its
	// run's log and hands the token over (spec 8).
	HookClaimForce HookClaim = "force"
)

// HookClaims returns every hook-claim mode a run may be stamped with.
func HookClaims() []HookClaim { return []HookClaim{HookClaimNone, HookClaimRefuse, HookClaimForce} }

// CheckHookClaim refuses a hook-claim mode no world knows, and a cross-run
// token index on a scheme the model worlds do not build it for: ulid only
// (the legacy contract, whose writes each world makes in one transaction
// or under one lock the takeover can join).
func (r Run) CheckHookClaim() error {
	switch r.HookClaim {
	case HookClaimNone:
		return nil
	case HookClaimRefuse, HookClaimForce:
		if r.Scheme != SchemeULID {
			return &hookClaimError{fmt.Sprintf("hook claim %q needs scheme %s (cross-run hook tokens are not built for %s)", r.HookClaim, SchemeULID, r.Scheme)}
		}
		return nil
	}
	return &hookClaimError{fmt.Sprintf("hook claim %q not supported (valid: \"\", %q, %q)", r.HookClaim, HookClaimRefuse, HookClaimForce)}
}

// hookClaimError is a CheckHookClaim refusal: its text says what, and it
// matches ErrHookClaimUnsupported.
type hookClaimError struct{ msg string }

func (e *hookClaimError) Error() string { return e.msg }

// Is makes errors.Is(err, ErrHookClaimUnsupported) true.
func (e *hookClaimError) Is(target error) bool { return target == ErrHookClaimUnsupported }

// ErrHookClaimUnsupported matches CheckHookClaim's refusals: a run stamped
// with a hook-claim mode the world cannot index its tokens under.
var ErrHookClaimUnsupported = errors.New("hook claim unsupported")

// HookRef names one hook of one run: who holds a token, who took it.
type HookRef struct {
	RunID  string `json:"runId"`
	HookID string `json:"hookId"`
}

// HookCreatedData is a hook_created payload on a run that shares tokens:
// the token, and the hook the world took it from (a takeover), as
// upstream's eventData.forceClaimedFrom.
type HookCreatedData struct {
	Token            string   `json:"token"`
	ForceClaimedFrom *HookRef `json:"forceClaimedFrom,omitempty"`
}

// HookDisposedData is a hook_disposed payload: empty for a run's own
// disposal; ForceClaimedBy names the hook of another run that took the
// token (an involuntary disposal, spec 8).
type HookDisposedData struct {
	Token          string   `json:"token,omitempty"`
	ForceClaimedBy *HookRef `json:"forceClaimedBy,omitempty"`
}

// HookConflictData is the payload of the hook_conflict a world writes in
// place of a hook_created whose token another run's live hook holds.
type HookConflictData struct {
	Token            string `json:"token"`
	ConflictingRunID string `json:"conflictingRunId"`
	// ForceRefused is set when the creation was forced and the world did
	// not take the token (HookClaimRefuse).
	ForceRefused bool `json:"forceRefused,omitempty"`
}

// ForceClaimedBy returns the hook that took a hook_disposed's token, or nil
// for a run's own disposal (or another event type).
func ForceClaimedBy(e Event) *HookRef {
	if e.Type != HookDisposed || len(e.Payload) == 0 {
		return nil
	}
	var p HookDisposedData
	if json.Unmarshal(e.Payload, &p) != nil {
		return nil
	}
	return p.ForceClaimedBy
}

// ForceClaimedFrom returns the hook a hook_created took its token from, or
// nil.
func ForceClaimedFrom(e Event) *HookRef {
	if e.Type != HookCreated || len(e.Payload) == 0 {
		return nil
	}
	var p HookCreatedData
	if json.Unmarshal(e.Payload, &p) != nil {
		return nil
	}
	return p.ForceClaimedFrom
}

// ClaimKind is what a world does with a hook_created on a run that shares
// tokens (ClaimToken).
type ClaimKind int

// The claim outcomes.
const (
	// ClaimTake: the token is free (no holder, or a holder that is no
	// longer live) or already the claimer's; the hook_created is written
	// and the index names the claimer.
	ClaimTake ClaimKind = iota + 1
	// ClaimConflict: a live hook of another run holds the token; a
	// hook_conflict is written in place of the hook_created.
	ClaimConflict
	// ClaimTakeover: a forced claim under HookClaimForce: the hook_created
	// (carrying ForceClaimedFrom) is written, the holder's run gets a
	// hook_disposed{forceClaimedBy}, and the index names the claimer.
	ClaimTakeover
)

// Claim is a world's decision on one hook_created of a run that shares
// tokens, from what its index held.
type Claim struct {
	Kind ClaimKind
	// Holder is the hook that held the token (conflict, takeover).
	Holder HookRef
}

// ClaimToken decides a hook_created draft d of run runID under mode, given
// the token's holder in the world's index (nil: none) and whether that
// holder is live (its hook not disposed, its run not ended). It is the
// rule every model world applies inside its own atomic write; it touches
// no store.
func ClaimToken(mode HookClaim, runID string, d Draft, holder *HookRef, live bool) Claim {
	switch {
	case holder == nil, !live:
		return Claim{Kind: ClaimTake}
	case holder.RunID == runID:
		// The run's own: per-run keys (hook_token/) decide, as without
		// a cross-run index.
		return Claim{Kind: ClaimTake, Holder: *holder}
	case d.Force && mode == HookClaimForce:
		return Claim{Kind: ClaimTakeover, Holder: *holder}
	}
	return Claim{Kind: ClaimConflict, Holder: *holder}
}

// Apply returns the draft the world writes for d under c (a hook_created,
// with ForceClaimedFrom on a takeover, or the hook_conflict in its place),
// and on a takeover the hook_disposed it appends to the holder's run.
func (c Claim) Apply(runID string, d Draft) (Draft, *Draft) {
	switch c.Kind {
	case ClaimConflict:
		return Draft{Type: HookConflict, CorrelationID: d.CorrelationID, Payload: mustMarshal(HookConflictData{
			Token: d.Token, ConflictingRunID: c.Holder.RunID, ForceRefused: d.Force})}, nil
	case ClaimTakeover:
		from := c.Holder
		w := d
		w.Payload = mustMarshal(HookCreatedData{Token: d.Token, ForceClaimedFrom: &from})
		victim := Draft{Type: HookDisposed, CorrelationID: c.Holder.HookID, Payload: mustMarshal(HookDisposedData{
			Token: d.Token, ForceClaimedBy: &HookRef{RunID: runID, HookID: d.CorrelationID}})}
		return w, &victim
	}
	return d, nil
}

// LivenessKeys are the idempotency keys of a hook's run whose being taken
// means the hook no longer holds its token: its hook_disposed, or the
// run's end (Draft.Keys of those events).
func LivenessKeys(hookID string) []string {
	return []string{
		Draft{Type: HookDisposed, CorrelationID: hookID}.Keys()[0],
		Draft{Type: RunCompleted}.Keys()[0],
		Draft{Type: RunFailed}.Keys()[0],
	}
}

func mustMarshal(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("eventlog: %v", err))
	}
	return b
}
