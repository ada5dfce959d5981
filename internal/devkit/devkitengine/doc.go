// Package devkitengine is the devkit engine: the published Workflow DevKit
// runtime (@workflow/core) running a storm's runs on the DevKit's own world
// packages (@workflow/world-local, @workflow/world-postgres, and
// @workflow/world-vercel's storage against stormctl's emulation of its
// backend with world-local's queue in place of @vercel/queue) and on World
// packages named package:… (the package's own world, loaded from its
// directory: whole when its queue delivers in process, else its storage
// with world-local's queue; CheckPackage refuses what cannot pair), so
// that every replay, recovery and CORRUPTED_EVENT_LOG of such a run is the
// runtime's own, never stormctl's model's.
//
// A Kit (kit.go) is one channel's packages (stable: the 4.x line; beta: the
// newest mutually consistent 5.0 betas), installed by npm from a lock of
// the Node workspace (package node), with stormctl's scenarios (package
// devkitscen) compiled by the channel's own builder (the workspace's
// build.mjs). An Engine (engine.go) is one cell's runtime: host processes
// of its own (the workspace's host.mjs, Config.Hosts of them, each on
// a store of its own; a run stays in the host it started in), each hosting
// core on the world's own queue (world-local's on devkit-vercel), reached
// over the protocol of docs/host-protocol.md (package sidecar). Each host
// reports its health every half second (health.go): the engine says how
// busy it is (Load, for the storm's admission) and each run's record
// carries its host's account (history.Harness). The host
// reports every events.create and events.list the runtime makes as it
// returns; events.go turns them into the storm's history, with the
// package's own ids and times: on this engine stormctl mints no event id
// and writes no event.
//
// What a run became is read off the log the runtime wrote, by the one
// post-run pipeline: run_completed and its ledger, run_failed with the
// runtime's code and message, nothing by the timeout (stuck: the engine
// then cancels the run through the runtime, so nothing works on it after).
package devkitengine
