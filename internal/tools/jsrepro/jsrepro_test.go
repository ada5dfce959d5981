package jsrepro

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/stormctl/stormctl/internal/tools/rtshrink"
)

func fixture(form string) Fixture {
	return Fixture{
		Form: form, Title: "wrun_T (devkit-local/step-storm/main): replays", Source: "run wrun_T of /tmp/s",
		Case:    rtshrink.Case{RunID: "wrun_T", Created: json.RawMessage(`{"eventType":"run_created"}`), StartedAt: 1, Clock: 2, Recovery: 3, Log: []json.RawMessage{json.RawMessage(`{"eventId":"e1"}`)}},
		Failure: rtshrink.Signature{Code: "CORRUPTED_EVENT_LOG", Message: "Workflow replay diverged 4 times\n\nLearn more"},
		Layer:   "world", Class: "duplicate-create", Evidence: []string{"events 2 and 3 both are `wait_created wait_1`"},
		Versions: map[string]string{"@workflow/core": "4.8.9"}, WorkflowName: "workflow//./workflows/step-storm//stepStorm",
		WorkflowCode: "globalThis.__private_workflows = new Map();", Sources: fstest.MapFS{"step-storm.ts": {Data: []byte("export {}")}},
	}
}

// TestWrite: each form writes one test in its runner's dialect around the
// same body, the data it reads, the workflow code, the sources, a
// package.json pinning the runtime (and vitest for vitest), and a README
// with the install and run lines and the runtime's text.
func TestWrite(t *testing.T) {
	t.Parallel()
	tests := []struct {
		form, imp, script string
		vitest            bool
	}{
		{NodeTest, "import { test } from 'node:test';", "node --test", false},
		{Vitest, "import { test } from 'vitest';", "vitest run", true},
	}
	for _, tt := range tests {
		t.Run(tt.form, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			paths, err := Write(dir, fixture(tt.form))
			if err != nil {
				t.Fatal(err)
			}
			if len(paths) != 6 {
				t.Errorf("wrote %v", paths)
			}
			read := func(name string) string {
				b, err := os.ReadFile(filepath.Join(dir, name))
				if err != nil {
					t.Fatal(err)
				}
				return string(b)
			}
			if src := read("repro.test.mjs"); !strings.Contains(src, tt.imp) || strings.Contains(src, "@@IMPORT_TEST@@") || !strings.Contains(src, "workflowEntrypoint(workflowCode)") {
				t.Errorf("test file does not import its runner's test (%s)", tt.imp)
			}
			var pkg struct {
				Type         string            `json:"type"`
				Scripts      map[string]string `json:"scripts"`
				Dependencies map[string]string `json:"dependencies"`
			}
			if err := json.Unmarshal([]byte(read("package.json")), &pkg); err != nil {
				t.Fatal(err)
			}
			if pkg.Type != "module" || pkg.Dependencies["@workflow/core"] != "4.8.9" || (pkg.Dependencies["vitest"] != "") != tt.vitest || pkg.Scripts["test"] != tt.script {
				t.Errorf("package.json %+v", pkg)
			}
			var sched schedule
			if err := json.Unmarshal([]byte(read("schedule.json")), &sched); err != nil {
				t.Fatal(err)
			}
			if sched.Case.RunID != "wrun_T" || sched.Expected.Code != "CORRUPTED_EVENT_LOG" || sched.Layer != "world" || len(sched.Case.Log) != 1 {
				t.Errorf("schedule.json %+v", sched)
			}
			readme := read("README.md")
			for _, want := range []string{"npm install", tt.script, "Workflow replay diverged 4 times", "## Layer: world (duplicate-create)", "wait_created wait_1", "packages/core/src/repro/wrun_t"} {
				if !strings.Contains(readme, want) {
					t.Errorf("README lacks %q", want)
				}
			}
			if read("workflow.js") != "globalThis.__private_workflows = new Map();" || read("source/step-storm.ts") != "export {}" {
				t.Error("workflow code or sources not written as given")
			}
		})
	}
	if _, err := Write(t.TempDir(), fixture("jest")); err == nil {
		t.Error("an unknown form was written")
	}
}
