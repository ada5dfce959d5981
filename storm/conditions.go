package storm

import (
	"fmt"
	"slices"
	"strings"

	"github.com/stormctl/stormctl/engine"
	"github.com/stormctl/stormctl/eventlog"
	"github.com/stormctl/stormctl/internal/knob"
)

// Knobs are the independent settings a condition fixes: the scheme, and
// the engine's policy. Each is a knob of KnobTable.
type Knobs struct {
	Scheme eventlog.Scheme `json:"scheme"`
	engine.Policy
}

// KnobTable returns the condition knobs in the conditions listing's column
// order: the scheme, then the engine's policy knobs (engine.PolicyKnobs). It
// drives ParseCondition's overrides, Knobs.Validate, `stormctl conditions`
// and its help.
func KnobTable() []knob.Knob[Knobs] {
	scheme := knob.Knob[Knobs]{
		Name: "scheme", Help: "how a run's log is ordered and cursored",
		Set: func(k *Knobs, v string) (err error) {
			k.Scheme, err = eventlog.ParseScheme(v)
			return err
		},
		Get: func(k Knobs) string { return string(k.Scheme) },
	}
	for _, s := range eventlog.Schemes() {
		scheme.Values = append(scheme.Values, string(s))
	}
	return append([]knob.Knob[Knobs]{scheme}, knob.Embed(engine.PolicyKnobs(), func(k *Knobs) *engine.Policy { return &k.Policy })...)
}

// Validate names the first knob, in KnobTable order, with an unknown value,
// then refuses a slot-only knob moved from its default under another scheme.
func (k Knobs) Validate() error {
	table := KnobTable()
	if err := knob.Validate(table, k); err != nil {
		return err
	}
	if k.Scheme == eventlog.SchemeSlot {
		return nil
	}
	defaults := Knobs{Scheme: k.Scheme, Policy: engine.DefaultPolicy()}
	var slotOnly []string
	moved := false
	for _, kn := range table {
		if kn.SlotOnly {
			slotOnly = append(slotOnly, kn.Name)
			moved = moved || kn.Get(k) != kn.Get(defaults)
		}
	}
	if moved {
		return fmt.Errorf("%s apply to scheme=slot only (this condition's scheme is %s)", strings.Join(slotOnly, " and "), k.Scheme)
	}
	return nil
}

// Cells returns the knobs' cells of the conditions listing, one per knob
// with a column (KnobColumns), in table order; a slot-only knob shows "-"
// under another scheme.
func (k Knobs) Cells() []string {
	var cells []string
	for _, kn := range KnobTable() {
		switch {
		case kn.Hidden:
		case kn.SlotOnly && k.Scheme != eventlog.SchemeSlot:
			cells = append(cells, "-")
		default:
			cells = append(cells, kn.ShowCell(k))
		}
	}
	return cells
}

// KnobColumns returns the headers of the conditions listing's knob columns,
// in table order.
func KnobColumns() []string {
	var cols []string
	for _, kn := range KnobTable() {
		if !kn.Hidden {
			cols = append(cols, kn.Name)
		}
	}
	return cols
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
	p := engine.DefaultPolicy()
	p.Fence, p.IDs, p.Wake = fence, ids, wake
	return Knobs{Scheme: scheme, Policy: p}
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

// ParseCondition parses one --condition item: a preset name optionally
// followed by /key=value overrides ("seq/wake=ordered"), one per knob of
// KnobTable. A value that does not parse is refused at once; the knobs are
// validated after the last override, so a later override may replace an
// earlier one.
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
	table := KnobTable()
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
