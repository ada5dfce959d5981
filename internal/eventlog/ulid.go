package eventlog

import (
	"io"
	"strings"
	"sync"
	"time"

	"github.com/oklog/ulid/v2"
)

// Event id prefixes of the worlds.
const (
	// LocalPrefix prefixes world-local event ids.
	LocalPrefix = "evnt_"
	// ServerPrefix prefixes world-postgres and ingest-minted event ids.
	ServerPrefix = "wevt_"
)

// Minter mints monotonic ULIDs with a prefix, safe for concurrent use. Ids
// minted by one Minter sort in mint order; that is all a ULID promises, and
// exactly what the legacy contract wrongly takes for commit order.
type Minter struct {
	prefix  string
	mu      sync.Mutex
	entropy *ulid.MonotonicEntropy
}

// NewMinter returns a Minter drawing randomness from entropy.
func NewMinter(prefix string, entropy io.Reader) *Minter {
	return &Minter{prefix: prefix, entropy: ulid.Monotonic(entropy, 0)}
}

// Mint returns a new id for time t.
func (m *Minter) Mint(t time.Time) string {
	m.mu.Lock()
	defer m.mu.Unlock()
	id := ulid.MustNew(ulid.Timestamp(t), m.entropy)
	return m.prefix + id.String()
}

// MintTime is the time encoded in a prefixed ULID event id ("wevt_…",
// "evnt_…"): the ULID after the id's last '_' (or the whole id, without
// one). It fails, with the zero time, when that is not a ULID; the error is
// the ulid package's own, without the id, so that a caller reading many ids
// pays nothing for the ones that fail and adds the context it has.
func MintTime(id string) (time.Time, error) {
	u, err := ulid.ParseStrict(id[strings.LastIndexByte(id, '_')+1:])
	if err != nil {
		return time.Time{}, err
	}
	return ulid.Time(u.Time()), nil
}
