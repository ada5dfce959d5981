package postgres

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/stormctl/stormctl/internal/eventlog/pgconnect"
	"github.com/stormctl/stormctl/worlds"
)

// SchemaPrefix starts the name of every schema a World creates.
const SchemaPrefix = "stormctl_"

// DefaultPoolSize is the pool size of a Config that names none: the storm's
// default number of concurrent invocations per run.
const DefaultPoolSize = 20

// maxIdentifier is PostgreSQL's identifier length limit (NAMEDATALEN - 1).
const maxIdentifier = 63

// Config configures one World.
type Config struct {
	// URL is the connection string (postgres://user:password@host:port/db or
	// key=value form).
	URL string
	// Schema names the schema the World creates and owns. Empty: SchemaPrefix
	// plus a random suffix. A name without SchemaPrefix is taken as a suffix
	// and prefixed, so a World never writes outside a stormctl_ schema. The
	// schema must not exist yet.
	Schema string
	// PoolSize is the maximum number of connections (0: DefaultPoolSize).
	// Size it to the storm's concurrency: a writer waiting for a connection
	// waits outside the store, where no window is measured.
	PoolSize int32
	// Latency shapes each write's mint-to-commit window (nil: none).
	Latency worlds.Profile
	// Seed seeds the entropy of the wevt_ ULIDs the World mints.
	Seed uint64
	// Keep keeps the schema and its data when the World closes, for
	// inspection; otherwise Close drops it.
	Keep bool
	// ConnectTimeout bounds each connection attempt (0: pgconnect.Timeout).
	ConnectTimeout time.Duration
	// Nemesis opens the World for fault injection: its pool connects
	// through a latency proxy on loopback, and it offers the targets of
	// pg-terminate, latency and (with Cluster) pg-restart. A server off
	// loopback is refused.
	Nemesis bool
	// Cluster is the embedded cluster URL points at (nil for another
	// server): the target of pg-restart.
	Cluster *Cluster
	// Flag is the flag that gave URL ("--pg-url"), for what a failed
	// connection tells the user to check; empty for the embedded cluster.
	Flag string
}

// withDefaults returns c with empty fields defaulted and the schema name
// resolved and checked.
func (c Config) withDefaults() (Config, error) {
	if strings.TrimSpace(c.URL) == "" {
		return c, errors.New("postgres: Config.URL is empty: the postgres world needs a connection string (--pg-url) or an embedded cluster")
	}
	if c.PoolSize < 0 {
		return c, fmt.Errorf("postgres: Config.PoolSize %d is negative", c.PoolSize)
	}
	if c.PoolSize == 0 {
		c.PoolSize = DefaultPoolSize
	}
	if c.ConnectTimeout <= 0 {
		c.ConnectTimeout = pgconnect.Timeout
	}
	c.Latency = worlds.ProfileOrNone(c.Latency)
	name, err := schemaName(c.Schema)
	if err != nil {
		return c, err
	}
	c.Schema = name
	return c, nil
}

// schemaName resolves Config.Schema: empty gets a random suffix, a bare
// suffix gets SchemaPrefix. Names are lower-case letters, digits and '_'.
func schemaName(s string) (string, error) {
	if s == "" {
		var b [8]byte
		if _, err := rand.Read(b[:]); err != nil {
			return "", fmt.Errorf("postgres: random schema name: %w", err)
		}
		return SchemaPrefix + hex.EncodeToString(b[:]), nil
	}
	if !strings.HasPrefix(s, SchemaPrefix) {
		s = SchemaPrefix + s
	}
	if len(s) > maxIdentifier || s == SchemaPrefix {
		return "", fmt.Errorf("postgres: schema %q: want %s followed by 1 to %d characters", s, SchemaPrefix, maxIdentifier-len(SchemaPrefix))
	}
	for _, c := range []byte(s) {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_') {
			return "", fmt.Errorf("postgres: schema %q: only lower-case letters, digits and '_' are allowed", s)
		}
	}
	return s, nil
}
