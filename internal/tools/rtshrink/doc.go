// Package rtshrink shrinks a corrupted run of the devkit engine through
// the published runtime that ran it: delta debugging over what the
// invocation that wrote the run's CORRUPTED_EVENT_LOG read and was
// answered, each candidate replayed by the same @workflow/core (a
// rerun.Runtime, the replay host), kept only while core still fails with
// the same divergence: the same error code, the same type of divergent
// event, the same divergence with ids, times and names masked.
//
// Replays serve recorded reads, so the failing invocation's replay needs
// no other invocation: the schedule shrinks to it first (phase
// "invocations"), then its pages to one read of the log it saw ("pages":
// a store holding that log, paged however the runtime asks), its creates
// to its run_started ("creates": the rest are accepted as a store would,
// with ids of its own), and the log's events one by one ("events").
// What remains is a Case: the run, the one log, the answer run_started
// got, the clock and the delivery; package jsrepro writes it as a test
// the DevKit's own runner executes.
package rtshrink
