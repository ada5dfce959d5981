// Package jsrepro writes a shrunk devkit run (rtshrink.Case) as a test
// the DevKit's own runners execute: node's built-in test runner
// (node-test, no dependency but @workflow/core) or vitest (vercel/workflow's
// runner). The directory holds one test file, its data (schedule.json), the
// workflow code core runs (workflow.js), the scenario's source for
// reading, a package.json pinning the runtime it came from, and a README
// saying how to run it, how to check a fix, and how to drop it into a
// vercel/workflow checkout.
package jsrepro

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/stormctl/stormctl/internal/tools/rtshrink"
)

// The forms a reproduction is written in.
const (
	NodeTest = "node-test"
	Vitest   = "vitest"
)

// Forms lists them.
func Forms() []string { return []string{NodeTest, Vitest} }

//go:embed template/repro.test.mjs
var testTemplate string

// Fixture is everything a reproduction directory says.
type Fixture struct {
	// Form is NodeTest or Vitest.
	Form string
	// Title names the test: the run, its cell and what it asserts.
	Title string
	// Source says where the run came from (storm directory, cell).
	Source string
	Case   rtshrink.Case
	// Failure is what the runtime it came from raises on Case.
	Failure rtshrink.Signature
	// Layer is where the defect lies (world, engine, unknown) and Class
	// the run's root-cause class; Evidence says, in lines, what in the
	// log shows it.
	Layer, Class string
	Evidence     []string
	// Shrunk says how much smaller the schedule got.
	Shrunk string
	// Versions are the packages the run's storm ran (storm.json).
	Versions map[string]string
	// WorkflowName is the run's workflow ("workflow//./workflows/…//…"),
	// WorkflowCode what core runs for it.
	WorkflowName, WorkflowCode string
	// Sources are the scenario's source files (for reading), by name.
	Sources fs.FS
}

// schedule is schedule.json.
type schedule struct {
	Title        string             `json:"title"`
	Source       string             `json:"source"`
	Layer        string             `json:"layer"`
	Class        string             `json:"class"`
	Evidence     []string           `json:"evidence,omitempty"`
	Runtime      map[string]string  `json:"runtime"`
	WorkflowName string             `json:"workflowName"`
	Expected     rtshrink.Signature `json:"failsOnItsRuntimeWith"`
	Case         rtshrink.Case      `json:"case"`
}

// Write writes f into dir (created; files of the same names replaced) and
// returns the paths written.
func Write(dir string, f Fixture) ([]string, error) {
	if !slices.Contains(Forms(), f.Form) {
		return nil, fmt.Errorf("jsrepro: no form %q (want %s)", f.Form, strings.Join(Forms(), " or "))
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("jsrepro: %w", err)
	}
	// A directory written before keeps nothing of its case (its source/
	// may name other files); node_modules, an install, stays.
	if err := os.RemoveAll(filepath.Join(dir, "source")); err != nil {
		return nil, fmt.Errorf("jsrepro: %w", err)
	}
	sched, err := json.MarshalIndent(schedule{
		Title: f.Title, Source: f.Source, Layer: f.Layer, Class: f.Class, Evidence: f.Evidence,
		Runtime: f.Versions, WorkflowName: f.WorkflowName, Expected: f.Failure, Case: f.Case,
	}, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("jsrepro: schedule.json: %w", err)
	}
	testName := "repro.test.mjs"
	files := []file{
		{testName, []byte(testFile(f.Form))},
		{"schedule.json", append(sched, '\n')},
		{"workflow.js", []byte(f.WorkflowCode)},
		{"package.json", packageJSON(f)},
		{"README.md", []byte(readme(f, testName))},
	}
	if f.Sources != nil {
		err := fs.WalkDir(f.Sources, ".", func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			b, err := fs.ReadFile(f.Sources, p)
			if err != nil {
				return err
			}
			files = append(files, file{filepath.Join("source", p), b})
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("jsrepro: the scenario's sources: %w", err)
		}
	}
	var paths []string
	for _, fl := range files {
		p := filepath.Join(dir, fl.name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return nil, fmt.Errorf("jsrepro: %w", err)
		}
		if err := os.WriteFile(p, fl.data, 0o644); err != nil {
			return nil, fmt.Errorf("jsrepro: %w", err)
		}
		paths = append(paths, p)
	}
	return paths, nil
}

type file struct {
	name string
	data []byte
}

// testFile is the test in form's dialect: the same body, the runner's
// own test function.
func testFile(form string) string {
	imp := "import { test } from 'node:test';"
	if form == Vitest {
		imp = "import { test } from 'vitest';"
	}
	return strings.Replace(testTemplate, "/*@@IMPORT_TEST@@*/", imp, 1)
}

// packageJSON pins the runtime the run came from (and vitest).
func packageJSON(f Fixture) []byte {
	core := f.Versions["@workflow/core"]
	if core == "" {
		core = "*" // the storm recorded no version: say so rather than pin one
	}
	deps := map[string]string{"@workflow/core": core}
	test := "node --test"
	if f.Form == Vitest {
		deps["vitest"] = "^3"
		test = "vitest run"
	}
	b, _ := json.MarshalIndent(map[string]any{
		"name":         "stormctl-repro-" + strings.ToLower(f.Case.RunID),
		"private":      true,
		"type":         "module",
		"description":  "A reproduction written by stormctl shrink: " + f.Title,
		"scripts":      map[string]string{"test": test},
		"dependencies": deps,
	}, "", "  ")
	return append(b, '\n')
}
