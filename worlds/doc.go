// Package worlds defines the World interface every event-log store implements,
// the registry the CLI looks worlds up in, the latency profiles that shape each
// write's mint-to-commit window, and the recording decorator that writes every
// operation to a storm's history.
//
// A world declares its own surface on its Entry: the endpoint flags that
// point it at a server of the user's (Endpoint: help, validation, how a
// value is stored for --resume, refused under --nemesis, warned about when
// unused), the fault kinds it offers (Faults) and the connections its
// cells share (Connections). The command line reads them from the
// registry and names no world.
//
// Concrete worlds live in sub-packages (worlds/local, …), built in by the
// list of worlds/builtin; their shared conformance suite is
// worlds/worldtest.
package worlds
