package evidence_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/stormctl/stormctl/internal/base/filetest"
	"github.com/stormctl/stormctl/internal/engines/builtinengines"
	"github.com/stormctl/stormctl/internal/tools/evidence"
)

// storedStorm is a storm recorded by an earlier build: local world, a
// corrupted step-storm run and two completed control runs.
var storedStorm = filetest.Repo("internal", "storm", "stormdir", "testdata", "schema1")

// TestLoad: a stored run comes with its record, final log, history, cell
// and engine, and a replay input whose every page is rebuilt exactly; a
// run the storm does not hold, or a directory that is no storm, is an
// error naming the file.
func TestLoad(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		dir, run string
		err      string
	}{
		{storedStorm, "wrun_01M8YS0VCHWFHAAWY6QB8S4FS3", ""},
		{storedStorm, "wrun_01M8YS0VCHZZ1VBR48C3WGD3N8", ""},
		{storedStorm, "wrun_nope", "run wrun_nope is not in " + filepath.Join(storedStorm, "runs.jsonl") + " (3 runs;"},
		{t.TempDir(), "wrun_nope", "not a storm directory"},
	} {
		r, err := evidence.Load(tc.dir, tc.run)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("Load(%s, %s) = %v, want %q", tc.dir, tc.run, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("Load(%s): %v", tc.run, err)
		}
		if r.Record.RunID != tc.run || len(r.Final) == 0 || len(r.Ops) == 0 || !builtinengines.Traits(r.Engine).Model || r.Cell.Scenario.Program == nil {
			t.Errorf("Load(%s) = %s, %d events, %d ops, engine %q", tc.run, r.Record.RunID, len(r.Final), len(r.Ops), r.Engine)
		}
		in := r.ReplayInput()
		for i, op := range in.Ops {
			if op.Kind != "list" || op.Read == nil {
				continue
			}
			if evs, ok := in.Reads(i); !ok || len(evs) != op.Read.N {
				t.Errorf("%s: page %d rebuilt with %d events (exact %v), recorded %d", tc.run, i, len(evs), ok, op.Read.N)
			}
		}
	}
}
