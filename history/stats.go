package history

import "time"

// RunStats counts what an engine did for one run (runs.jsonl's stats):
// the model engine counts every field; an engine that sees less of a run
// leaves the rest zero.
type RunStats struct {
	Invocations int64 `json:"invocations"`
	Replays     int64 `json:"replays"`
	Divergences int64 `json:"divergences"`
	Recoveries  int64 `json:"recoveries"`
	Rejections  int64 `json:"rejections"`
	Conflicts   int64 `json:"conflicts"`
	Restarts    int64 `json:"restarts"`
	GaveUp      int64 `json:"gave_up"`
	InfraErrors int64 `json:"infra_errors"`
	Coalesced   int64 `json:"coalesced"`
	// MaxConcurrent is the most invocations of the run in flight at once,
	// as an engine that counts them saw (the devkit engine's host).
	MaxConcurrent int64 `json:"max_concurrent,omitempty"`
	// Recovered counts divergences a recovery replay cleared: invocations
	// delivered as a recovery (after a divergence) whose replay did not
	// diverge. The run goes on as if nothing happened, so neither the
	// outcome nor the real engine shows them.
	Recovered int64 `json:"recovered,omitempty"`
	// HoleRefusals counts loads that met an empty slot below a committed one
	// (slot scheme); Seals the noops this run's readers wrote into such
	// slots; SealedWrites the writes voided because their slot was sealed
	// before they committed (the writer then wrote again or re-derived).
	HoleRefusals int64 `json:"hole_refusals,omitempty"`
	Seals        int64 `json:"seals,omitempty"`
	SealedWrites int64 `json:"sealed_writes,omitempty"`
	// Refusals counts writes the store refused as invalid where they stood
	// (eventlog.ErrRefused: the devkit packages validate every event
	// against its entity's state, and have no attribute event).
	Refusals int64 `json:"refusals,omitempty"`
	// Unrecognised counts errors the engine's load and write handling did
	// not recognise (neither a store answer it knows nor
	// eventlog.ErrUnavailable); UnrecognisedErr is the first one's text. A
	// run without a terminal event that met one is failed with it, never
	// infra: nothing says the store was unreachable.
	Unrecognised    int64  `json:"unrecognised,omitempty"`
	UnrecognisedErr string `json:"unrecognised_err,omitempty"`
	// LastStoreOK is when the store last answered one of the run's
	// operations (any answer: events, an acknowledged write, a conflict, a
	// fence, a refusal); LastUnavailable is when one last failed with
	// eventlog.ErrUnavailable, and LastUnavailableErr that error's text.
	// Operations that ended because the run or the storm ended are not
	// counted. They are the evidence a run that timed out is judged on:
	// infra when it stopped on an unavailable store, stuck otherwise.
	LastStoreOK        time.Time `json:"last_store_ok,omitzero"`
	LastUnavailable    time.Time `json:"last_unavailable,omitzero"`
	LastUnavailableErr string    `json:"last_unavailable_err,omitempty"`
}
