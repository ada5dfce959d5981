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
	// Messages counts the run's flow messages by what enqueued them, as
	// an engine whose runtime has a queue counts them (the devkit engine's
	// host); Wakes counts the flow deliveries a message's previous delivery
	// scheduled (@workflow/core answers a delivery with a wake-up time
	// while any wait of the run is pending, and world-local's queue
	// delivers the same message again then), Retries those after a failed
	// delivery. Every message lives until the run has no wait pending, so
	// the messages are what multiplies a run's invocations.
	Messages *Messages `json:"messages,omitempty"`
	Wakes    int64     `json:"wakes,omitempty"`
	Retries  int64     `json:"retries,omitempty"`
	// Harness is how busy the harness was over the run's life (the devkit
	// engine's host and the machine), nil when the engine does not say.
	Harness *Harness `json:"harness,omitempty"`
}

// Messages counts a run's flow messages by what enqueued them.
type Messages struct {
	// Start is the run's start; Hook a hook resumed (the drivers' pokes
	// and hook sends); Step a step that finished; Recovery a divergence's
	// recovery replay; Flow an invocation re-invoking its own run; Other
	// anything else.
	Start    int64 `json:"start,omitempty"`
	Hook     int64 `json:"hook,omitempty"`
	Step     int64 `json:"step,omitempty"`
	Recovery int64 `json:"recovery,omitempty"`
	Flow     int64 `json:"flow,omitempty"`
	Other    int64 `json:"other,omitempty"`
}

// Total is every message counted.
func (m Messages) Total() int64 { return m.Start + m.Hook + m.Step + m.Recovery + m.Flow + m.Other }

// SaturatedELU is the event-loop utilisation past which a host's loop is
// saturated: every delivery waits for the others, and a run on it makes
// no progress of its own.
const SaturatedELU = 0.9

// StarvedShare is the share of its life a run's host must have been
// saturated for a run that did not end to have been starved by the
// harness, not stuck in the runtime.
const StarvedShare = 0.5

// Harness is how busy the harness was over one run's life: the host
// process that ran it (its event loop, as it reported every half second)
// and the machine.
type Harness struct {
	// Host is which of its cell's host processes ran the run (1-based).
	Host int `json:"host"`
	// Samples is how many of the host's health reports fell in the run's
	// life; ELUP50 and ELUP99 are its event loop's utilisation over them
	// (0 to 1), Saturated the share of them at SaturatedELU or more, and
	// DelayP99Ms the worst of their 99th-percentile loop delays.
	Samples    int     `json:"samples"`
	ELUP50     float64 `json:"elu_p50"`
	ELUP99     float64 `json:"elu_p99"`
	Saturated  float64 `json:"saturated"`
	DelayP99Ms float64 `json:"delay_p99_ms"`
	// MachineBusy is the machine's CPU busy share over the run's life (0
	// to 1 of all its cores), -1 when it could not be read.
	MachineBusy float64 `json:"machine_busy"`
	// HostCPUMs is the run's share of its host's CPU time (each report's
	// CPU split evenly among the runs live on the host then), LoopBusyMs
	// its share of the time the host's event loop was busy, RecordingMs
	// the part of that which was stormctl's own recording (both wall time
	// of the loop's thread), StormctlCPUMs its share of stormctl's own
	// process's CPU (split among every run live in the storm).
	HostCPUMs     float64 `json:"host_cpu_ms"`
	LoopBusyMs    float64 `json:"loop_busy_ms"`
	RecordingMs   float64 `json:"recording_ms"`
	StormctlCPUMs float64 `json:"stormctl_cpu_ms"`
	// StarvedAtCut says the run had no terminal event at the timeout while
	// its host was saturated (Starved): the pipeline made it infra for
	// that, and only such a run is the harness's (WasStarved). Absent from
	// runs recorded before 2026-12-06's evening, whose class says it.
	StarvedAtCut bool `json:"starved_at_cut,omitempty"`
}

// Starved says the harness starved the run: its host's loop was saturated
// for at least StarvedShare of its life. A run that did not end then is
// no evidence about the runtime (its deliveries waited for the host, not
// for the runtime), and is never counted as stuck.
func (h *Harness) Starved() bool {
	return h != nil && h.Samples > 0 && h.Saturated >= StarvedShare
}

// WasStarved says the run is infra because the harness starved it
// (StarvedAtCut), not for another reason while its host was busy (an
// unreachable store).
func (h *Harness) WasStarved() bool { return h != nil && h.StarvedAtCut }
