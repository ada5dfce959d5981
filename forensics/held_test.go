package forensics

import (
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/stormctl/stormctl/internal/eventlog"
	"github.com/stormctl/stormctl/internal/history"
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
			events := func(i int) []string { return ids[i] }
			h := HeldBy(ops, "inv-1", events)
			if got := strings.Join(h.Keys, ","); got != tc.keys || h.Loads != tc.loads || !reflect.DeepEqual(h.Pages, tc.ops) {
				t.Errorf("held %q in %d loads of pages %v; want %q in %d of %v", got, h.Loads, h.Pages, tc.keys, tc.loads, tc.ops)
			}
			checkHolding(t, ops, events)
		})
	}
}

// checkHolding: a Holding given ops one at a time holds, for every actor
// and after every op, what HeldBy gives for the ops so far; and what it
// hands out is the caller's (taking into it leaves the Holding as it was).
func checkHolding[K comparable](t *testing.T, ops []history.Op, events func(int) []K) {
	t.Helper()
	actors := map[string]bool{"nobody": true}
	for _, op := range ops {
		actors[op.Actor] = true
	}
	h := NewHolding(events)
	for n := 0; n <= len(ops); n++ {
		h.Add(ops[:n])
		for a := range actors {
			want, got := HeldBy(ops[:n], a, events), h.Held(a)
			if !sameHeld(got, want) {
				t.Fatalf("after %d ops, %s: Holding holds %+v, HeldBy %+v", n, a, got, want)
			}
			if n < len(ops) { // take the next op's load, if any, into the copy
				for _, ld := range Loads(ops[:n+1]) {
					if ld.Actor == a && slices.Contains(ld.Pages, n) {
						got.Take(ops, ld, events)
					}
				}
				if again := h.Held(a); !sameHeld(again, want) {
					t.Fatalf("after %d ops, %s: taking into what Held returned changed the Holding to %+v", n, a, again)
				}
			}
		}
	}
}

func sameHeld[K comparable](a, b Held[K]) bool {
	return a.Loads == b.Loads && slices.Equal(a.Pages, b.Pages) && slices.Equal(a.Keys, b.Keys)
}

// overlapping names a few events per page, overlapping other pages', for
// histories whose pages name none (op indexes stand for them).
func overlapping(i int) []int { return []int{i % 5, (i * 3) % 4, i} }

// TestHoldingFixtures: checkHolding over testdata/analyze's histories.
func TestHoldingFixtures(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob(filepath.Join("testdata", "analyze", "*.txt"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no fixtures in testdata/analyze: %v", err)
	}
	for _, file := range files {
		raw, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		fx, err := parseFixture(string(raw))
		if err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		t.Run(filepath.Base(file), func(t *testing.T) { checkHolding(t, fx.in.Ops, overlapping) })
	}
}

// FuzzHolding: checkHolding over fuzzInput's histories, snap marking
// which of their lists are snapshots (bit i%64 for op i).
func FuzzHolding(f *testing.F) {
	f.Add(byte(0), uint64(0), []byte{4, 1, 0, 1, 2, 0, 20, 3, 0, 2, 4, 0, 3, 0, 0, 10, 0, 2, 0, 2, 0, 1, 1, 0, 30, 1, 2, 3, 1, 1})
	f.Add(byte(1), uint64(0b1010), []byte{3, 1, 1, 1, 2, 2, 2, 2, 2, 3, 1, 0, 5, 3, 2, 0, 1, 0, 0, 7, 0, 0, 1, 0, 2, 0, 0, 1, 1, 0})
	f.Add(byte(2), uint64(0xf0f0), []byte{5, 9, 0, 0, 8, 3, 5, 7, 1, 9, 6, 5, 2, 1, 1, 0, 1, 200, 2, 3, 0, 1, 2, 1})
	f.Fuzz(func(t *testing.T, scheme byte, snap uint64, data []byte) {
		ops := fuzzInput(scheme, data).Ops
		for i := range ops {
			ops[i].Snapshot = snap>>(i%64)&1 == 1
		}
		checkHolding(t, ops, overlapping)
	})
}

// TestHoldingSnapshotInsideAnOpenLoad: a snapshot taken while a load
// reads on is held at once, and after that load once it ends (as Loads
// orders them: by when each began).
func TestHoldingSnapshotInsideAnOpenLoad(t *testing.T) {
	t.Parallel()
	list := func(after string, more, snapshot bool, ids ...string) history.Op {
		var p eventlog.Page
		for _, id := range ids {
			p.Events = append(p.Events, eventlog.Event{ID: id})
		}
		p.More = more
		return history.Op{Kind: history.OpList, Actor: "inv-1", After: eventlog.Cursor{ID: after}, Snapshot: snapshot, Read: history.Summarize(p)}
	}
	ops := []history.Op{list("", false, false, "a"), list("", true, false, "a", "b"), list("b", false, true, "c"), list("b", false, false, "d")}
	pages := [][]string{{"a"}, {"a", "b"}, {"c"}, {"d"}}
	events := func(i int) []string { return pages[i] }
	h := NewHolding(events)
	for n, want := range []string{"", "a", "a", "a,c", "a,b,d,c"} {
		h.Add(ops[:n])
		if got := strings.Join(h.Held("inv-1").Keys, ","); got != want {
			t.Errorf("after %d ops inv-1 holds %q, want %q", n, got, want)
		}
	}
	checkHolding(t, ops, events)
}
