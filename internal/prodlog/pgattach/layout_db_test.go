package pgattach_test

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/stormctl/stormctl/forensics"
	"github.com/stormctl/stormctl/internal/eventlog"
	"github.com/stormctl/stormctl/internal/prodlog/pgattach"
	"github.com/stormctl/stormctl/worlds/postgres/pgtest"
)

// TestAttachLayouts attaches to tables of every layout, each loaded from
// testdata/layouts (rows commit in line order), and checks the layout found,
// its evidence and line, and each run's findings: a slot table with a hole,
// a noop, a seal race, an unknown type and an inversion; a ulid table and a
// seq table found as before; a mixed table read as ulid with its slot runs
// named, and one of its slot runs read alone found as slot; an empty one.
func TestAttachLayouts(t *testing.T) {
	url := pgtest.Cluster(t)
	conn := pgtest.Connect(t, url)
	type run struct {
		events, inverted, displaced, gaps, dups int
		slots                                   *forensics.SlotFindings // nil: not a slot table
	}
	tests := []struct {
		fixture string
		run     string // --run, if set
		scheme  eventlog.Scheme
		layout  pgattach.Layout // Why aside
		why     []string        // what Why must say
		runs    map[string]run
	}{
		{fixture: "slot", scheme: eventlog.SchemeSlot,
			layout: pgattach.Layout{Rows: 10, SlotIDs: 10, Noops: 2},
			why:    []string{"slot ids (spec 6/7)", "10 of 10 ids are evnt_ positions", "2 noop rows"},
			runs: map[string]run{
				"wrun_a": {events: 7, inverted: 1, displaced: 2, gaps: 1, dups: 1,
					slots: &forensics.SlotFindings{FinalHoles: 1, Seals: 2, SealRaces: 1}},
				"wrun_b": {events: 3, slots: &forensics.SlotFindings{}},
			}},
		{fixture: "slot", run: "wrun_b", scheme: eventlog.SchemeSlot,
			layout: pgattach.Layout{Rows: 3, SlotIDs: 3},
			why:    []string{"3 of 3 ids are evnt_ positions", "no noop rows"},
			runs:   map[string]run{"wrun_b": {events: 3, slots: &forensics.SlotFindings{}}}},
		{fixture: "ulid", scheme: eventlog.SchemeULID,
			layout: pgattach.Layout{Rows: 4, ULIDs: 4},
			why:    []string{"ulid ids", "none of the ids is an evnt_ position", "4 of 4 are ULIDs"},
			runs: map[string]run{
				"wrun_a": {events: 3, inverted: 1, displaced: 2},
				"wrun_b": {events: 1},
			}},
		{fixture: "seq", scheme: eventlog.SchemeSeq,
			layout: pgattach.Layout{Rows: 5, ULIDs: 5},
			why:    []string{"seq column", "5 rows"},
			runs: map[string]run{
				"wrun_a": {events: 4, inverted: 1, displaced: 2, gaps: 1},
				"wrun_b": {events: 1},
			}},
		{fixture: "mixed", scheme: eventlog.SchemeULID,
			layout: pgattach.Layout{Rows: 6, SlotIDs: 3, ULIDs: 3, Noops: 1, Mixed: true,
				SlotRuns: 1, MixedRuns: 1, SlotRunIDs: []string{"wrun_new"}, MixedRunIDs: []string{"wrun_both"}},
			why: []string{"mixed ids, read as ulid", "3 of 6 ids are evnt_ positions", "3 are not", "1 run holds only slot ids (wrun_new)",
				"1 run mixes both kinds (wrun_both)", "no slot findings"},
			runs: map[string]run{
				// By id, evnt_… sorts before wevt_…: its later commit is an inversion.
				"wrun_both": {events: 2, inverted: 1, displaced: 2},
				"wrun_new":  {events: 2},
				"wrun_old":  {events: 2},
			}},
		{fixture: "mixed", run: "wrun_new", scheme: eventlog.SchemeSlot,
			layout: pgattach.Layout{Rows: 2, SlotIDs: 2, Noops: 1},
			why:    []string{"slot ids", "2 of 2 ids are evnt_ positions", "1 noop row"},
			runs:   map[string]run{"wrun_new": {events: 2, slots: &forensics.SlotFindings{Seals: 1}}}},
		{fixture: "empty", scheme: eventlog.SchemeULID, why: []string{"no rows read"}, runs: map[string]run{}},
	}
	loaded := map[string]bool{}
	for _, tt := range tests {
		t.Run(tt.fixture+"/"+tt.run, func(t *testing.T) {
			schema := "layout_" + tt.fixture
			if !loaded[tt.fixture] {
				b, err := os.ReadFile(filepath.Join("testdata", "layouts", tt.fixture+".txt"))
				if err != nil {
					t.Fatal(err)
				}
				pgtest.LoadEvents(t, conn, schema, string(b))
				loaded[tt.fixture] = true
			}
			o := pgattach.Options{URL: url, Schema: schema, RunID: tt.run}
			rep, err := pgattach.Forensics(t.Context(), o, 2)
			if err != nil {
				t.Fatal(err)
			}
			info := rep.Info
			if info.Scheme != tt.scheme || info.HasSeq != (tt.scheme == eventlog.SchemeSeq) {
				t.Errorf("scheme %q (has seq %v), want %q", info.Scheme, info.HasSeq, tt.scheme)
			}
			for _, w := range tt.why {
				if !strings.Contains(info.Layout.Why, w) {
					t.Errorf("why %q: want it to say %q", info.Layout.Why, w)
				}
			}
			if strings.ContainsAny(info.Layout.Why, "\r\n") {
				t.Errorf("why %q: want one line", info.Layout.Why)
			}
			got := info.Layout
			got.Why = ""
			if !reflect.DeepEqual(got, tt.layout) {
				t.Errorf("layout %+v, want %+v", got, tt.layout)
			}
			if len(rep.Runs) != len(tt.runs) {
				t.Errorf("%d runs, want %d", len(rep.Runs), len(tt.runs))
			}
			for _, r := range rep.Runs {
				want, ok := tt.runs[r.RunID]
				if !ok {
					t.Errorf("unexpected run %s", r.RunID)
					continue
				}
				o := r.Order
				got := run{events: o.Events, inverted: o.InvertedPairs, displaced: o.Displaced, gaps: r.Gaps, dups: r.Duplicates, slots: r.Slots}
				if !reflect.DeepEqual(got, want) || o.WithoutCommitTS != 0 {
					t.Errorf("run %s = %+v (slots %+v, %d without commit ts), want %+v (slots %+v)",
						r.RunID, got, got.slots, o.WithoutCommitTS, want, want.slots)
				}
			}

			// Read finds the same layout and hands each run the scheme.
			rinfo, err := pgattach.Read(t.Context(), o, func(r pgattach.Run) error {
				if r.Scheme != tt.scheme {
					t.Errorf("run %s read as %q, want %q", r.ID, r.Scheme, tt.scheme)
				}
				for _, e := range r.Events {
					pos, isSlot := eventlog.SlotPosition(e.ID)
					switch {
					case tt.scheme == eventlog.SchemeSlot && e.Seq != pos:
						t.Errorf("run %s event %s: seq %d, want its position %d", r.ID, e.ID, e.Seq, pos)
					case tt.scheme == eventlog.SchemeULID && e.Seq != 0:
						t.Errorf("run %s event %s: seq %d in a ulid table", r.ID, e.ID, e.Seq)
					case isSlot && !e.MintedAt.IsZero():
						t.Errorf("run %s event %s: a slot id minted at %v", r.ID, e.ID, e.MintedAt)
					}
				}
				return nil
			})
			if err != nil || !reflect.DeepEqual(rinfo, info) {
				t.Errorf("Read: %+v, %v; want %+v as Forensics found", rinfo, err, info)
			}
		})
	}
}
