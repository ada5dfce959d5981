// Package devkitworld is the devkit worlds: devkit-local and devkit-postgres run
// the Workflow DevKit's own storage packages (@workflow/world-local,
// @workflow/world-postgres, published or a checkout's) instead of a Go
// re-implementation, so that a storm hits the code a DevKit PR changes.
//
// A Host owns what they share: one Node sidecar (package sidecar) serving
// every devkit world of a stormctl, and devkit-postgres's own embedded
// PostgreSQL cluster (track_commit_timestamp on), in which each world gets a
// database copied from one the package migrated. A World is one instance of
// a package: it maps each draft onto the package's event (mapping.go), calls
// the package's events.create and events.list through the sidecar, and
// sorts what the package says into stormctl's errors (errors.go): its
// EntityConflictError is a conflict, its other refusals an
// eventlog.ErrRefused, a lost connection eventlog.ErrUnavailable.
//
// The packages implement the legacy contract: scheme ulid, no fence, no
// guard; ids are minted by the package. What they cannot hold is refused,
// never invented (attr_set; payloads on step_started and hook_disposed; a
// wait's fields besides resumeAt are dropped by the package itself), and
// the registry entry's Limits say so to the conformance suite. Commit times are the
// store's (CommitTimes): PostgreSQL's commit timestamps for devkit-postgres,
// event files' modification times for devkit-local.
package devkitworld
