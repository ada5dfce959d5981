package devkitscen

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stormctl/stormctl/scenarios"
)

func TestEveryScenarioHasAWorkflow(t *testing.T) {
	var registry []string
	for _, s := range scenarios.Registry() {
		registry = append(registry, s.Name)
		if why, ok := ModelOnly()[s.Name]; ok {
			if _, err := Lookup(s.Name); !errors.Is(err, ErrNoWorkflow) || !strings.Contains(err.Error(), why) {
				t.Errorf("Lookup of model-only scenario %s: %v, want ErrNoWorkflow saying %q", s.Name, err, why)
			}
			continue
		}
		w, err := Lookup(s.Name)
		if err != nil {
			t.Errorf("scenario %s: %v", s.Name, err)
			continue
		}
		if w.Scenario != s.Name {
			t.Errorf("Lookup(%q) = the workflow of %q", s.Name, w.Scenario)
		}
	}
	for _, w := range Workflows() {
		if !slices.Contains(registry, w.Scenario) {
			t.Errorf("workflow %s is for %q, which the Go registry does not have", w.ID(), w.Scenario)
		}
	}
	if _, err := Lookup("hail-storm"); !errors.Is(err, ErrNoWorkflow) {
		t.Errorf("Lookup of an unknown scenario: %v, want ErrNoWorkflow", err)
	}
}

func TestWorkflowIDs(t *testing.T) {
	tests := []struct {
		scenario, want string
	}{
		{"step-storm", "workflow//./workflows/step-storm//stepStorm"},
		{"hook-storm", "workflow//./workflows/hook-storm//hookStorm"},
		{"blocked-branch", "workflow//./workflows/blocked-branch//blockedBranch"},
		{"wake-loop", "workflow//./workflows/wake-loop//wakeLoop"},
		{"control", "workflow//./workflows/control//control"},
	}
	for _, tt := range tests {
		w, err := Lookup(tt.scenario)
		if err != nil {
			t.Fatal(err)
		}
		if got := w.ID(); got != tt.want {
			t.Errorf("%s: ID() = %q, want %q", tt.scenario, got, tt.want)
		}
	}
}

// manifestIDs reads the workflow ids of a builder manifest
// (.well-known/workflow/v1/manifest.json): file -> export -> id.
func manifestIDs(t *testing.T, raw []byte) map[string]map[string]string {
	t.Helper()
	var m struct {
		Workflows map[string]map[string]struct {
			WorkflowID string `json:"workflowId"`
		} `json:"workflows"`
	}
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatalf("manifest: %v", err)
	}
	out := map[string]map[string]string{}
	for file, exports := range m.Workflows {
		out[file] = map[string]string{}
		for name, e := range exports {
			out[file][name] = e.WorkflowID
		}
	}
	return out
}

// checkManifest fails unless the manifest names exactly Workflows(), each
// with the id ID() gives.
func checkManifest(t *testing.T, ids map[string]map[string]string) {
	t.Helper()
	n := 0
	for _, exports := range ids {
		n += len(exports)
	}
	if n != len(Workflows()) {
		t.Errorf("the manifest has %d workflows, want %d: %v", n, len(Workflows()), ids)
	}
	for _, w := range Workflows() {
		got, ok := ids[w.Path()][w.Export]
		if !ok {
			t.Errorf("the manifest has no workflow %s in %s", w.Export, w.Path())
			continue
		}
		if got != w.ID() {
			t.Errorf("%s: the builder assigned %q, ID() says %q", w.Scenario, got, w.ID())
		}
	}
}

// TestWorkflowIDsMatchTheBuilder checks ID against the manifest the
// DevKit's builder (@workflow/builders 4.1.14) wrote when it compiled these
// sources (testdata/manifest.json, its workflows with their graphs left out).
func TestWorkflowIDsMatchTheBuilder(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("testdata", "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	checkManifest(t, manifestIDs(t, raw))
}

// TestBuildSources compiles the sources with the DevKit's builder when
// STORMCTL_DEVKIT_MODULES names a directory whose node_modules hold
// @workflow/builders and workflow, and checks the ids it assigns. It is
// skipped without one (it needs Node and the packages).
func TestBuildSources(t *testing.T) {
	modules := os.Getenv("STORMCTL_DEVKIT_MODULES")
	if modules == "" {
		t.Skip("STORMCTL_DEVKIT_MODULES is not set: no DevKit builder to compile with")
	}
	dir := t.TempDir()
	if err := WriteSources(dir); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(modules, "node_modules"), filepath.Join(dir, "node_modules")); err != nil {
		t.Fatal(err)
	}
	script, err := filepath.Abs(filepath.Join("testdata", "build.mjs"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "build.mjs"), mustRead(t, script), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("node", "build.mjs", ".")
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	checkManifest(t, manifestIDs(t, mustRead(t, filepath.Join(dir, ".well-known", "workflow", "v1", "manifest.json"))))
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

var directive = regexp.MustCompile(`['"]use (step|workflow)['"]`)

// TestDirectivesOnTheirOwnLines checks what the builder needs to find a step
// or a workflow: its directive alone on its line, as the first statement of
// the function; and that every workflow the sources export is one of
// Workflows().
func TestDirectivesOnTheirOwnLines(t *testing.T) {
	exported := map[string]bool{}
	entries, err := fs.ReadDir(Sources(), SourceDir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) == 0 {
		t.Fatal("no sources embedded")
	}
	fn := regexp.MustCompile(`^export async function (\w+)\(`)
	for _, e := range entries {
		path := SourceDir + "/" + e.Name()
		src, err := fs.ReadFile(Sources(), path)
		if err != nil {
			t.Fatal(err)
		}
		var prev string
		sc := bufio.NewScanner(bytes.NewReader(src))
		for n := 1; sc.Scan(); n++ {
			line := sc.Text()
			if m := directive.FindStringSubmatch(line); m != nil && !strings.HasPrefix(strings.TrimSpace(line), "//") {
				if trimmed := strings.TrimSpace(line); trimmed != "'use "+m[1]+"';" {
					t.Errorf("%s:%d: directive not alone on its line: %q", path, n, line)
				}
				f := fn.FindStringSubmatch(prev)
				if f == nil {
					t.Errorf("%s:%d: directive not the first line of an exported async function (after %q)", path, n, prev)
				} else if m[1] == "workflow" {
					exported[strings.TrimSuffix(e.Name(), ".ts")+"//"+f[1]] = true
				}
			}
			prev = line
		}
	}
	for _, w := range Workflows() {
		key := w.File + "//" + w.Export
		if !exported[key] {
			t.Errorf("%s: %s exports no workflow %s", w.Scenario, w.Path(), w.Export)
		}
		delete(exported, key)
	}
	for key := range exported {
		t.Errorf("the sources export workflow %s, which Workflows() does not list", key)
	}
}

func TestWriteSources(t *testing.T) {
	dir := t.TempDir()
	if err := WriteSources(dir); err != nil {
		t.Fatal(err)
	}
	for _, w := range Workflows() {
		got, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(w.Path())))
		if err != nil {
			t.Errorf("%s: %v", w.Scenario, err)
			continue
		}
		want, _ := fs.ReadFile(Sources(), w.Path())
		if !bytes.Equal(got, want) {
			t.Errorf("%s: written source differs from the embedded one", w.Path())
		}
	}
	blocked := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(blocked, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := WriteSources(blocked); err == nil {
		t.Error("WriteSources into a path under a file succeeded")
	}
}

func TestInputCarriesTheToken(t *testing.T) {
	env := scenarios.Env{Scale: 0.5, Seed: 7, Rounds: 2}
	for _, s := range scenarios.Registry() {
		raw, err := Input(s, env, 3, "run-3x")
		if err != nil {
			t.Errorf("%s: %v", s.Name, err)
			continue
		}
		var got map[string]any
		if err := json.Unmarshal(raw, &got); err != nil {
			t.Fatalf("%s: %v", s.Name, err)
		}
		if got[TokenField] != "run-3x" {
			t.Errorf("%s: token = %v, want run-3x", s.Name, got[TokenField])
		}
		delete(got, TokenField)
		var want map[string]any
		b, _ := json.Marshal(s.Input(env, 3))
		if err := json.Unmarshal(b, &want); err != nil {
			t.Fatal(err)
		}
		if gb, wb := mustJSON(t, got), mustJSON(t, want); gb != wb {
			t.Errorf("%s: input without its token = %s, want the Go input %s", s.Name, gb, wb)
		}
	}
}

func TestInputRefusesBadTokens(t *testing.T) {
	s, err := scenarios.Lookup("control")
	if err != nil {
		t.Fatal(err)
	}
	for _, token := range []string{"", "a:b", "a b", "a\nb"} {
		if _, err := Input(s, scenarios.Env{Scale: 1}, 0, token); !errors.Is(err, ErrBadToken) {
			t.Errorf("Input with token %q: %v, want ErrBadToken", token, err)
		}
	}
}

func TestInputRefusesATokenClash(t *testing.T) {
	s := scenarios.Scenario{Name: "clash", Input: func(scenarios.Env, int) any { return map[string]string{"token": "mine"} }}
	if _, err := Input(s, scenarios.Env{}, 0, "ok"); err == nil {
		t.Error("Input overwrote the scenario's own token field")
	}
	s.Input = func(scenarios.Env, int) any { return []int{1} }
	if _, err := Input(s, scenarios.Env{}, 0, "ok"); err == nil {
		t.Error("Input accepted a scenario input that is not an object")
	}
}

func TestHookToken(t *testing.T) {
	tests := []struct{ prefix, token, want string }{
		{"ts0-abc", "poke", "ts0-abc:poke"},
		{"ts0-abc", "r0-b1", "ts0-abc:r0-b1"},
		{"p", "ctl", "p:ctl"},
	}
	for _, tt := range tests {
		if got := HookToken(tt.prefix, tt.token); got != tt.want {
			t.Errorf("HookToken(%q, %q) = %q, want %q", tt.prefix, tt.token, got, tt.want)
		}
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestScenarioToken(t *testing.T) {
	tests := []struct {
		prefix, token, want string
		ok                  bool
	}{
		{"ts0-abc", "ts0-abc:r0-b1", "r0-b1", true},
		{"ts0-abc", "ts0-abc:poke", "poke", true},
		{"ts0-abc", "ts0-abcd:poke", "", false},
		{"ts0-abc", "ts1-abc:poke", "", false},
		{"ts0-abc", "poke", "", false},
		{"", ":poke", "", false},
	}
	for _, tt := range tests {
		got, ok := ScenarioToken(tt.prefix, tt.token)
		if got != tt.want || ok != tt.ok {
			t.Errorf("ScenarioToken(%q, %q) = %q, %v; want %q, %v", tt.prefix, tt.token, got, ok, tt.want, tt.ok)
		}
		if ok {
			if back := HookToken(tt.prefix, got); back != tt.token {
				t.Errorf("HookToken(ScenarioToken(%q)) = %q", tt.token, back)
			}
		}
	}
}
