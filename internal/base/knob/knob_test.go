package knob_test

import (
	"fmt"
	"testing"

	"github.com/stormctl/stormctl/internal/base/knob"
)

type part struct{ Color, Size string }

type whole struct {
	Name string
	part
}

func table() []knob.Knob[part] {
	return []knob.Knob[part]{
		{Name: "color", Values: []string{"red", "blue"},
			Set:  func(p *part, v string) error { p.Color = v; return nil },
			Get:  func(p part) string { return p.Color },
			Cell: func(p part) string { return "[" + p.Color + "]" }},
		{Name: "size", Hidden: true,
			Set: func(p *part, v string) error { p.Size = v; return nil },
			Get: func(p part) string { return p.Size },
			Check: func(p part) error {
				if p.Size == "" {
					return fmt.Errorf("no size")
				}
				return nil
			}},
	}
}

// TestEmbed: knobs of a part, lifted to the whole that holds it, set, read,
// show and check the part inside the whole, in the part table's order.
func TestEmbed(t *testing.T) {
	ks := knob.Embed(table(), func(w *whole) *part { return &w.part })
	if got := fmt.Sprint(knob.Names(ks)); got != "[color size]" {
		t.Fatalf("Names = %s", got)
	}
	w := whole{Name: "w"}
	if err := knob.Validate(ks, w); err == nil || err.Error() != `unknown color "" (valid: red, blue)` {
		t.Errorf("Validate(zero) = %v", err)
	}
	for _, kv := range [][2]string{{"color", "blue"}, {"size", "xl"}} {
		k, ok := knob.Find(ks, kv[0])
		if !ok {
			t.Fatalf("Find(%q) found nothing", kv[0])
		}
		if err := k.Set(&w, kv[1]); err != nil {
			t.Fatal(err)
		}
	}
	if w != (whole{"w", part{"blue", "xl"}}) || knob.Validate(ks, w) != nil {
		t.Errorf("after Set: %+v, Validate %v", w, knob.Validate(ks, w))
	}
	if got := ks[0].ShowCell(w) + ks[1].ShowCell(w); got != "[blue]xl" {
		t.Errorf("cells %q, want [blue]xl", got)
	}
	w.Size = ""
	if err := ks[1].Validate(w); err == nil || err.Error() != "no size" {
		t.Errorf("Check through Embed: %v", err)
	}
	if _, ok := knob.Find(ks, "weight"); ok {
		t.Error(`Find("weight") found a knob`)
	}
}
