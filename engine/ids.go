package engine

import (
	"fmt"
	"hash/fnv"
	"path/filepath"
	"runtime"
)

// idSource draws correlation ids for one replay. Callers hold the replay lock.
type idSource interface {
	draw(kind, site string) string
}

// positionalIDs is the engine's seeded generator: a per-run base plus n for
// the n-th draw, one counter shared by steps, waits, hooks and attributes.
type positionalIDs struct {
	base uint64
	n    uint64
}

func newPositionalIDs(runID string) *positionalIDs {
	h := fnv.New64a()
	h.Write([]byte(runID))
	return &positionalIDs{base: h.Sum64() >> 8}
}

func (p *positionalIDs) draw(kind, _ string) string {
	id := fmt.Sprintf("%s_%014x", kind, p.base+p.n)
	p.n++
	return id
}

// callsiteIDs addresses each call by its site in the code plus the number of
// earlier calls from that site.
type callsiteIDs struct {
	ordinals map[string]int
}

func newCallsiteIDs() *callsiteIDs { return &callsiteIDs{ordinals: map[string]int{}} }

func (c *callsiteIDs) draw(kind, site string) string {
	k := kind + "@" + site
	n := c.ordinals[k]
	c.ordinals[k] = n + 1
	return fmt.Sprintf("%s#%d", k, n)
}

func newIDSource(p IDPolicy, runID string) idSource {
	if p == IDsCallsite {
		return newCallsiteIDs()
	}
	return newPositionalIDs(runID)
}

// callSite names the code location skip frames above its caller.
func callSite(skip int) string {
	_, file, line, ok := runtime.Caller(skip + 1)
	if !ok {
		return "unknown"
	}
	return fmt.Sprintf("%s:%d", filepath.Base(file), line)
}
