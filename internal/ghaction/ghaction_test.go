package ghaction_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/stormctl/stormctl/internal/base/filetest"
	"github.com/stormctl/stormctl/internal/ghaction"
)

// root is the repository this test runs in.
var root = filetest.Repo()

// TestLayout: the repository lays out whole: every workflow, action.yml
// where storm-gate.yml checks stormctl out, its steps lifted with every
// input, and each document's example workflow twice, the second calling
// this repository's reusable workflow.
func TestLayout(t *testing.T) {
	files, err := ghaction.Layout(root)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{".github/workflows/storm.yml", ".github/workflows/storm-gate.yml", ".stormctl/action.yml", ".github/workflows/lifted-action.yml"}
	for _, d := range ghaction.ExampleDocs() {
		want = append(want, ".github/workflows/"+d.Workflow+".yml", ".github/workflows/"+d.Workflow+"-local.yml")
	}
	for _, p := range want {
		if len(files[p]) == 0 {
			t.Errorf("the layout has no %s", p)
		}
	}
	var act, lifted struct {
		Inputs map[string]any `yaml:"inputs"`
		On     struct {
			Call struct {
				Inputs map[string]any `yaml:"inputs"`
			} `yaml:"workflow_call"`
		} `yaml:"on"`
	}
	if err := yaml.Unmarshal(files[".stormctl/action.yml"], &act); err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(files[".github/workflows/lifted-action.yml"], &lifted); err != nil {
		t.Fatal(err)
	}
	if len(act.Inputs) == 0 || len(lifted.On.Call.Inputs) != len(act.Inputs) {
		t.Errorf("the lifted workflow has %d inputs, action.yml %d", len(lifted.On.Call.Inputs), len(act.Inputs))
	}
	for name := range act.Inputs {
		if _, ok := lifted.On.Call.Inputs[name]; !ok {
			t.Errorf("the lifted workflow lacks input %s", name)
		}
	}
	ex, local := files[".github/workflows/example-devkit-storm.yml"], files[".github/workflows/example-devkit-storm-local.yml"]
	if !bytes.Contains(local, []byte("uses: ./.github/workflows/storm-gate.yml\n")) || bytes.Contains(local, []byte("stormctl/stormctl/")) {
		t.Errorf("the local example does not call ./.github/workflows/storm-gate.yml:\n%s", local)
	}
	if bytes.Equal(ex, local) {
		t.Error("the local example is the example")
	}

	dir := t.TempDir()
	if err := files.Write(dir); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(filepath.Join(dir, ".git")); err != nil || !fi.IsDir() {
		t.Errorf("no .git directory in the layout (actionlint finds the repository's root by it): %v", err)
	}
	if b, err := os.ReadFile(filepath.Join(dir, ".stormctl", "action.yml")); err != nil || !bytes.Equal(b, files[".stormctl/action.yml"]) {
		t.Errorf(".stormctl/action.yml not written as laid out: %v", err)
	}
}

// composite is an action whose steps the cases below break.
func composite(steps string) []byte {
	return []byte(`name: x
description: x
inputs:
  phase:
    required: true
outputs:
  gate:
    value: ${{ steps.verdict.outputs.gate }}
runs:
  using: composite
  steps:
` + steps)
}

func TestCheck(t *testing.T) {
	real, err := os.ReadFile(filepath.Join(root, ghaction.ActionFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		action []byte
		err    string // a piece of the error; "" for none
	}{
		{name: "action.yml", action: real},
		{name: "fine", action: composite("    - id: verdict\n      shell: bash\n      run: echo ${{ inputs.phase }}\n")},
		{name: "undeclared input", action: composite("    - id: verdict\n      shell: bash\n      run: echo ${{ inputs.phaze }}\n"), err: "no input phaze"},
		{name: "input in an if", action: composite("    - id: verdict\n      if: ${{ inputs.nope == 'x' }}\n      shell: bash\n      run: echo\n"), err: "no input nope"},
		{name: "input in a bare if", action: composite("    - id: verdict\n      if: inputs.phasee == 'x'\n      shell: bash\n      run: echo\n"), err: "no input phasee"},
		{name: "step in a bare if", action: composite("    - id: verdict\n      if: steps.x.outcome == 'success'\n      shell: bash\n      run: echo\n"), err: "no step with id x"},
		{name: "no such step", action: composite("    - id: verdikt\n      shell: bash\n      run: echo\n"), err: "no step with id verdict"},
		{name: "run without shell", action: composite("    - id: verdict\n      run: echo\n"), err: "without a shell"},
		{name: "not composite", action: []byte("runs:\n  using: node20\n  main: x.js\n"), err: "want composite"},
		{name: "not yaml", action: []byte("runs: [\n"), err: "action.yml"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := ghaction.Check(tc.action)
			switch {
			case tc.err == "" && err != nil:
				t.Fatalf("error %v, want none", err)
			case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
				t.Fatalf("error %v, want one saying %q", err, tc.err)
			}
		})
	}
}

func TestExample(t *testing.T) {
	call := "jobs:\n  storm:\n    uses: stormctl/stormctl/.github/workflows/storm-gate.yml@abc\n"
	for _, tc := range []struct {
		name, doc, err string
	}{
		{name: "fine", doc: "text\n" + ghaction.ExampleMarker + "\n```yaml\n" + call + "```\nmore\n"},
		{name: "no marker", doc: "```yaml\n" + call + "```\n", err: "doc.md: no line"},
		{name: "no fence", doc: ghaction.ExampleMarker + "\n\n```yaml\n" + call + "```\n", err: "no fenced block"},
		{name: "no end", doc: ghaction.ExampleMarker + "\n```yaml\n" + call, err: "does not end"},
		{name: "no call", doc: ghaction.ExampleMarker + "\n```yaml\njobs: {}\n```\n", err: "calls no"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ex, local, err := ghaction.Example("doc.md", []byte(tc.doc))
			switch {
			case tc.err == "" && err != nil:
				t.Fatalf("error %v, want none", err)
			case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
				t.Fatalf("error %v, want one saying %q", err, tc.err)
			case tc.err == "" && (string(ex) != call || !strings.Contains(string(local), "uses: ./.github/workflows/storm-gate.yml\n")):
				t.Fatalf("example %q, local %q", ex, local)
			}
		})
	}
}

// TestFrontPageLinksTheExample: the front page points at the example
// workflow's document and holds no copy of it (a copy drifts).
func TestFrontPageLinksTheExample(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(root, ghaction.FrontPage))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(b, []byte("("+ghaction.ExampleDoc+")")) {
		t.Errorf("%s does not link %s", ghaction.FrontPage, ghaction.ExampleDoc)
	}
	if bytes.Contains(b, []byte(ghaction.ExampleMarker)) {
		t.Errorf("%s holds a copy of the example workflow: link %s instead", ghaction.FrontPage, ghaction.ExampleDoc)
	}
}
