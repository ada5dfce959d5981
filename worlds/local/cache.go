package local

import (
	"slices"
	"sync"

	"github.com/stormctl/stormctl/internal/eventlog"
)

// eventCache keeps the events a World has read. An event file is immutable
// once renamed into place: only a rollback or Reset removes it, and an id is
// never minted twice, so a cached copy never goes stale. Callers look up only
// names they just found in a directory scan, so a removed file is never
// served. A slot id names its position, and a file left at a reserved slot
// by a holder that died before its table rename is overwritten when the slot
// fills; slot readers look up only slots their table says are filled, whose
// files are final. Payloads are cloned on the way out.
type eventCache struct {
	mu sync.RWMutex
	m  map[string]*cachedEvent // file base name → event
}

// cachedEvent is a read event; callers must clone it before handing it out.
type cachedEvent struct{ e eventlog.Event }

func (c *cachedEvent) clone() eventlog.Event {
	e := c.e
	e.Payload = slices.Clone(e.Payload)
	return e
}

// cached returns the cached event of runID, reading its file on a miss.
func (w *World) cached(runID, eventID string) (*cachedEvent, error) {
	key := runID + "-" + eventID
	w.cache.mu.RLock()
	ce, ok := w.cache.m[key]
	w.cache.mu.RUnlock()
	if ok {
		return ce, nil
	}
	e, err := w.fs.readEvent(runID, eventID)
	if err != nil {
		return nil, err
	}
	ce = &cachedEvent{e: e}
	w.cache.mu.Lock()
	if w.cache.m == nil {
		w.cache.m = map[string]*cachedEvent{}
	}
	w.cache.m[key] = ce
	w.cache.mu.Unlock()
	return ce, nil
}

// event returns a copy of an event of runID, from the cache or its file.
func (w *World) event(runID, eventID string) (eventlog.Event, error) {
	ce, err := w.cached(runID, eventID)
	if err != nil {
		return eventlog.Event{}, err
	}
	return ce.clone(), nil
}

// clear forgets every cached event.
func (c *eventCache) clear() {
	c.mu.Lock()
	c.m = nil
	c.mu.Unlock()
}
