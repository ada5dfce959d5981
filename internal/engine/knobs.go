package engine

import (
	"fmt"
	"strings"

	"github.com/stormctl/stormctl/internal/base/knob"
	"github.com/stormctl/stormctl/internal/eventlog"
)

// Knobs are the independent settings a storm condition fixes, as one
// value: the scheme the world orders a run's log by, the engine's policy,
// and which engine runs the condition's runs. Each is a knob of KnobTable.
// The runtime (Config), the verdicts' and the explainer's reference
// replays all take them whole.
type Knobs struct {
	Scheme eventlog.Scheme `json:"scheme"`
	Policy
	// Engine names the engine that runs the condition's runs, as the
	// engine registry (internal/engines) knows it: "" for the storm's
	// --engine. A policy is the model's: an engine that runs the
	// published runtime refuses any but main's (engines.KnobChecker).
	Engine string `json:"engine,omitempty"`
}

// KnobTable returns the condition knobs in the conditions listing's column
// order: the scheme, then the engine's policy knobs (PolicyKnobs). It
// drives ParseCondition's overrides, Knobs.Validate, `stormctl conditions`
// and its help.
func KnobTable() []knob.Knob[Knobs] {
	scheme := knob.Knob[Knobs]{
		Name: "scheme", Help: "how a run's log is ordered and cursored", WorldSide: true,
		Set: func(k *Knobs, v string) (err error) {
			k.Scheme, err = eventlog.ParseScheme(v)
			return err
		},
		Get: func(k Knobs) string { return string(k.Scheme) },
	}
	for _, s := range eventlog.Schemes() {
		scheme.Values = append(scheme.Values, string(s))
	}
	eng := knob.Knob[Knobs]{
		Name: "engine", Help: "which engine runs the runs: the model, or the published runtime (devkit worlds only); unset: the storm's --engine",
		// Values are the engine registry's names: the CLI lists them, a
		// storm's plan refuses a name it does not hold.
		Set: func(k *Knobs, v string) error { k.Engine = v; return nil },
		Get: func(k Knobs) string { return k.Engine },
		Cell: func(k Knobs) string {
			if k.Engine == "" {
				return "-"
			}
			return k.Engine
		},
	}
	table := append([]knob.Knob[Knobs]{scheme}, knob.Embed(PolicyKnobs(), func(k *Knobs) *Policy { return &k.Policy })...)
	return append(table, eng)
}

// Validate names the first knob, in KnobTable order, with an unknown value,
// then refuses a slot-only knob moved from its default under another scheme.
func (k Knobs) Validate() error {
	table := KnobTable()
	if err := knob.Validate(table, k); err != nil {
		return err
	}
	if k.InBand() && k.Scheme != eventlog.SchemeSlot {
		return fmt.Errorf("fence=%s needs scheme=%s (spec 9 builds on slot positions; this condition's scheme is %s)", FenceInBand, eventlog.SchemeSlot, k.Scheme)
	}
	if k.OnReject == RejectRedeliver && !k.Fenced() {
		return fmt.Errorf("on-reject=%s applies to fenced conditions (this one has fence=%s): nothing unfenced is refused by a fence", RejectRedeliver, k.Fence)
	}
	if k.Scheme == eventlog.SchemeSlot {
		return nil
	}
	defaults := Knobs{Scheme: k.Scheme, Policy: DefaultPolicy()}
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
