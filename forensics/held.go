package forensics

import (
	"slices"

	"github.com/stormctl/stormctl/internal/history"
)

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
	if h.seen == nil { // the zero value, or a Held Holding handed out
		h.seen = make(map[K]bool, len(h.Keys))
		for _, k := range h.Keys {
			h.seen[k] = true
		}
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

// Holding is HeldBy kept up as ops are recorded: after Add has taken a
// history's ops, Held(actor) is HeldBy of them for actor, built load by
// load as each finishes instead of regrouping the whole history per call.
// schedule keeps one while it executes, to derive each write from what
// its writer holds.
type Holding[K comparable] struct {
	events func(i int) []K
	ops    []history.Op
	actors map[string]*holder[K]
}

// holder is one actor's part of a Holding.
type holder[K comparable] struct {
	// held has taken the actor's finished loads that began before open
	// (all of them when open is nil), in the order they began.
	held Held[K]
	// open is the load the actor is reading (nil: none).
	open *Load
	// later are the snapshots taken while open was reading: Loads orders
	// them after it, so they are taken once it ends.
	later []Load
}

// NewHolding returns a Holding of no ops; events(i) names the events of
// the page at op index i, as for HeldBy, and must not change once the op
// is added.
func NewHolding[K comparable](events func(i int) []K) *Holding[K] {
	return &Holding[K]{events: events, actors: map[string]*holder[K]{}}
}

// Add takes the ops recorded since the last Add: ops is the whole history
// so far, the ops of the earlier calls unchanged at its start.
func (h *Holding[K]) Add(ops []history.Op) {
	from := len(h.ops)
	h.ops = ops
	for i := from; i < len(ops); i++ {
		op := ops[i]
		kind := pageOf(op)
		if kind == notPage {
			continue
		}
		a := h.actors[op.Actor]
		if a == nil {
			a = &holder[K]{}
			h.actors[op.Actor] = a
		}
		switch {
		case kind == snapshotPage && a.open != nil:
			a.later = append(a.later, Load{Actor: op.Actor, Pages: []int{i}})
		case kind == snapshotPage:
			a.held.Take(ops, Load{Actor: op.Actor, Pages: []int{i}}, h.events)
		default:
			if a.open == nil {
				a.open = &Load{Actor: op.Actor}
			}
			a.open.Pages = append(a.open.Pages, i)
			if kind == lastPage {
				a.held.Take(ops, *a.open, h.events)
				for _, ld := range a.later {
					a.held.Take(ops, ld, h.events)
				}
				a.open, a.later = nil, nil
			}
		}
	}
}

// Held is what actor holds after its loads among the ops added, as
// HeldBy(ops, actor, events) gives it. The Held returned is the caller's:
// taking more into it leaves h as it was.
func (h *Holding[K]) Held(actor string) Held[K] {
	a := h.actors[actor]
	if a == nil {
		return Held[K]{}
	}
	out := Held[K]{Loads: a.held.Loads, Pages: slices.Clip(a.held.Pages), Keys: slices.Clip(a.held.Keys)}
	for _, ld := range a.later {
		out.Take(h.ops, ld, h.events)
	}
	return out
}
