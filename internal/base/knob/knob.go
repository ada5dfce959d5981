// Package knob declares the settings of a storm condition once. A Knob is
// one setting: its name (the key of a /key=value override and the header of
// its column in `stormctl conditions`), its valid values, a line of help, and
// how to set and read it on the struct that holds it. One table of knobs then
// drives validation, the override parser, the conditions listing and its
// help: adding a setting is adding its field and its entry.
package knob

import (
	"fmt"
	"slices"
	"strings"
)

// Knob is one setting of a condition, held in a T.
type Knob[T any] struct {
	// Name is the override key and the listing's column header.
	Name string
	// Values are the valid values of Get, in the order messages and help
	// list them; nil for a knob whose value is not one of a list (Set
	// parses it and Check checks it).
	Values []string
	// Help says in a line what the knob decides.
	Help string
	// SlotOnly says the knob matters under the slot scheme only: the
	// listing shows "-" for it under other schemes, and a condition of
	// another scheme may not move it from its default.
	SlotOnly bool
	// Hidden says the knob has no column of its own in the listing
	// (another knob's Cell shows it).
	Hidden bool
	// WorldSide says the knob asks something of the world (a scheme, a
	// fenced append, a guard, seals): a world without it cannot run a
	// condition that moves it. The others are the engine's own, which any
	// world runs.
	WorldSide bool
	// Set parses one override value into t. It needs not check the value
	// against Values: Validate does.
	Set func(t *T, value string) error
	// Get returns the value as an override writes it.
	Get func(t T) string
	// Cell, if set, is the knob's cell in the listing instead of Get.
	Cell func(t T) string
	// Check, if set, is what Validate checks instead of Values.
	Check func(t T) error
}

// Validate reports whether t's value of the knob is valid, naming the knob
// and, for a knob with Values, listing them.
func (k Knob[T]) Validate(t T) error {
	if k.Check != nil {
		return k.Check(t)
	}
	if v := k.Get(t); k.Values != nil && !slices.Contains(k.Values, v) {
		return fmt.Errorf("unknown %s %q (valid: %s)", k.Name, v, strings.Join(k.Values, ", "))
	}
	return nil
}

// ShowCell returns the knob's cell in the listing: Cell, or Get.
func (k Knob[T]) ShowCell(t T) string {
	if k.Cell != nil {
		return k.Cell(t)
	}
	return k.Get(t)
}

// Validate returns the first knob of ks, in table order, whose value in t is
// not valid.
func Validate[T any](ks []Knob[T], t T) error {
	for _, k := range ks {
		if err := k.Validate(t); err != nil {
			return err
		}
	}
	return nil
}

// Find returns the knob of ks named name.
func Find[T any](ks []Knob[T], name string) (Knob[T], bool) {
	i := slices.IndexFunc(ks, func(k Knob[T]) bool { return k.Name == name })
	if i < 0 {
		return Knob[T]{}, false
	}
	return ks[i], true
}

// Names returns the names of ks in table order.
func Names[T any](ks []Knob[T]) []string {
	names := make([]string, len(ks))
	for i, k := range ks {
		names[i] = k.Name
	}
	return names
}

// Embed lifts knobs of a part P to knobs of a whole T that holds it, where
// part returns the P inside a T.
func Embed[T, P any](ks []Knob[P], part func(t *T) *P) []Knob[T] {
	out := make([]Knob[T], len(ks))
	for i, k := range ks {
		out[i] = Knob[T]{Name: k.Name, Values: k.Values, Help: k.Help, SlotOnly: k.SlotOnly, Hidden: k.Hidden, WorldSide: k.WorldSide,
			Set: func(t *T, v string) error { return k.Set(part(t), v) },
			Get: func(t T) string { return k.Get(*part(&t)) },
		}
		if k.Cell != nil {
			out[i].Cell = func(t T) string { return k.Cell(*part(&t)) }
		}
		if k.Check != nil {
			out[i].Check = func(t T) error { return k.Check(*part(&t)) }
		}
	}
	return out
}
