package local

import (
	"encoding/binary"
	"math/rand/v2"
	"time"

	"github.com/stormctl/stormctl/internal/eventlog"
)

// newEvent is the event a draft becomes, minted now.
func (w *World) newEvent(runID string, d eventlog.Draft) eventlog.Event {
	now := time.Now()
	return d.Event(runID, w.mint.Mint(now), now)
}

// pcgReader turns a PCG into the io.Reader ULID entropy wants. Not safe for
// concurrent use; the Minter serializes its reads.
type pcgReader struct {
	src *rand.PCG
}

func (r *pcgReader) Read(p []byte) (int, error) {
	var buf [8]byte
	for i := 0; i < len(p); i += 8 {
		binary.LittleEndian.PutUint64(buf[:], r.src.Uint64())
		copy(p[i:], buf[:])
	}
	return len(p), nil
}
