package nemesis

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"strings"

	"github.com/stormctl/stormctl/internal/base/redact"
)

// Target is one thing on this machine a kind of fault acts on.
type Target struct {
	Kind Kind
	// Name says what it is and where, e.g. "postgres cluster
	// 127.0.0.1:5432"; targets with one name are one thing (the cluster
	// every postgres cell shares).
	Name string
	// Inject breaks the target as f says, for f.For, and heals it before
	// it returns, also when ctx ends first (healing runs on its own
	// bounded context). detail says what it did beyond the fault's kind,
	// e.g. how many connections it terminated.
	Inject func(ctx context.Context, f Fault) (detail string, err error)
}

// Targeter is implemented by worlds that offer fault targets (opened with
// the nemesis on).
type Targeter interface {
	Targets() []Target
}

// NotLoopbackError is an endpoint the nemesis refuses: it is not on this
// machine's loopback.
type NotLoopbackError struct {
	// What names the endpoint's role ("the postgres server"); Endpoint is
	// it, without credentials.
	What, Endpoint string
}

func (e *NotLoopbackError) Error() string {
	return fmt.Sprintf("--nemesis acts only on this machine's loopback, and %s %s is not (use the embedded servers, or an endpoint on 127.0.0.1)", e.What, e.Endpoint)
}

// CheckLoopback refuses an endpoint (host:port, host, or URL) that is not
// on this machine's loopback with a *NotLoopbackError: the nemesis breaks
// nothing it does not own.
func CheckLoopback(what, endpoint string) error {
	host := endpoint
	if u, err := url.Parse(endpoint); err == nil && u.Host != "" {
		host = u.Host
	}
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.Trim(host, "[]")
	if host == "localhost" {
		return nil
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return nil
	}
	return &NotLoopbackError{What: what, Endpoint: redact.String(endpoint)}
}
