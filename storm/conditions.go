package storm

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/stormctl/stormctl/engine"
	"github.com/stormctl/stormctl/eventlog"
)

// Knobs are the independent settings a condition fixes.
type Knobs struct {
	Scheme eventlog.Scheme `json:"scheme"`
	engine.Policy
	Guard string `json:"guard"`
}

// Condition is a named preset with optional overrides, reported under the
// exact text it was given as.
type Condition struct {
	Name  string `json:"name"`
	Knobs Knobs  `json:"knobs"`
}

// Preset is a named set of knobs with a one-line reason to exist.
type Preset struct {
	Name  string
	Knobs Knobs
	About string
}

func knobs(scheme eventlog.Scheme, fence engine.FencePolicy, ids engine.IDPolicy, wake engine.WakePolicy) Knobs {
	return Knobs{Scheme: scheme, Guard: "none", Policy: engine.Policy{
		IDs: ids, Wake: wake, Fence: fence, OnReject: engine.RejectRederive, Admission: engine.AdmitAll,
		Seal: engine.SealNone,
	}}
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
	}
}

// knobSetters apply one key=value override.
var knobSetters = map[string]func(k *Knobs, v string) error{
	"scheme": func(k *Knobs, v string) error {
		s, err := eventlog.ParseScheme(v)
		k.Scheme = s
		return err
	},
	"fence":     func(k *Knobs, v string) error { k.Fence = engine.FencePolicy(v); return nil },
	"on-reject": func(k *Knobs, v string) error { k.OnReject = engine.RejectPolicy(v); return nil },
	"ids":       func(k *Knobs, v string) error { k.IDs = engine.IDPolicy(v); return nil },
	"wake": func(k *Knobs, v string) error {
		k.Wake = engine.WakePolicy(v).Canonical()
		return nil
	},
	"admission": func(k *Knobs, v string) error { k.Admission = engine.AdmissionPolicy(v); return nil },
	"seal":      func(k *Knobs, v string) error { k.Seal = engine.SealPolicy(v); return nil },
	"seal-after": func(k *Knobs, v string) error {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			return fmt.Errorf("invalid seal-after %q: want a positive duration such as 500ms", v)
		}
		k.SealAfter = d
		return nil
	},
	"guard": func(k *Knobs, v string) error {
		if v != "none" && v != "count-index" {
			return fmt.Errorf("unknown guard %q (valid: none, count-index)", v)
		}
		k.Guard = v
		return nil
	},
}

// ParseCondition parses one --condition item: a preset name optionally
// followed by /key=value overrides ("seq/wake=ordered").
func ParseCondition(item string) (Condition, error) {
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
	for _, kv := range parts[1:] {
		key, val, ok := strings.Cut(kv, "=")
		set := knobSetters[key]
		if !ok || set == nil {
			keys := make([]string, 0, len(knobSetters))
			for k := range knobSetters {
				keys = append(keys, k)
			}
			slices.Sort(keys)
			return Condition{}, fmt.Errorf("condition %q: bad override %q (want key=value, keys: %s)", item, kv, strings.Join(keys, ", "))
		}
		if err := set(&c.Knobs, val); err != nil {
			return Condition{}, fmt.Errorf("condition %q: %w", item, err)
		}
	}
	if err := c.Knobs.Policy.Validate(); err != nil {
		return Condition{}, fmt.Errorf("condition %q: %w", item, err)
	}
	if c.Knobs.Scheme != eventlog.SchemeSlot && (c.Knobs.Sealing() || c.Knobs.SealAfter > 0) {
		return Condition{}, fmt.Errorf("condition %q: seal and seal-after apply to scheme=slot only (this condition's scheme is %s)", item, c.Knobs.Scheme)
	}
	return c, nil
}
