package storm

import (
	"path/filepath"
	"slices"
	"testing"

	"github.com/stormctl/stormctl/history"
	"github.com/stormctl/stormctl/reports"
	"github.com/stormctl/stormctl/stormdir"
)

// TestHistorySink: a run's operations are kept for it from before its
// engine said its id (an engine that mints ids records first) to its end,
// under the id Start returned; later ones (late writers) and those of runs
// that never began go to history.jsonl.
func TestHistorySink(t *testing.T) {
	dir := t.TempDir()
	out, err := stormdir.OpenWriter(dir, &stormdir.Meta{Schema: reports.SchemaVersion})
	if err != nil {
		t.Fatal(err)
	}
	h := newHistorySink(out)
	op := func(run, kind string) history.Op { return history.Op{RunID: run, Kind: kind} }
	kinds := func(ops []history.Op) []string {
		var ks []string
		for _, o := range ops {
			ks = append(ks, o.RunID+":"+o.Kind)
		}
		return ks
	}

	h.begin("minted")                            // the runner's id
	h.Record(op("engines", history.OpCreateRun)) // recorded inside Start, under the engine's id
	h.Record(op("engines", history.OpAppend))
	h.rename("minted", "engines") // Start returned it
	h.Record(op("engines", history.OpList))
	h.Record(op("never", history.OpList)) // a run that never began
	got := h.end("engines")
	if want := []string{"engines:create_run", "engines:append", "engines:list"}; !slices.Equal(kinds(got), want) {
		t.Errorf("the run's operations: %v, want %v", kinds(got), want)
	}
	h.Record(op("engines", history.OpAppend)) // a late writer
	if err := h.flush(); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
	d := stormdir.Dir{Path: dir, Meta: &stormdir.Meta{Schema: reports.SchemaVersion}}
	written, err := d.History()
	if err != nil {
		t.Fatal(err)
	}
	if len(written["engines"]) != 1 || len(written["never"]) != 1 || len(written) != 2 {
		t.Errorf("%s holds %v, want the late append and the run that never began", filepath.Base(stormdir.FileHistory), written)
	}
}
