package forensics

import "github.com/stormctl/stormctl/history"

// Held is what one reader holds after its loads, built load by load as
// the runtime keeps an invocation's log: a load from the start (its first
// page's cursor is zero: a cursor-less reload, a run_started's preload)
// replaces what the reader held; a load from a cursor (a page read on, an
// incremental read, a delta or skipped-slot report a write's answer
// carried) adds its events; an event held already is held once. K names
// an event (an id, a label, a position in the final log). The zero value
// holds nothing.
//
// explain rebuilds a writer's view with it from recorded pages, and
// schedule derives a write from it: one rule for both.
type Held[K comparable] struct {
	// Loads counts the loads taken since the last one from the start
	// (that one included).
	Loads int
	// Pages are the op indexes of those loads' pages, in the order taken.
	Pages []int
	// Keys are the events held, each once, in the order first taken.
	Keys []K
	seen map[K]bool
}

// Take takes load ld of ops (Loads' grouping of them) into h: events(i)
// names the events the page at op index i returned.
func (h *Held[K]) Take(ops []history.Op, ld Load, events func(i int) []K) {
	if len(ld.Pages) == 0 {
		return
	}
	if ops[ld.Pages[0]].After.IsZero() {
		*h = Held[K]{}
	}
	if h.seen == nil {
		h.seen = map[K]bool{}
	}
	h.Loads++
	for _, i := range ld.Pages {
		h.Pages = append(h.Pages, i)
		for _, k := range events(i) {
			if !h.seen[k] {
				h.seen[k] = true
				h.Keys = append(h.Keys, k)
			}
		}
	}
}

// HeldBy is what actor holds after its loads among ops that finished by
// the end of ops (a load still open there is not held: Loads leaves it
// out); events(i) names the events of the page at op index i.
func HeldBy[K comparable](ops []history.Op, actor string, events func(i int) []K) Held[K] {
	var h Held[K]
	for _, ld := range Loads(ops) {
		if ld.Actor == actor {
			h.Take(ops, ld, events)
		}
	}
	return h
}
