// Package shrink reduces a recorded corrupted run to a minimal failing
// schedule: the few invocations, reads and events that still make the
// engine raise the run's recorded divergence.
//
// The run's history becomes a schedule (package schedule): its events
// labelled in key order, each invocation's pages as reads, its decisions
// as writes, every fact with its payload, the run_failed of the first
// invocation that wrote one (the failing invocation). A candidate is
// executed leniently: each write is derived again from what its
// invocation read, through the engine, committing the decisions it was
// recorded writing (by type and correlation id) wherever the writer now
// derives them; and it fails when a replay of the failing invocation
// (package replay) raises the recorded error.
//
// Delta debugging runs in phases, each over one kind of element: the
// events the failing invocation's reads show (nothing else depends on
// them, so the schedule is executed once and only the replay is
// repeated), then only what those need (the writers of what it reads,
// transitively: the cone), the invocations, the events, the reads, and
// the events each read shows, round after round until one removes
// nothing or the budget runs out. The result is rewritten so that its text
// executes strictly (each write's labels by position among what its
// writer derives), checked once more that way, and told as a narrative.
// GoTest writes a Go test that embeds it and fails, through Reproduce,
// while the engine raises the divergence.
package shrink
