package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stormctl/stormctl/internal/engines/model"
	"github.com/stormctl/stormctl/internal/storm/stormdir"
	"github.com/stormctl/stormctl/internal/tools/certify"
	"github.com/stormctl/stormctl/reports"
)

// TestStormRanBy: the card's engine is what the storm's storm.json
// records: the model (with why the real runtime did not run it), the
// devkit engine with the runtime of its cells (none recorded: none),
// UNKNOWN, saying why, when storm.json is missing or unreadable, and none
// when no storm ran, whatever storm.json says (it is written before the
// worlds and engines open: a devkit engine that failed to open ran
// nothing).
func TestStormRanBy(t *testing.T) {
	t.Parallel()
	rt := stormdir.Runtime{Engine: "devkit", Versions: map[string]string{"@workflow/core": "4.8.9"}, Queue: "world-local"}
	for _, tc := range []struct {
		name    string
		meta    *stormdir.Meta // nil: no storm.json
		raw     string         // else storm.json's text, when set
		eng     string
		note    string // a word the note holds ("": none)
		runtime bool
		notRun  bool // the storm returned no summary: nothing ran
	}{
		{"no storm.json", nil, "", certify.EngineUnknown, "could not be read", false, false},
		{"storm.json cut short", nil, `{"schema":`, certify.EngineUnknown, "could not be read", false, false},
		{"the model", &stormdir.Meta{Schema: reports.SchemaVersion}, "", "model", "too new", false, false},
		{"the model, named", &stormdir.Meta{Schema: reports.SchemaVersion, Config: stormdir.Config{Engine: "model"}}, "", "model", "too new", false, false},
		{"the devkit engine", &stormdir.Meta{Schema: reports.SchemaVersion, Config: stormdir.Config{Engine: "devkit"}, Runtimes: []stormdir.Runtime{rt}}, "", "devkit", "", true, false},
		{"the devkit engine, no runtime recorded", &stormdir.Meta{Schema: reports.SchemaVersion, Config: stormdir.Config{Engine: "devkit"}}, "", "devkit", "", false, false},
		{"storm.json written, nothing ran", &stormdir.Meta{Schema: reports.SchemaVersion, Config: stormdir.Config{Engine: "devkit"}}, "", "", "", false, true},
		{"no storm.json, nothing ran", nil, "", "", "", false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			switch {
			case tc.meta != nil:
				if err := stormdir.WriteJSON(filepath.Join(dir, stormdir.FileStorm), tc.meta); err != nil {
					t.Fatal(err)
				}
			case tc.raw != "":
				if err := os.WriteFile(filepath.Join(dir, stormdir.FileStorm), []byte(tc.raw), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			sum := reports.NewSummary(nil)
			if tc.notRun {
				sum = nil
			}
			eng, note, got := stormRanBy(dir, sum, "contract too new", model.Name)
			if eng != tc.eng || (tc.note == "") != (note == "") || !strings.Contains(note, tc.note) || (got != nil) != tc.runtime {
				t.Errorf("stormRanBy = %q, %q, %+v; want %q, a note holding %q, runtime %v", eng, note, got, tc.eng, tc.note, tc.runtime)
			}
			if got != nil && got.Versions["@workflow/core"] != "4.8.9" {
				t.Errorf("runtime %+v, want storm.json's", got)
			}
		})
	}
}
