package storm

import (
	"path/filepath"
	"slices"
	"testing"

	"github.com/stormctl/stormctl/internal/history"
	"github.com/stormctl/stormctl/internal/storm/stormdir"
	"github.com/stormctl/stormctl/reports"
)

// TestHistorySink: a run's operations are kept for it from before its
// engine said its id (an engine that mints ids records first) to its end,
// under the id Start returned; later ones (late writers) and those of runs
// that never began go to history.jsonl, a late writer's after the run's
// own even when it wrote while the run's were being analysed (history.jsonl
// keeps a delivery's operations in the order it made them: replay serves
// them so); a discarded run's are dropped, its late writers' kept.
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
	h.Record(op("engines", history.OpAppendFenced)) // a late writer, while the run is analysed
	late, err := h.write("engines")
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"engines:" + history.OpAppendFenced}; !slices.Equal(kinds(late), want) {
		t.Errorf("the operations after the run's end: %v, want %v", kinds(late), want)
	}
	h.Record(op("engines", history.OpAppend)) // a late writer, after the run's record
	h.begin("dropped")
	h.Record(op("dropped", history.OpList))
	h.discard("dropped") // interrupted
	h.Record(op("dropped", history.OpAppend))
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
	want := map[string][]string{
		"engines": {"engines:create_run", "engines:append", "engines:list", "engines:" + history.OpAppendFenced, "engines:append"},
		"never":   {"never:list"},
		"dropped": {"dropped:append"},
	}
	for run, w := range want {
		if g := kinds(written[run]); !slices.Equal(g, w) {
			t.Errorf("%s holds %v for run %s, want %v", filepath.Base(stormdir.FileHistory), g, run, w)
		}
	}
	if len(written) != len(want) {
		t.Errorf("%s holds runs %v, want %v", filepath.Base(stormdir.FileHistory), written, want)
	}
}
