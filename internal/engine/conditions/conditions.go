// Package conditions names the storm conditions: presets (main,
// seq+callsite+ordered, ...) over the engine's knobs (engine.Knobs), and
// the --condition items that override them ("seq/wake=ordered"), each
// reported under the exact text it was given as.
package conditions

import (
	"fmt"
	"slices"
	"strings"

	"github.com/stormctl/stormctl/internal/base/knob"
	"github.com/stormctl/stormctl/internal/engine"
	"github.com/stormctl/stormctl/internal/eventlog"
)

// Condition is a named preset with optional overrides, reported under the
// exact text it was given as.
type Condition struct {
	Name  string       `json:"name"`
	Knobs engine.Knobs `json:"knobs"`
}

// Preset is a named set of knobs with a one-line reason to exist.
type Preset struct {
	Name  string
	Knobs engine.Knobs
	About string
}

func knobs(scheme eventlog.Scheme, fence engine.FencePolicy, ids engine.IDPolicy, wake engine.WakePolicy) engine.Knobs {
	p := engine.DefaultPolicy()
	p.Fence, p.IDs, p.Wake = fence, ids, wake
	return engine.Knobs{Scheme: scheme, Policy: p}
}

// Presets returns the condition presets in display order.
func Presets() []Preset {
	repost := knobs(eventlog.SchemeSeq, engine.FenceDecisions, engine.IDsPositional, engine.WakeEngine)
	repost.OnReject = engine.RejectRepost
	slot := knobs(eventlog.SchemeSlot, engine.FenceNone, engine.IDsPositional, engine.WakeEngine)
	slotNoop := slot
	slotNoop.Seal = engine.SealNoop
	slotTarget := knobs(eventlog.SchemeSlot, engine.FenceNone, engine.IDsCallsite, engine.WakeOrdered)
	slotTarget.Seal = engine.SealNoop
	// spec 9 as written upstream, on slot ids and seals (it "requires the
	// sealed log"): the orchestrator's writes fenced in band, a superseded
	// one redelivered after 5s, step and wait events plain appends, replay
	// inert past an entity's end. Ids and wake stay core's; the queue does
	// not serialise a run's deliveries (admission none), so the fence is
	// what stands between concurrent orchestrators (docs/conditions.md).
	single := slotNoop
	single.Fence, single.OnReject, single.Repeats = engine.FenceInBand, engine.RejectRedeliver, engine.RepeatsInert
	return []Preset{
		{"main", knobs(eventlog.SchemeULID, engine.FenceNone, engine.IDsPositional, engine.WakeEngine), "the legacy contract: ids minted before commit order and cursor the log"},
		{"tail-fence", knobs(eventlog.SchemeULID, engine.FenceAll, engine.IDsPositional, engine.WakeEngine), "every append fenced on the log's length (the #670 experiment)"},
		{"callsite", knobs(eventlog.SchemeULID, engine.FenceNone, engine.IDsCallsite, engine.WakeEngine), "call-site correlation ids on the legacy contract (#3179)"},
		{"seq", knobs(eventlog.SchemeSeq, engine.FenceDecisions, engine.IDsPositional, engine.WakeEngine), "event_{seq}: dense per-run seq at commit, decisions fenced per suspension"},
		{"seq+callsite", knobs(eventlog.SchemeSeq, engine.FenceDecisions, engine.IDsCallsite, engine.WakeEngine), "event_{seq} with call-site ids"},
		{"seq+callsite+ordered", knobs(eventlog.SchemeSeq, engine.FenceDecisions, engine.IDsCallsite, engine.WakeOrdered), "the target: event_{seq}, call-site ids and strict in-order delivery (#3196, Phase D)"},
		{"sequence", knobs(eventlog.SchemeSequence, engine.FenceDecisions, engine.IDsPositional, engine.WakeEngine), "seq from a non-transactional bigserial (gotcha 1; postgres only)"},
		{"repost", repost, "event_{seq} whose rejected writers re-post the stale closure (the landmine)"},
		{"slot", slot, "slot ids (spec 6): a position reserved when the write starts, committed after its window; a load refuses a hole"},
		{"slot+noop", slotNoop, "slot ids with noop seals (spec 7): a reader waiting on an empty slot for seal-after fills it with a noop"},
		{"slot+callsite+ordered", slotTarget, "slot ids and noop seals with call-site ids and strict in-order delivery"},
		{"single-orchestrator", single, "spec 9 (unpublished): slot ids and seals, orchestrator writes fenced in band, redelivered when superseded"},
	}
}

// Parse parses one --condition item: a preset name optionally
// followed by /key=value overrides ("seq/wake=ordered"), one per knob of
// engine.KnobTable. A value that does not parse is refused at once; the knobs are
// validated after the last override, so a later override may replace an
// earlier one.
func Parse(item string) (Condition, error) {
	parts := strings.Split(strings.TrimSpace(item), "/")
	var preset *Preset
	names := []string{}
	for _, p := range Presets() {
		names = append(names, p.Name)
		if p.Name == parts[0] {
			preset = &p
		}
	}
	if preset == nil {
		return Condition{}, fmt.Errorf("unknown condition %q (valid presets: %s; add /key=value overrides)", parts[0], strings.Join(names, ", "))
	}
	c := Condition{Name: strings.TrimSpace(item), Knobs: preset.Knobs}
	table := engine.KnobTable()
	for _, kv := range parts[1:] {
		key, val, ok := strings.Cut(kv, "=")
		kn, found := knob.Find(table, key)
		if !ok || !found {
			keys := slices.Sorted(slices.Values(knob.Names(table)))
			return Condition{}, fmt.Errorf("condition %q: bad override %q (want key=value, keys: %s)", item, kv, strings.Join(keys, ", "))
		}
		if err := kn.Set(&c.Knobs, val); err != nil {
			return Condition{}, fmt.Errorf("condition %q: %w", item, err)
		}
	}
	if err := c.Knobs.Validate(); err != nil {
		return Condition{}, fmt.Errorf("condition %q: %w", item, err)
	}
	return c, nil
}
