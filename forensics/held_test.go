package forensics

import (
	"reflect"
	"strings"
	"testing"

	"github.com/stormctl/stormctl/eventlog"
	"github.com/stormctl/stormctl/history"
)

// heldPage is one page of a TestHeld case: after "" reads from the start;
// ids are the events it returned ("" none).
type heldPage struct {
	actor, after   string
	more, snapshot bool
	ids            string
}

// TestHeld: what a reader holds after its loads, as explain and schedule
// rebuild a writer's view: a load from the start replaces, a load from a
// cursor adds, an event held already is held once, a load still open is
// not held, and other actors' loads are not its own.
func TestHeld(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		pages []heldPage
		keys  string // what inv-1 holds
		loads int
		ops   []int // the op indexes of its held pages
	}{
		{"nothing read", nil, "", 0, nil},
		{"one load of two pages", []heldPage{{"inv-1", "", true, false, "a,b"}, {"inv-1", "b", false, false, "c"}}, "a,b,c", 1, []int{0, 1}},
		{"a reload from the start replaces", []heldPage{{"inv-1", "", false, false, "a,b,c"}, {"inv-1", "", false, false, "a"}}, "a", 1, []int{1}},
		{"a snapshot preload, then a reload", []heldPage{{"inv-1", "", false, true, "a,b"}, {"inv-1", "", false, false, "a,b,c"}}, "a,b,c", 1, []int{1}},
		{"a load from a cursor adds", []heldPage{{"inv-1", "", false, false, "a,b"}, {"inv-1", "b", false, false, "c"}}, "a,b,c", 2, []int{0, 1}},
		{"an overlapping answer holds an event once", []heldPage{{"inv-1", "", false, false, "a,b"}, {"inv-1", "a", false, true, "b,c"}, {"inv-1", "a", false, true, "b,c,d"}},
			"a,b,c,d", 3, []int{0, 1, 2}},
		{"a load still open is not held", []heldPage{{"inv-1", "", false, false, "a,b"}, {"inv-1", "", true, false, "a"}}, "a,b", 1, []int{0}},
		{"a snapshot inside an open load", []heldPage{{"inv-1", "", true, false, "a"}, {"inv-1", "a", false, true, "b"}, {"inv-1", "a", false, false, "b,c"}},
			"a,b,c", 2, []int{0, 2, 1}},
		{"another actor's reload is not its own", []heldPage{{"inv-1", "", false, false, "a,b"}, {"inv-2", "", false, false, "a"}}, "a,b", 1, []int{0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var ops []history.Op
			ids := map[int][]string{}
			for i, p := range tc.pages {
				var page eventlog.Page
				for _, id := range strings.Split(p.ids, ",") {
					if id != "" {
						page.Events = append(page.Events, eventlog.Event{ID: id})
						ids[i] = append(ids[i], id)
					}
				}
				page.More = p.more
				ops = append(ops, history.Op{Kind: history.OpList, Actor: p.actor, After: eventlog.Cursor{ID: p.after}, Snapshot: p.snapshot, Read: history.Summarize(page)})
			}
			h := HeldBy(ops, "inv-1", func(i int) []string { return ids[i] })
			if got := strings.Join(h.Keys, ","); got != tc.keys || h.Loads != tc.loads || !reflect.DeepEqual(h.Pages, tc.ops) {
				t.Errorf("held %q in %d loads of pages %v; want %q in %d of %v", got, h.Loads, h.Pages, tc.keys, tc.loads, tc.ops)
			}
		})
	}
}
