// Package eventlog is the contract every other package of stormctl speaks: the
// events of a workflow run, the drafts writers submit, the two classes of event
// (decisions derived from a log prefix and facts about the world), the ordering
// schemes under test, cursors and pages, ULID minting, the density assertion of
// event_{seq}, and the typed errors callers test with errors.Is and errors.As.
//
// Nothing here talks to a store; worlds implement the contract and the engine
// and forensics consume it.
package eventlog
