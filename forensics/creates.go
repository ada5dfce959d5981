package forensics

import (
	"cmp"
	"slices"

	"github.com/stormctl/stormctl/internal/eventlog"
)

// creation reports whether events of type t create an entity whose
// creation a world must hold once per run: a step, a wait or a hook.
func creation(t eventlog.Type) bool {
	return t == eventlog.StepCreated || t == eventlog.WaitCreated || t == eventlog.HookCreated
}

// Duplicate is one creation key that a run's final log holds more than
// once: a step, wait or hook created twice (or more) for one correlation
// id, or two hook_created holding one hook token. The world broke its own
// uniqueness contract (eventlog.Draft.Keys: one event per type and
// correlation id, one hook per token): a world-layer finding, whoever
// wrote the creations.
type Duplicate struct {
	// Key is the creation key, as eventlog.Draft.Keys spells it
	// ("step_created/step_1", "hook_token/tok").
	Key string `json:"key"`
	// Type is the creations' type and CorrelationID their correlation id
	// (of the first of them, for a token held twice); Token the hook token
	// of a hook_token key.
	Type          eventlog.Type `json:"type"`
	CorrelationID string        `json:"corr,omitempty"`
	Token         string        `json:"token,omitempty"`
	// IDs are the event ids holding the key, in id order.
	IDs []string `json:"ids"`
}

// CreateScan is what a run's final log shows of its entities' creations.
type CreateScan struct {
	// Extra counts the creations beyond the first of each entity: every
	// creation event less the entities they create, where two creations
	// sharing a key (a correlation id of one type, or a hook token) create
	// one entity.
	Extra int
	// Duplicates are the keys held more than once, in key order.
	Duplicates []Duplicate
}

// ScanCreations finds the entities a run's final log (in any order)
// created more than once. It is the one definition of a duplicate
// creation: the checker's count and the explainer's duplicate-create class
// both read it.
func ScanCreations(evs []eventlog.Event) CreateScan {
	type held struct {
		key string
		i   int // index into evs
	}
	var keys []held
	n := 0
	for i, e := range evs {
		if !creation(e.Type) {
			continue
		}
		n++
		for _, k := range e.Draft().Keys() {
			keys = append(keys, held{key: k, i: i})
		}
	}
	if n < 2 {
		return CreateScan{}
	}
	slices.SortFunc(keys, func(a, b held) int {
		if c := cmp.Compare(a.key, b.key); c != 0 {
			return c
		}
		return cmp.Compare(evs[a.i].ID, evs[b.i].ID)
	})
	// Creations sharing a key are one entity: union them, and count the
	// entities left.
	parent := map[int]int{}
	var find func(i int) int
	find = func(i int) int {
		p, ok := parent[i]
		if !ok || p == i {
			return i
		}
		r := find(p)
		parent[i] = r
		return r
	}
	var out CreateScan
	for lo := 0; lo < len(keys); {
		hi := lo + 1
		for hi < len(keys) && keys[hi].key == keys[lo].key {
			hi++
		}
		if hi-lo > 1 {
			first := evs[keys[lo].i]
			d := Duplicate{Key: keys[lo].key, Type: first.Type, CorrelationID: first.CorrelationID}
			if first.Token != "" && keys[lo].key == "hook_token/"+first.Token {
				d.Token = first.Token
			}
			for _, k := range keys[lo:hi] {
				d.IDs = append(d.IDs, evs[k.i].ID)
				if a, b := find(keys[lo].i), find(k.i); a != b {
					parent[b] = a
					out.Extra++
				}
			}
			out.Duplicates = append(out.Duplicates, d)
		}
		lo = hi
	}
	return out
}

// checkCreates counts the run's duplicate creations: the creations of a
// step, wait or hook beyond the first for one correlation id (or hook
// token) in the final log.
func checkCreates(r *run, f *RunFindings) {
	f.DuplicateCreates = ScanCreations(r.Final).Extra
}
