package postgres

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"syscall"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/stormctl/stormctl/internal/eventlog"
)

var (
	// ErrSchemaTaken: the schema a World was asked to create already exists.
	// A World only ever uses a schema it created itself, so it refuses (and
	// leaves the schema untouched) rather than write into someone's data.
	ErrSchemaTaken = errors.New("schema exists and was not created by this world")

	// ErrNoCommitTimestamps: the server runs with track_commit_timestamp off,
	// so it keeps no commit times and commit-order forensics are unavailable.
	// The World says so instead of guessing from another clock.
	ErrNoCommitTimestamps = errors.New("track_commit_timestamp is off: the server keeps no commit times, " +
		"so commit-order forensics are unavailable (set track_commit_timestamp = on in postgresql.conf and restart the server)")

	// errClosed is returned by every operation on a closed World.
	errClosed = errors.New("postgres: world is closed")
)

// SQLSTATE codes the world tells apart.
const (
	codeUniqueViolation = "23505"
	codeDuplicateSchema = "42P06"
)

// unavailable reports whether err means the server cannot be used at all
// (refused or dropped connection, failed authentication, missing database,
// server shutting down or out of connections), as opposed to a problem with
// one statement.
func unavailable(err error) bool {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		switch pgErr.Code {
		case "57P01", "57P02", "57P03", // admin_shutdown, crash_shutdown, cannot_connect_now
			"3D000": // invalid_catalog_name: the database does not exist
			return true
		}
		// 08: connection exception; 28: invalid authorization; 53: insufficient
		// resources (too many connections, out of memory or disk).
		return strings.HasPrefix(pgErr.Code, "08") || strings.HasPrefix(pgErr.Code, "28") ||
			strings.HasPrefix(pgErr.Code, "53")
	}
	var connectErr *pgconn.ConnectError
	var netErr net.Error
	switch {
	case errors.As(err, &connectErr), errors.As(err, &netErr), pgconn.Timeout(err):
		return true
	case errors.Is(err, pgconn.ErrConnClosed), errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return true
	case errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE):
		return true
	}
	return false
}

// storeErr wraps err of operation op with context. A cancelled or expired ctx
// wins (the caller gave up; the driver's error is kept in the text); an
// unusable server is marked eventlog.ErrUnavailable.
func storeErr(ctx context.Context, op string, err error) error {
	if err == nil {
		return nil
	}
	if cerr := ctx.Err(); cerr != nil {
		if errors.Is(err, cerr) {
			return fmt.Errorf("postgres: %s: %w", op, err)
		}
		return fmt.Errorf("postgres: %s: %w (%v)", op, cerr, err)
	}
	if unavailable(err) {
		return eventlog.Unavailable("postgres: "+op, err)
	}
	return fmt.Errorf("postgres: %s: %w", op, err)
}

// pgCode returns the SQLSTATE of a server error and the constraint it names,
// or "" for other errors.
func pgCode(err error) (code, constraint string) {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return pgErr.Code, pgErr.ConstraintName
	}
	return "", ""
}
