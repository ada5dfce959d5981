package eventlog

import (
	"encoding/json"
	"fmt"
	"time"
)

// Run is what a world needs to know to create a run: its id and the ordering
// scheme stamped on it for its whole life (a run never mixes schemes).
type Run struct {
	ID     string `json:"runId"`
	Scheme Scheme `json:"scheme"`
	// FenceBasis says what moves the fence of AppendFenced on this run.
	FenceBasis FenceBasis `json:"fenceBasis,omitempty"`
	// Guard names a legacy interim guard the world applies to this run's
	// AppendFenced instead of a fence; GuardNone is left out of the JSON.
	Guard Guard `json:"guard,omitzero"`
	// Workflow names the run's workflow: the storm's scenario. A world
	// whose store keeps a workflow name (the devkit packages' run_created)
	// stores it there, so that a log read from the store says which
	// workflow code replays it; "" when the writer does not say.
	Workflow string `json:"workflow,omitempty"`
	// HookClaim says whether the run's hook tokens are indexed across the
	// world's runs and whether a forced creation takes one (spec 8);
	// HookClaimNone (left out of the JSON) keeps them unique per run only.
	HookClaim HookClaim `json:"hookClaim,omitempty"`
}

// FenceBasis says which appends move a run's fence.
type FenceBasis string

// The fence bases.
const (
	// FenceOnLog rejects a fenced append if the log grew at all past the
	// writer's expected position (the default).
	FenceOnLog FenceBasis = ""
	// FenceOnDecisions rejects a fenced append only if another fenced append
	// landed past the expected position: facts never move the fence.
	FenceOnDecisions FenceBasis = "decisions"
	// FenceInBand is upstream's spec 9 (single orchestrator), slot runs
	// only: the world keeps the run's in-band count, the positions taken by
	// fenced (in-band) appends, run_created's included, and refuses a
	// fenced append whose expected count is not it (an *FencedError with
	// InBand set: upstream's InBandSupersededError, HTTP 412), taking
	// nothing; an accepted one moves the count by its length. Unfenced
	// (out-of-band) appends move the log, never the count. Every List page
	// carries the run's Snapshot, read before the page: the count a writer
	// adopts. Step and wait events are plain appends (PlainAppend): the
	// world checks no key of theirs.
	FenceInBand FenceBasis = "in-band"
)

// CheckFenceBasis refuses a fence basis no world knows, and FenceInBand on
// a run whose scheme is not slot (spec 9 builds on slot positions).
func (r Run) CheckFenceBasis() error {
	switch r.FenceBasis {
	case FenceOnLog, FenceOnDecisions:
		return nil
	case FenceInBand:
		if r.Scheme != SchemeSlot {
			return fmt.Errorf("fence basis %q needs scheme %s (this run's is %s)", r.FenceBasis, SchemeSlot, r.Scheme)
		}
		return nil
	}
	return fmt.Errorf("fence basis %q not supported (valid: \"\", %q, %q)", r.FenceBasis, FenceOnDecisions, FenceInBand)
}

// PlainAppend reports whether the world checks no idempotency key of an
// event of type t on a run fenced on basis: under FenceInBand (spec 9)
// step and wait events are "plain appends to the log (a World keeps no
// step or wait state it checks writes against)".
func PlainAppend(basis FenceBasis, t Type) bool {
	if basis != FenceInBand {
		return false
	}
	switch t {
	case StepCreated, StepStarted, StepCompleted, StepFailed, WaitCreated, WaitCompleted:
		return true
	}
	return false
}

// KeysOn returns the idempotency keys a world enforces for d on a run
// fenced on basis: Keys, or none for a plain append (PlainAppend).
func (d Draft) KeysOn(basis FenceBasis) []string {
	if PlainAppend(basis, d.Type) {
		return nil
	}
	return d.Keys()
}

// Draft is an event a writer submits; the world assigns identity and position.
type Draft struct {
	Type          Type   `json:"eventType"`
	CorrelationID string `json:"correlationId,omitempty"`
	// Token is the hook token of a hook_created draft (unique per run).
	Token string `json:"token,omitempty"`
	// Dedup distinguishes facts that legitimately repeat for one correlation
	// id (each hook_received payload); empty for everything else.
	Dedup   string          `json:"dedup,omitempty"`
	Payload json.RawMessage `json:"payload,omitempty"`
	// Force asks, on a hook_created of a run that shares tokens
	// (Run.HookClaim), to take the token from the live hook of another run
	// that holds it (createHook({experimental_force: true}), spec 8). The
	// world does so under HookClaimForce only; the flag is not stored.
	Force bool `json:"force,omitempty"`
}

// Event is one committed entry of a run's log.
type Event struct {
	RunID         string          `json:"runId"`
	ID            string          `json:"eventId"`
	Seq           int64           `json:"seq,omitempty"`
	Type          Type            `json:"eventType"`
	CorrelationID string          `json:"correlationId,omitempty"`
	Token         string          `json:"token,omitempty"`
	Dedup         string          `json:"dedup,omitempty"`
	Payload       json.RawMessage `json:"payload,omitempty"`
	// MintedAt is when the id was minted, before the write's commit window.
	MintedAt time.Time `json:"mintedAt"`
	// CommittedAt is when the world observed the commit (zero if unknown).
	CommittedAt time.Time `json:"committedAt,omitzero"`
	// Package is the event exactly as a real world package listed it (a
	// devkit engine's final log: its eventData and createdAt as stored,
	// byte arrays as {"__type":"Uint8Array","data":base64}), which a replay
	// through the real runtime serves again; empty for the model's events.
	Package json.RawMessage `json:"package,omitempty"`
}

// Draft returns the draft this event was written from.
func (e Event) Draft() Draft {
	return Draft{Type: e.Type, CorrelationID: e.CorrelationID, Token: e.Token, Dedup: e.Dedup, Payload: e.Payload}
}

// Event returns the event this draft becomes in run runID under id,
// minted at mintedAt (not positioned, not committed).
func (d Draft) Event(runID, id string, mintedAt time.Time) Event {
	return Event{RunID: runID, ID: id, Type: d.Type, CorrelationID: d.CorrelationID, Token: d.Token,
		Dedup: d.Dedup, Payload: d.Payload, MintedAt: mintedAt}
}

// Keys returns the idempotency keys of a draft: a store accepts at most one
// event per key and run. Every event is unique per (correlation id, type) and,
// where it repeats legitimately, its dedup value; a hook token is unique per run.
func (d Draft) Keys() []string {
	k := string(d.Type) + "/" + d.CorrelationID
	if d.Dedup != "" {
		k += "/" + d.Dedup
	}
	keys := []string{k}
	if d.Type == HookCreated && d.Token != "" {
		keys = append(keys, "hook_token/"+d.Token)
	}
	return keys
}

// Cursor marks a position in a run's log: the last event a reader has seen.
// The zero Cursor is the start of the log. Under the ulid scheme only ID is
// used; under positioned schemes only Seq.
type Cursor struct {
	ID  string `json:"id,omitempty"`
	Seq int64  `json:"seq,omitempty"`
}

// IsZero reports whether the cursor is the start of the log.
func (c Cursor) IsZero() bool { return c.ID == "" && c.Seq == 0 }

// Text names the cursor in messages and narratives: "start", "seq 41"
// (a positioned log's) or the event id it stands after.
func (c Cursor) Text() string {
	switch {
	case c.IsZero():
		return "start"
	case c.Seq != 0:
		return fmt.Sprintf("seq %d", c.Seq)
	}
	return c.ID
}

// After returns the cursor just past e.
func After(e Event) Cursor { return Cursor{ID: e.ID, Seq: e.Seq} }

// Page is one page of a run's log.
type Page struct {
	Events []Event `json:"events"`
	// Next is the cursor to pass for the following page.
	Next Cursor `json:"next"`
	// More reports whether the reader should ask for another page.
	More bool `json:"more"`
	// Snapshot is the run's counters as the store read them before the
	// page, on runs fenced on FenceInBand; nil on every other run.
	Snapshot *Snapshot `json:"snapshot,omitempty"`
}

// Snapshot is a slot run's counters under FenceInBand (spec 9's
// events.list snapshot): Seq the positions handed out, SeqInBand those
// taken by in-band (fenced) appends, run_created's included.
type Snapshot struct {
	Seq       int64 `json:"seq"`
	SeqInBand int64 `json:"seqInBand"`
}

// PageAfter is the page a reader gets of events, the events a store read
// past the cursor after, in scheme order: the first limit of them (limit
// <= 0: all of them), More when there were more than limit (a store that
// reads limit+1 events learns so without a second read), and Next the
// cursor just past the page's last event, or after itself when the page is
// empty (a reader that asks again resumes where it was). A store that cuts
// its page before reading the events past it (a file scan, a slot table,
// a paging package) passes limit 0 and sets More itself.
func PageAfter(after Cursor, events []Event, limit int) Page {
	p := Page{Events: events, Next: after}
	if limit > 0 && len(events) > limit {
		p.Events, p.More = events[:limit], true
	}
	if n := len(p.Events); n > 0 {
		p.Next = After(p.Events[n-1])
	}
	return p
}
