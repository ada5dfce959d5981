package pgattach

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
	"unicode"

	"github.com/oklog/ulid/v2"

	"github.com/stormctl/stormctl/internal/eventlog"
)

// TestDecideLayout checks the rule and the line on tables given as runs of
// ids (@N: the slot id of N; a trailing * makes the row a noop).
func TestDecideLayout(t *testing.T) {
	tests := []struct {
		name   string
		seq    bool
		runs   map[string]string
		scheme eventlog.Scheme
		mixed  []string // SlotRunIDs, then MixedRunIDs, joined by "|"
		why    string
	}{
		{name: "empty", scheme: eventlog.SchemeULID, why: "ulid ids — no seq column; no rows read"},
		{name: "slot", runs: map[string]string{"r1": "@1 @2 @3*", "r2": "@1"}, scheme: eventlog.SchemeSlot,
			why: "slot ids (spec 6/7) — 4 of 4 ids are evnt_ positions; 1 noop row"},
		{name: "slot without seals", runs: map[string]string{"r1": "@1 @3"}, scheme: eventlog.SchemeSlot,
			why: "slot ids (spec 6/7) — 2 of 2 ids are evnt_ positions; no noop rows"},
		{name: "ulid", runs: map[string]string{"r1": "wevt_01J00000000000000000000001 01J00000000000000000000002"}, scheme: eventlog.SchemeULID,
			why: "ulid ids — no seq column and none of the ids is an evnt_ position; 2 of 2 are ULIDs"},
		{name: "ulid and others", runs: map[string]string{"r1": "wevt_01J00000000000000000000001 e1 e2 evnt_1"}, scheme: eventlog.SchemeULID,
			why: "ulid ids — no seq column and none of the ids is an evnt_ position; 1 of 4 are ULIDs, 3 neither (ordered by their bytes)"},
		{name: "a seq column wins over slot ids", seq: true, runs: map[string]string{"r1": "@1 @2*"}, scheme: eventlog.SchemeSeq,
			why: "seq column — seq orders each run (id order in a run where a row has none); 2 rows; 1 noop row"},
		{name: "mixed across runs", runs: map[string]string{"old": "wevt_01J00000000000000000000001", "new": "@1 @2"},
			scheme: eventlog.SchemeULID, mixed: []string{"new", "|"},
			why: "mixed ids, read as ulid — 2 of 3 ids are evnt_ positions, 1 is not; 1 run holds only slot ids (new); no slot findings"},
		{name: "mixed in a run", runs: map[string]string{"both": "wevt_01J00000000000000000000001 @2*"},
			scheme: eventlog.SchemeULID, mixed: []string{"|", "both"},
			why: "mixed ids, read as ulid — 1 of 2 ids are evnt_ positions, 1 is not; 1 run mixes both kinds (both); 1 noop row; no slot findings"},
		{name: "many runs named in order, then an ellipsis", runs: map[string]string{
			"s4": "@1", "s2": "@1", "s3": "@1", "s1": "@1", "m2": "x @1", "m1": "@1 x"},
			scheme: eventlog.SchemeULID, mixed: []string{"s1", "s2", "s3", "|", "m1", "m2"},
			why: "mixed ids, read as ulid — 6 of 8 ids are evnt_ positions, 2 are not; 4 runs hold only slot ids (s1, s2, s3, …), 2 runs mix both kinds (m1, m2); no slot findings"},
		{name: "a run id that could break the line is quoted", runs: map[string]string{"a\nb": "@1", "c": "x"},
			scheme: eventlog.SchemeULID, mixed: []string{"a\nb", "|"},
			why: `mixed ids, read as ulid — 1 of 2 ids are evnt_ positions, 1 is not; 1 run holds only slot ids ("a\nb"); no slot findings`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newCollected(tt.seq)
			for run, ids := range tt.runs {
				for _, id := range strings.Fields(ids) {
					typ := "step_created"
					if s, ok := strings.CutSuffix(id, "*"); ok {
						id, typ = s, string(eventlog.Noop)
					}
					if n, ok := strings.CutPrefix(id, "@"); ok {
						var pos int64
						fmt.Sscan(n, &pos)
						id = eventlog.SlotID(pos)
					}
					if err := c.add([]byte(run), []byte(id), []byte(typ), 0, noCommit, 0); err != nil {
						t.Fatal(err)
					}
				}
			}
			scheme, l := c.layout()
			if err := c.each(func(Run) error { return nil }); err != nil {
				t.Fatal(err)
			}
			l.ULIDs = c.minted
			l.explain(scheme)
			if scheme != tt.scheme || l.Why != tt.why {
				t.Errorf("scheme %q, why\n\t%s\nwant %q,\n\t%s", scheme, l.Why, tt.scheme, tt.why)
			}
			var named []string
			if l.Mixed {
				named = append(append(append(named, l.SlotRunIDs...), "|"), l.MixedRunIDs...)
			}
			if !reflect.DeepEqual(named, tt.mixed) {
				t.Errorf("named runs %q, want %q", named, tt.mixed)
			}
		})
	}
}

// FuzzLayout feeds ids from a foreign database, any bytes, through what
// reading does with them (one line a row: `run<TAB>id`, or just an id of
// one of three runs; every fourth a noop) and checks the rule: slot when
// there is no seq column and every id is one eventlog.SlotPosition reads,
// seq with a seq column, else ulid, mixed when some ids are slot ids; the
// counts; each event's seq and mint time under the scheme; the slot
// findings against forensics.AnalyzeSlots; and a Why of one printable line.
func FuzzLayout(f *testing.F) {
	f.Add("evnt_00000000000000000000000001\nevnt_00000000000000000000000002\nevnt_00000000000000000000000002", false)
	f.Add("wevt_01J00000000000000000000001\nwevt_01J00000000000000000000002", false)
	f.Add("a\tevnt_00000000000000000000000001\nb\twevt_01J00000000000000000000001\nb\tevnt_00000000000000000000000003", false)
	f.Add("evnt_00000000000000000000000001\nevnt_99999999999999999999999999\nevnt_0000000000000000000000000x", true)
	f.Add("r\x00\x1b[2J\tevnt_00000000000000000000000007\nq\tzz", false)
	f.Add("evnt_-0000000000000000000000001\nevnt_+0000000000000000000000001\nEVNT_00000000000000000000000001", false)
	f.Fuzz(func(t *testing.T, input string, seq bool) {
		c := newCollected(seq)
		var rows, slots, ulids int
		for i, line := range strings.Split(input, "\n") {
			run, id, ok := strings.Cut(line, "\t")
			if !ok {
				run, id = fmt.Sprint("r", i%3), line
			}
			if len(id) >= maxID {
				t.Skip("an id too long to read")
			}
			typ := "step_created"
			if i%4 == 3 {
				typ = string(eventlog.Noop)
			}
			pos, isSlot := slotPosition([]byte(id))
			wantPos, wantSlot := eventlog.SlotPosition(id)
			if pos != wantPos || isSlot != wantSlot {
				t.Fatalf("slotPosition(%q) = %d, %v; SlotPosition says %d, %v", id, pos, isSlot, wantPos, wantSlot)
			}
			if isSlot {
				slots++
			} else if _, err := ulid.ParseStrict(id[strings.LastIndexByte(id, '_')+1:]); err == nil {
				ulids++
			}
			if err := c.add([]byte(run), []byte(id), []byte(typ), 0, int64(i), uint32(i)); err != nil {
				t.Fatal(err)
			}
			rows++
		}
		scheme, l := c.layout()
		want := eventlog.SchemeULID
		switch {
		case seq:
			want = eventlog.SchemeSeq
		case slots == rows:
			want = eventlog.SchemeSlot
		}
		if scheme != want || l.Rows != rows || l.SlotIDs != slots || l.Mixed != (!seq && slots > 0 && slots < rows) {
			t.Fatalf("scheme %q, layout %+v; want %q, %d rows, %d slot ids", scheme, l, want, rows, slots)
		}
		err := c.each(func(r Run) error {
			for _, e := range r.Events {
				pos, isSlot := eventlog.SlotPosition(e.ID)
				switch {
				case scheme == eventlog.SchemeSlot && e.Seq != pos, scheme == eventlog.SchemeULID && e.Seq != 0:
					t.Fatalf("%s table, event %q: seq %d", scheme, e.ID, e.Seq)
				case isSlot && !e.MintedAt.IsZero():
					t.Fatalf("slot id %q minted at %v", e.ID, e.MintedAt)
				}
			}
			fs := Examine(r)
			if scheme != eventlog.SchemeSlot {
				if fs.Slots != nil {
					t.Fatalf("%s table: slot findings %+v", scheme, fs.Slots)
				}
				return nil
			}
			if fs.Slots == nil {
				t.Fatalf("slot table, run %q: no slot findings", r.ID)
			}
			var top int64
			for _, e := range r.Events {
				top = max(top, e.Seq)
			}
			if top < 1<<16 { // AnalyzeSlots walks every position
				matchAnalyzeSlots(t, r.Events)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if c.minted != ulids {
			t.Fatalf("%d ids with a mint time, %d ULIDs", c.minted, ulids)
		}
		l.ULIDs = c.minted
		l.explain(scheme)
		if i := strings.IndexFunc(l.Why, func(r rune) bool { return !unicode.IsGraphic(r) }); i >= 0 {
			t.Fatalf("why %q: a character that breaks the line at %d", l.Why, i)
		}
	})
}
