// Package worlds defines the World interface every event-log store implements,
// the registry the CLI looks worlds up in, the latency profiles that shape each
// write's mint-to-commit window, and the recording decorator that writes every
// operation to a storm's history.
//
// Concrete worlds live in sub-packages (worlds/local, …); their shared
// conformance suite is worlds/worldtest.
package worlds
