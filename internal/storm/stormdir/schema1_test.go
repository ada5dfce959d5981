package stormdir

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stormctl/stormctl/internal/history"
	"github.com/stormctl/stormctl/reports"
)

// schema1 is a storm directory written by the last build of schema 1
// (local world, control and step-storm under main and
// seq+callsite+ordered, one run a cell, trimmed to three cells).
var schema1 = filepath.Join("testdata", "schema1")

// strictly decodes b into v, refusing a key v has no field for.
func strictly(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}

// TestSchema1Upgrades: every key of a schema 1 storm directory's
// storm.json, runs.jsonl and history.jsonl, upgraded, is a key of this
// build's types (none is dropped on the way).
func TestSchema1Upgrades(t *testing.T) {
	t.Parallel()
	doc, err := os.ReadFile(filepath.Join(schema1, FileStorm))
	if err != nil {
		t.Fatal(err)
	}
	if err := strictly(upgrade(camelSchema, doc), new(Meta)); err != nil {
		t.Errorf("%s: %v", FileStorm, err)
	}
	for _, f := range []struct {
		name string
		v    func() any
	}{
		{FileRuns, func() any { return new(reports.RunRecord) }},
		{FileHistory, func() any { return new(history.Op) }},
	} {
		b, err := os.ReadFile(filepath.Join(schema1, f.name))
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(bytes.NewReader(b))
		sc.Buffer(nil, maxLine)
		for n := 1; sc.Scan(); n++ {
			if err := strictly(upgrade(camelSchema, sc.Bytes()), f.v()); err != nil {
				t.Fatalf("%s:%d: %v", f.name, n, err)
			}
		}
	}
}

// TestReadSchema1: a schema 1 storm reads whole through Open and
// LoadStorm: the fields whose keys were camelCase hold their values.
func TestReadSchema1(t *testing.T) {
	t.Parallel()
	d, err := Open(schema1)
	if err != nil {
		t.Fatal(err)
	}
	m := d.Meta
	if m.Schema != 1 || m.Config.TimeScale != 0.2 || m.RunsInFlight == 0 || len(m.PageSizes) == 0 || len(m.Latency) == 0 {
		t.Errorf("storm.json read as %+v", m)
	}
	runs, err := d.Runs()
	if err != nil || len(runs) != 3 {
		t.Fatalf("Runs = %d runs, %v; want 3", len(runs), err)
	}
	ops, err := d.History()
	if err != nil {
		t.Fatal(err)
	}
	judged := 0
	for _, r := range runs {
		if r.RunID == "" || r.Millis == 0 || r.Stats.LastStoreOK.IsZero() {
			t.Errorf("run %+v lost a schema 1 field", r)
		}
		judged += len(r.Verdicts)
		for _, v := range r.Verdicts {
			if v.Expected == 0 && v.Actual == 0 {
				t.Errorf("run %s: verdict %+v lost its seqs", r.RunID, v)
			}
		}
		one, err := d.RunHistory(r.RunID)
		if err != nil || len(one) == 0 || len(one) != len(ops[r.RunID]) {
			t.Errorf("run %s: RunHistory %d ops (%v), History %d", r.RunID, len(one), err, len(ops[r.RunID]))
		}
		minted := 0
		for _, op := range one {
			for _, w := range op.Wrote {
				if !w.MintedAt.IsZero() {
					minted++
				}
			}
		}
		if minted == 0 {
			t.Errorf("run %s: no op's write kept its mint time", r.RunID)
		}
		if final, err := d.Events(r.CellKey, r.RunID); err != nil || len(final) != r.Events {
			t.Errorf("run %s: final log of %d events (%v), want %d", r.RunID, len(final), err, r.Events)
		}
	}
	if judged == 0 {
		t.Error("no verdict read: the fixture's seq run was judged")
	}
	st, err := LoadStorm(schema1)
	if err != nil {
		t.Fatal(err)
	}
	if st.Summary.Schema != 1 || len(st.Lines) != 3 || !bytes.Contains(st.Lines[0], []byte(`"run_id"`)) {
		t.Errorf("LoadStorm: schema %d, lines %q", st.Summary.Schema, st.Lines)
	}
}
