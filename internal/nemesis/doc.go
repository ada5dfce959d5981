// Package nemesis breaks a storm's stores on purpose, on this machine's
// loopback only, so that a storm can show that infrastructure trouble never
// reads as corruption.
//
// A Config names the fault kinds (Kind) and bounds them: how many of each
// kind per world, how long each lasts at most, and the mean quiet time
// before each. Schedule turns it and a seed into a list of Faults, one
// sequential chain per world. Worlds offer Targets (the things a kind acts
// on: the embedded PostgreSQL cluster, a world's own connections, an
// ingest server, a TCP proxy in front of an endpoint); a Runner plays the
// schedule against them, records what happened (Record) and says which
// faults overlapped a run's lifetime.
//
// Every Target heals before its Inject returns, even when the storm is
// cancelled mid-fault, so the worlds can close normally afterwards.
package nemesis
