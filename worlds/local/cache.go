package local

import (
	"slices"
	"sync"

	"github.com/stormctl/stormctl/eventlog"
)

// eventCache keeps the events a World has read. An event file is immutable
// once renamed into place: only a rollback or Reset removes it, and an id is
// never minted twice, so a cached copy never goes stale. Callers look up only
// names they just found in a directory scan, so a removed file is never
// served. Payloads are cloned on the way out.
type eventCache struct {
	m sync.Map // file base name → eventlog.Event
}

// event returns an event of runID, from the cache or from its file.
func (w *World) event(runID, eventID string) (eventlog.Event, error) {
	key := runID + "-" + eventID
	if v, ok := w.cache.m.Load(key); ok {
		e := v.(eventlog.Event)
		e.Payload = slices.Clone(e.Payload)
		return e, nil
	}
	e, err := w.fs.readEvent(runID, eventID)
	if err != nil {
		return e, err
	}
	w.cache.m.Store(key, e)
	e.Payload = slices.Clone(e.Payload)
	return e, nil
}

// clear forgets every cached event.
func (c *eventCache) clear() { c.m.Clear() }
