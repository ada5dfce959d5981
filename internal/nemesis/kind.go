package nemesis

import (
	"fmt"
	"slices"
	"strings"
)

// Kind is a kind of fault.
type Kind string

// The fault kinds. Which worlds offer each is the worlds' to say
// (worlds.Entry.Faults); the comments name the stores each acts on.
const (
	// PGRestart kills the embedded PostgreSQL cluster (SIGKILL to the
	// postmaster and its backends) and restarts it after the fault's
	// window, with crash recovery: postgres world, embedded cluster only.
	PGRestart Kind = "pg-restart"
	// PGTerminate runs pg_terminate_backend on every connection of a
	// postgres world (its schema's pool), on the embedded cluster or a
	// --pg-url server on loopback.
	PGTerminate Kind = "pg-terminate"
	// Ingest503 makes a vercel world's ingest server fail every request
	// for the window: answer 503, hang until the window ends and drop the
	// connection, or handle the request and drop its answer (the write
	// may have committed; the client cannot know).
	Ingest503 Kind = "ingest-503"
	// DynamoPause holds every request to a vercel world's embedded
	// DynamoDB-API server until the window ends.
	DynamoPause Kind = "dynamo-pause"
	// RedisDown stops a vercel world's embedded Redis (the count index of
	// guard=count-index) for the window; it comes back with its data.
	RedisDown Kind = "redis-down"
	// Latency adds a delay to every chunk a loopback TCP proxy in front of
	// an endpoint forwards (postgres server; ingest server and DynamoDB
	// endpoint of a vercel world), both ways, for the window.
	Latency Kind = "latency"
	// FSUnavailable swaps a local world's directory with a plain file for
	// the window (one atomic rename exchange each way): every file
	// operation under it fails with ENOTDIR, as when a mount goes away.
	FSUnavailable Kind = "fs-unavailable"
)

// Kinds lists every kind, in the order --help names them.
var Kinds = []Kind{PGRestart, PGTerminate, Ingest503, DynamoPause, RedisDown, Latency, FSUnavailable}

// WorldsOf returns the worlds that offer kind k, in name order: offers
// maps each world to its kinds (as the worlds declare them,
// worlds.Registry.Offers).
func WorldsOf(k Kind, offers map[string][]Kind) []string {
	var out []string
	for w, ks := range offers {
		if slices.Contains(ks, k) {
			out = append(out, w)
		}
	}
	slices.Sort(out)
	return out
}

// Instant reports whether the fault happens at one moment (its window is
// zero): pg_terminate_backend ends the connections and is done.
func (k Kind) Instant() bool { return k == PGTerminate }

// ParseKinds parses a --nemesis value: "all", or kinds separated by commas.
// Empty and "none" mean no nemesis (nil).
func ParseKinds(s string) ([]Kind, error) {
	s = strings.TrimSpace(s)
	switch s {
	case "", "none", "off":
		return nil, nil
	case "all":
		return slices.Clone(Kinds), nil
	}
	var out []Kind
	for _, item := range strings.Split(s, ",") {
		k := Kind(strings.TrimSpace(item))
		switch {
		case k == "":
			continue
		case !slices.Contains(Kinds, k):
			return nil, fmt.Errorf("unknown fault kind %q (valid: all, %s)", k, kindList(Kinds))
		case slices.Contains(out, k):
			return nil, fmt.Errorf("%q is given twice", k)
		}
		out = append(out, k)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no fault kind in %q (valid: all, %s)", s, kindList(Kinds))
	}
	return out, nil
}

func kindList(ks []Kind) string {
	s := make([]string, len(ks))
	for i, k := range ks {
		s[i] = string(k)
	}
	return strings.Join(s, ", ")
}
