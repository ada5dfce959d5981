package cli_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stormctl/stormctl/internal/base/filetest"
	"github.com/stormctl/stormctl/worlds/postgres/pgtest"
)

// TestForensicsAttachLayouts attaches to a table of each layout (pgattach's
// fixtures: a slot table with a hole, two noops and a seal race; a mixed
// one; a ulid and a seq one) in every format and checks the line naming the
// layout and why, and the slot columns: present for a slot table alone.
func TestForensicsAttachLayouts(t *testing.T) {
	url := pgtest.Cluster(t)
	conn := pgtest.Connect(t, url)
	tests := []struct {
		fixture, scheme, line string
		slot                  bool
	}{
		{"slot", "slot", "layout: slot ids (spec 6/7) — 10 of 10 ids are evnt_ positions; 2 noop rows", true},
		{"mixed", "ulid", "layout: mixed ids, read as ulid — 3 of 6 ids are evnt_ positions, 3 are not; 1 run holds only slot ids (wrun_new), 1 run mixes both kinds (wrun_both); 1 noop row; no slot findings", false},
		{"ulid", "ulid", "layout: ulid ids — no seq column and none of the ids is an evnt_ position; 4 of 4 are ULIDs", false},
		{"seq", "seq", "layout: seq column — seq orders each run (id order in a run where a row has none); 5 rows", false},
	}
	for _, tt := range tests {
		b, err := os.ReadFile(filepath.Join(filetest.Repo("internal", "prodlog", "pgattach", "testdata"), "layouts", tt.fixture+".txt"))
		if err != nil {
			t.Fatal(err)
		}
		schema := "cli_" + tt.fixture
		pgtest.LoadEvents(t, conn, schema, string(b))
		for _, format := range []string{"table", "markdown", "json"} {
			t.Run(tt.fixture+"/"+format, func(t *testing.T) {
				code, stdout, stderr := run(t.Context(), "forensics", "--pg-url", url, "--schema", schema, "--format", format)
				if code != 0 {
					t.Fatalf("exit %d: %s", code, stderr)
				}
				if format == "json" {
					checkAttachJSON(t, stdout, tt.scheme, strings.TrimPrefix(tt.line, "layout: "), tt.slot)
					return
				}
				first, rest, _ := strings.Cut(stdout, "\n")
				if first != tt.line {
					t.Errorf("first line\n\t%s\nwant\n\t%s", first, tt.line)
				}
				if got := strings.Contains(rest, "seal races") && strings.Contains(rest, "holes"); got != tt.slot {
					t.Errorf("slot columns shown: %v, want %v:\n%s", got, tt.slot, stdout)
				}
			})
		}
	}
}

// checkAttachJSON checks the layout and slot counts of a JSON attach report
// of one of TestForensicsAttachLayouts's tables.
func checkAttachJSON(t *testing.T, stdout, scheme, why string, slot bool) {
	t.Helper()
	type slotCounts struct {
		Holes     int `json:"holes"`
		Noops     int `json:"noops"`
		SealRaces int `json:"seal_races"`
	}
	var rep struct {
		Source struct {
			Scheme string `json:"scheme"`
			Layout struct {
				Why string `json:"why"`
			} `json:"layout"`
		} `json:"source"`
		Totals struct {
			Slot *slotCounts `json:"slot"`
		} `json:"totals"`
		Runs []struct {
			RunID string      `json:"run_id"`
			Slot  *slotCounts `json:"slot"`
		} `json:"runs"`
	}
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
		t.Fatalf("%v\n%s", err, stdout)
	}
	if rep.Source.Scheme != scheme || rep.Source.Layout.Why != why {
		t.Errorf("source scheme %q, why %q; want %q, %q", rep.Source.Scheme, rep.Source.Layout.Why, scheme, why)
	}
	if !slot {
		if rep.Totals.Slot != nil || len(rep.Runs) == 0 || rep.Runs[0].Slot != nil {
			t.Errorf("slot counts in a %s table:\n%s", scheme, stdout)
		}
		return
	}
	if want := (slotCounts{Holes: 1, Noops: 2, SealRaces: 1}); rep.Totals.Slot == nil || *rep.Totals.Slot != want {
		t.Errorf("totals' slot counts %+v, want %+v", rep.Totals.Slot, want)
	}
	if len(rep.Runs) != 2 || rep.Runs[0].RunID != "wrun_a" || rep.Runs[0].Slot == nil || *rep.Runs[0].Slot != *rep.Totals.Slot ||
		rep.Runs[1].Slot == nil || *rep.Runs[1].Slot != (slotCounts{}) {
		t.Errorf("runs' slot counts: want wrun_a with all of them, wrun_b with none:\n%s", stdout)
	}
}
