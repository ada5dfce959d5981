package devkitscen

import (
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stormctl/stormctl/scenarios"
)

// runFixture is one completed run of a workflow on the real runtime, saved
// by hand from the runtime host (see testdata/runs/README.md): the input the
// run was started with and the output the runtime returned for it.
type runFixture struct {
	Note     string            `json:"note"`
	Scenario string            `json:"scenario"`
	Date     string            `json:"date"`
	World    string            `json:"world"`
	Versions map[string]string `json:"versions"`
	RunID    string            `json:"runId"`
	Status   string            `json:"status"`
	Input    json.RawMessage   `json:"input"`
	Output   json.RawMessage   `json:"output"`
}

func readFixtures(t *testing.T) map[string]runFixture {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join("testdata", "runs", "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]runFixture{}
	for _, p := range paths {
		var f runFixture
		if err := json.Unmarshal(mustRead(t, p), &f); err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		if want := strings.TrimSuffix(filepath.Base(p), ".json"); f.Scenario != want {
			t.Fatalf("%s holds a run of %q", p, f.Scenario)
		}
		out[f.Scenario] = f
	}
	return out
}

// TestRuntimeLedgersPassTheGoCheck runs each Go scenario's Check on an
// output the real runtime produced for its workflow: the workflows return
// the ledger the Go checks read.
func TestRuntimeLedgersPassTheGoCheck(t *testing.T) {
	fixtures := readFixtures(t)
	for _, w := range Workflows() {
		t.Run(w.Scenario, func(t *testing.T) {
			f, ok := fixtures[w.Scenario]
			if !ok {
				t.Fatalf("no runtime fixture testdata/runs/%s.json", w.Scenario)
			}
			if f.Status != "completed" || len(f.Output) == 0 || f.RunID == "" || f.Versions["@workflow/core"] == "" {
				t.Fatalf("fixture is not a completed run of a named runtime: status %q, run %q, versions %v, %d output bytes",
					f.Status, f.RunID, f.Versions, len(f.Output))
			}
			var in map[string]any
			if err := json.Unmarshal(f.Input, &in); err != nil {
				t.Fatal(err)
			}
			if tok, _ := in[TokenField].(string); tok == "" {
				t.Errorf("the run's input has no token: %s", f.Input)
			}
			s, err := scenarios.Lookup(w.Scenario)
			if err != nil {
				t.Fatal(err)
			}
			if err := s.Check(f.Input, f.Output); err != nil {
				t.Errorf("the Go check refuses the runtime's ledger: %v", err)
			}
		})
	}
}

// TestRuntimeLedgersCanFail shows the check above is not vacuous: each
// fixture's ledger with one step result changed is refused.
func TestRuntimeLedgersCanFail(t *testing.T) {
	fixtures := readFixtures(t)
	if len(fixtures) == 0 {
		t.Fatal("no runtime fixtures")
	}
	for name, f := range fixtures {
		t.Run(name, func(t *testing.T) {
			var out any
			if err := json.Unmarshal(f.Output, &out); err != nil {
				t.Fatal(err)
			}
			if !corruptFirstResult(&out) {
				t.Fatalf("no step result in the ledger: %s", f.Output)
			}
			bad, err := json.Marshal(out)
			if err != nil {
				t.Fatal(err)
			}
			s, err := scenarios.Lookup(name)
			if err != nil {
				t.Fatal(err)
			}
			if err := s.Check(f.Input, bad); err == nil {
				t.Errorf("the Go check accepts a ledger with a wrong step result: %s", bad)
			}
		})
	}
}

// corruptFirstResult changes the first step result ("name(r=...") in v, a
// decoded JSON value, to another step's, in place.
func corruptFirstResult(v *any) bool {
	switch x := (*v).(type) {
	case string:
		if strings.Contains(x, "(r=") {
			*v = strings.Replace(x, "(r=", "(r=9", 1)
			return true
		}
	case []any:
		for i := range x {
			if corruptFirstResult(&x[i]) {
				return true
			}
		}
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			e := x[k]
			if corruptFirstResult(&e) {
				x[k] = e
				return true
			}
		}
	}
	return false
}
