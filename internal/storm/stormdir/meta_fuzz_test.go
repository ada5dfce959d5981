package stormdir_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stormctl/stormctl/internal/engine/conditions"
	"github.com/stormctl/stormctl/internal/history"
	"github.com/stormctl/stormctl/internal/nemesis"
	"github.com/stormctl/stormctl/internal/storm/stormdir"
	"github.com/stormctl/stormctl/reports"
	"github.com/stormctl/stormctl/worlds"
)

// fullMeta is a storm.json with every field set: a shard of a nemesis
// storm, resumed once, of every preset.
func fullMeta(f *testing.F) []byte {
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	m := stormdir.Meta{Schema: reports.SchemaVersion, Version: "v1.2.3", Conditions: map[string]conditions.Condition{},
		Config: stormdir.Config{Worlds: []string{"local", "postgres"}, Scenarios: []string{"control"}, Runs: 24, Concurrency: 20,
			RunsInFlight: 8, Seed: 1, TimeScale: 0.5, Rounds: 6, Latency: "fixed:5ms", Timeout: 240 * time.Second, PageSize: 100,
			Out: "storms/x", Shard: stormdir.Shard{Index: 2, Count: 3},
			Nemesis: nemesis.Config{Kinds: nemesis.KindList{nemesis.PGRestart, nemesis.Latency}, Faults: 3, Window: 3 * time.Second, Gap: 10 * time.Second}},
		PageSizes: map[string]int{"local/seq": 100, "vercel/seq": 1000}, RunsInFlight: 8, GoMaxProcs: 2,
		Latency: []worlds.Window{{Type: "step_created", Median: 31 * time.Millisecond, Sigma: 1.2, Max: 2 * time.Second, Source: "measured: seed"}},
		Started: at, Resumed: []time.Time{at.Add(time.Hour)},
		FaultSchedule: []nemesis.Fault{{ID: 1, Kind: nemesis.Latency, World: "postgres", At: time.Second, For: 2 * time.Second, Delay: time.Millisecond}},
		Faults: []nemesis.Record{{Fault: 1, Kind: nemesis.Latency, World: "postgres", Target: "127.0.0.1:5432", Cells: []string{"postgres/control/main"},
			Start: at, End: at.Add(time.Second), Detail: "+1ms", Err: "dial: refused"}}}
	for _, p := range conditions.Presets() {
		m.Config.Conditions = append(m.Config.Conditions, p.Name)
		m.Conditions[p.Name] = conditions.Condition{Name: p.Name, Knobs: p.Knobs}
		for _, w := range m.Config.Worlds {
			m.Cells = append(m.Cells, history.CellKey{World: w, Scenario: "control", Condition: p.Name})
		}
	}
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		f.Fatal(err)
	}
	return append(b, '\n')
}

// FuzzReadMeta: ReadMeta reads any storm.json into a Meta of this
// schema with a valid shard, or returns an *ArtifactError naming the file
// (and a line within it); ReadResume, which reads runs.jsonl beside it,
// says the same of it; a Meta read, written again, reads back the
// same.
func FuzzReadMeta(f *testing.F) {
	full := fullMeta(f)
	f.Add(full)
	f.Add(full[:len(full)/3])
	f.Add(bytes.Replace(full, []byte(`"2/3"`), []byte(`"0/0"`), 1))
	f.Add(bytes.Replace(full, []byte(`"2/3"`), []byte(`"4/3"`), 1))
	f.Add(bytes.Replace(full, []byte(`"schema": 2`), []byte(`"schema": 3`), 1))
	f.Add(bytes.Replace(full, []byte(`"schema": 2`), []byte(`"schema": 1`), 1))
	f.Add([]byte(`{"schema":1,"conditions":{"main":null},"cells":[null],"config":{"shard":""}}`))
	run, err := json.Marshal(reports.RunRecord{CellKey: history.NewCellKey("local", "control", "main"), RunID: "wrun_a"})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		dir := t.TempDir()
		path := filepath.Join(dir, stormdir.FileStorm)
		for name, b := range map[string][]byte{stormdir.FileStorm: data, stormdir.FileRuns: append(run, '\n')} {
			if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		m, err := stormdir.ReadMeta(dir)
		res, resErr := stormdir.ReadResume(dir)
		if err != nil {
			var ae *stormdir.ArtifactError
			if !errors.As(err, &ae) || ae.File != path || !strings.HasPrefix(err.Error(), path+":") {
				t.Fatalf("error %q is not an *ArtifactError naming %s", err, path)
			}
			if n := bytes.Count(data, []byte("\n")) + 1; ae.Line > n {
				t.Fatalf("error %q names line %d of %d", err, ae.Line, n)
			}
			if resErr == nil || resErr.Error() != err.Error() {
				t.Fatalf("ReadResume: %v; ReadMeta: %v", resErr, err)
			}
			return
		}
		if resErr != nil {
			t.Fatalf("ReadResume: %v; ReadMeta read the storm.json", resErr)
		}
		if m.Schema != reports.SchemaVersion && m.Schema != 1 {
			t.Fatalf("schema %d read without an error (this build reads 1 and %d)", m.Schema, reports.SchemaVersion)
		}
		if sh := m.Config.Shard; !sh.IsZero() && (sh.Index < 1 || sh.Index > sh.Count) {
			t.Fatalf("shard %d/%d read without an error", sh.Index, sh.Count)
		}
		sameMeta(t, "ReadResume's storm.json", res.Meta, m)
		if len(res.Stored.Runs) != 1 || res.Stored.Runs[0].RunID != "wrun_a" {
			t.Fatalf("ReadResume's runs: %+v", res.Stored)
		}

		back := t.TempDir()
		if err := stormdir.WriteJSON(filepath.Join(back, stormdir.FileStorm), m); err != nil {
			t.Fatalf("write back what was read: %v", err)
		}
		again, err := stormdir.ReadMeta(back)
		if err != nil {
			t.Fatalf("the storm.json read, written again: %v", err)
		}
		sameMeta(t, "storm.json read again", again, m)
	})
}

// sameMeta fails unless got and want write the same storm.json.
func sameMeta(t *testing.T, what string, got, want *stormdir.Meta) {
	t.Helper()
	g, gerr := json.Marshal(got)
	w, werr := json.Marshal(want)
	if gerr != nil || werr != nil || !bytes.Equal(g, w) {
		t.Fatalf("%s =\n%s (%v)\nwant\n%s (%v)", what, g, gerr, w, werr)
	}
}
