// Package pgconnect connects to a PostgreSQL server a user named, and says
// in one plain line why it could not: pgx's own account lists every
// attempt (a name that does not resolve is said twice, once per address
// family), and a server that is not PostgreSQL at all answers with a
// protocol error ("invalid body length: expected at most 1073741822, but
// got 1414811691") that says nothing to whoever typed the URL.
package pgconnect

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/stormctl/stormctl/internal/base/redact"
	"github.com/stormctl/stormctl/internal/eventlog"
)

// Timeout bounds one connection attempt when the URL sets none
// (connect_timeout): a port that accepts the connection and never answers
// (another kind of server) would otherwise hold a command forever.
const Timeout = 10 * time.Second

// ParseConfig is pgx.ParseConfig with Timeout applied when url sets no
// connect_timeout of its own.
func ParseConfig(url string) (*pgx.ConnConfig, error) {
	cfg, err := pgx.ParseConfig(url)
	if err != nil {
		return nil, err
	}
	if cfg.ConnectTimeout == 0 {
		cfg.ConnectTimeout = Timeout
	}
	return cfg, nil
}

// Connect opens one connection to url (ParseConfig's timeout applied). Its
// error, when the server could not be reached or did not answer as
// PostgreSQL does, is Error's.
func Connect(ctx context.Context, url string) (*pgx.Conn, error) {
	cfg, err := ParseConfig(url)
	if err != nil {
		return nil, Error(url, err)
	}
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return nil, Error(url, err)
	}
	return conn, nil
}

// Error is a failed connection to url as one plain line: "connect to
// HOST:PORT/DB: store unavailable: REASON" (Reason), wrapping
// eventlog.ErrUnavailable (infrastructure, never the run's fault) and err
// itself, with no secret of url in its text. A context that ended is
// returned as it is (Ctrl-C is not an unreachable server).
func Error(url string, err error) error {
	if errors.Is(err, context.Canceled) {
		return err
	}
	return eventlog.Unavailable("connect to "+redact.Server(url), redact.Wrap(&reasonError{reason: Reason(err, url), err: err}, url))
}

// reasonError shows a reason for err and unwraps to err.
type reasonError struct {
	reason string
	err    error
}

func (e *reasonError) Error() string { return e.reason }
func (e *reasonError) Unwrap() error { return e.err }

// Reason says in a few words why connecting to url failed with err: the
// server's own error when it sent one (password authentication failed,
// database "x" does not exist), "no such host", "connection refused", no
// answer in time, a server that does not speak PostgreSQL's protocol, else
// the innermost error of pgx's last attempt (with sslmode=prefer its first
// attempt's "server refused TLS connection" says nothing).
func Reason(err error, url string) string {
	var dns *net.DNSError
	var body *pgproto3.ExceededMaxBodyLenErr
	server := redact.Server(url)
	if host, _, ok := strings.Cut(server, "/"); ok {
		server = host
	}
	switch {
	case lastPgError(err) != nil:
		pe := lastPgError(err)
		return fmt.Sprintf("%s (SQLSTATE %s)", pe.Message, pe.Code)
	case errors.As(err, &dns):
		if dns.IsNotFound {
			return "no such host " + dns.Name
		}
		return fmt.Sprintf("cannot look up %s: %s", dns.Name, dns.Err)
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection refused"
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, os.ErrDeadlineExceeded), timeout(err):
		return fmt.Sprintf("no answer in time: is %s a PostgreSQL server?", server)
	case errors.As(err, &body), protocolError(err):
		return fmt.Sprintf("it answered, but not as PostgreSQL does: is %s a PostgreSQL server?", server)
	}
	return rootCause(err).Error()
}

// timeout says err is a network timeout.
func timeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// protocolError says err is one of pgproto3's own decoding errors: the
// server answered with bytes that are no PostgreSQL message.
func protocolError(err error) bool {
	for e := err; e != nil; e = errors.Unwrap(e) {
		if strings.HasPrefix(fmt.Sprintf("%T", e), "*pgproto3.") {
			return true
		}
		if j, ok := e.(interface{ Unwrap() []error }); ok {
			for _, x := range j.Unwrap() {
				if protocolError(x) {
					return true
				}
			}
			return false
		}
	}
	return false
}

// lastPgError is the server error of the last attempt that got one, walking
// joined errors from the end (with sslmode=prefer the first attempt's may
// be a refusal of TLS), or nil.
func lastPgError(err error) *pgconn.PgError {
	switch u := err.(type) {
	case *pgconn.PgError:
		return u
	case interface{ Unwrap() []error }:
		errs := u.Unwrap()
		for i := len(errs) - 1; i >= 0; i-- {
			if pe := lastPgError(errs[i]); pe != nil {
				return pe
			}
		}
	case interface{ Unwrap() error }:
		return lastPgError(u.Unwrap())
	}
	return nil
}

// rootCause is the innermost error of pgx's last attempt: pgx joins one
// error per address and TLS mode it tried, the most telling last.
func rootCause(err error) error {
	for {
		var next error
		switch u := err.(type) {
		case interface{ Unwrap() []error }:
			if errs := u.Unwrap(); len(errs) > 0 {
				next = errs[len(errs)-1]
			}
		case interface{ Unwrap() error }:
			next = u.Unwrap()
		}
		if next == nil {
			return err
		}
		err = next
	}
}
