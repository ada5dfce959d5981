package pgconnect_test

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"

	"github.com/stormctl/stormctl/internal/base/nettest"
	"github.com/stormctl/stormctl/internal/eventlog"
	"github.com/stormctl/stormctl/internal/eventlog/pgconnect"
)

// TestConnectSaysWhyInOneLine connects to servers that cannot be used as
// PostgreSQL and checks the one line each failure gives: what failed, no
// secret, no repeated lookup error, infrastructure (ErrUnavailable).
func TestConnectSaysWhyInOneLine(t *testing.T) {
	t.Parallel()
	silent := nettest.Serve(t, func(c net.Conn) {
		// Reads the TLS request and never answers, as a Redis server does.
		buf := make([]byte, 64)
		c.Read(buf)
		<-t.Context().Done()
		c.Close()
	})
	http := nettest.Serve(t, nettest.HTTP400)
	refused := nettest.ClosedPort(t)
	for _, tc := range []struct {
		name, url, want string
	}{
		{"nothing listens", "postgres://u:secret@" + refused + "/app", "connect to " + refused + "/app: store unavailable: connection refused"},
		{"a server that never answers", "postgres://u:secret@" + silent + "/app?connect_timeout=1", "connect to " + silent + "/app: store unavailable: no answer in time: is " + silent + " a PostgreSQL server?"},
		{"an HTTP server", "postgres://u:secret@" + http + "/app", "connect to " + http + "/app: store unavailable: it answered, but not as PostgreSQL does: is " + http + " a PostgreSQL server?"},
		{"a host that does not resolve", "postgres://u:secret@nohost.invalid:5432/app?connect_timeout=5", "connect to nohost.invalid:5432/app: store unavailable: no such host nohost.invalid"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			conn, err := pgconnect.Connect(t.Context(), tc.url)
			if err == nil {
				conn.Close(context.Background())
				t.Fatal("connected")
			}
			if got := err.Error(); got != tc.want {
				if tc.name == "a host that does not resolve" && strings.Contains(got, "cannot look up nohost.invalid") {
					t.Skipf("this machine's resolver did not say the name does not exist: %s", got)
				}
				t.Errorf("got  %s\nwant %s", got, tc.want)
			}
			if strings.Contains(err.Error(), "secret") {
				t.Errorf("the line shows the password: %s", err)
			}
			if !errors.Is(err, eventlog.ErrUnavailable) {
				t.Errorf("%v is not eventlog.ErrUnavailable", err)
			}
		})
	}
}

// TestServerErrorIsTheServers checks that a server that refuses the
// connection is quoted: its message and SQLSTATE, against the machine's
// PostgreSQL when it runs.
func TestServerErrorIsTheServers(t *testing.T) {
	t.Parallel()
	const url = "postgres://postgres@127.0.0.1:5432/stormctl_no_such_database?connect_timeout=5"
	conn, err := pgconnect.Connect(t.Context(), url)
	if err == nil {
		conn.Close(context.Background())
		t.Fatal("connected to a database that should not exist")
	}
	if strings.Contains(err.Error(), "connection refused") || strings.Contains(err.Error(), "no answer") {
		t.Skipf("no PostgreSQL on 127.0.0.1:5432 (%v)", err)
	}
	want := `connect to 127.0.0.1:5432/stormctl_no_such_database: store unavailable: database "stormctl_no_such_database" does not exist (SQLSTATE 3D000)`
	if err.Error() != want {
		t.Errorf("got  %s\nwant %s", err, want)
	}
}

// TestCancelledIsNotUnavailable checks that Ctrl-C during a connection is
// a cancellation, not an unreachable server.
func TestCancelledIsNotUnavailable(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	_, err := pgconnect.Connect(ctx, "postgres://u@"+nettest.ClosedPort(t)+"/app")
	if !errors.Is(err, context.Canceled) || errors.Is(err, eventlog.ErrUnavailable) {
		t.Errorf("got %v, want a cancellation", err)
	}
}
