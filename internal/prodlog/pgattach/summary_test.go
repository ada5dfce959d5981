package pgattach_test

import (
	"bytes"
	"encoding/json"
	"math"
	"testing"

	"github.com/stormctl/stormctl/forensics"
	"github.com/stormctl/stormctl/internal/eventlog"
	"github.com/stormctl/stormctl/internal/prodlog/pgattach"
)

// TestSummarize: the attach report counts each run and totals them; a
// slot table's slot counts add up, saturating; with nothing found, its
// JSON has empty lists and maps, never null, for jq.
func TestSummarize(t *testing.T) {
	t.Parallel()
	empty := pgattach.Summarize(pgattach.Report{})
	var b bytes.Buffer
	if err := empty.JSON(&b); err != nil {
		t.Fatal(err)
	}
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(b.Bytes(), &doc); err != nil {
		t.Fatalf("JSON %s: %v", b.String(), err)
	}
	for key, want := range map[string]string{"runs": "[]", "pairs": "[]", "windows": "{}"} {
		if got := string(bytes.TrimSpace(doc[key])); got != want {
			t.Errorf("%s = %s, want %s", key, got, want)
		}
	}

	found := pgattach.Report{Info: pgattach.Info{Scheme: eventlog.SchemeSlot}, Runs: []pgattach.RunFindings{
		{RunID: "a", Findings: pgattach.Findings{Order: forensics.CommitOrder{Events: 3}, Gaps: 1, Duplicates: 2,
			Slots: &forensics.SlotFindings{FinalHoles: math.MaxInt, Seals: 1, SealRaces: 1}}},
		{RunID: "b", Findings: pgattach.Findings{Order: forensics.CommitOrder{Events: 2}, Gaps: math.MaxInt,
			Slots: &forensics.SlotFindings{FinalHoles: 5, Seals: 2}}},
	}, Total: forensics.CommitOrder{Events: 5}}
	s := pgattach.Summarize(found)
	if len(s.Runs) != 2 || s.Runs[0].RunID != "a" || s.Runs[1].Slot == nil || s.Runs[1].Slot.Holes != 5 {
		t.Errorf("runs %+v", s.Runs)
	}
	tt := s.Totals
	if tt.Runs != 2 || tt.Events != 5 || tt.Gaps != math.MaxInt || tt.Duplicates != 2 ||
		tt.Slot == nil || *tt.Slot != (pgattach.SlotCounts{Holes: math.MaxInt, Noops: 3, SealRaces: 1}) {
		t.Errorf("totals %+v (slot %+v)", tt, tt.Slot)
	}
}
