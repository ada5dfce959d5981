// Package devkitscen holds stormctl's storm scenarios written as real workflow
// code: `"use workflow"` / `"use step"` TypeScript (workflows/*.ts) that the
// Workflow DevKit's own builder compiles and the published @workflow/core
// runs (the devkit engine), in exactly the shapes of the Go model's scenarios
// (package scenarios).
//
// Each workflow returns exactly the ledger JSON the Go scenario's Check
// reads, so a run of the real runtime is checked by the same code as a run of
// the model: a wrong result is caught the same way. Steps are pure functions
// of their arguments returning the Go steps' strings, and take the time the
// Go step takes.
//
// A run's input is the Go scenario's input plus "token", a per-run prefix
// minted by stormctl: hook tokens are global in a real world, so every hook
// token of a run is HookToken(prefix, t), where t is the token the Go model
// and its driver use ("poke", "r0-b1", "ctl", "wake", "abort").
//
// Where the published runtime (@workflow/core 4.8.9) cannot do what the model
// does, the workflow does the nearest honest thing and says so in its source:
//   - step-storm, blocked-branch: the settle step sets no run attribute (4.8.9
//     has no attribute API: no setAttributes, no attr_set event), so the log
//     holds no attr_set;
//   - a hook disposed just before the workflow returns (step-storm's poke,
//     control's ctl, wake-loop's wake and abort) gets no hook_disposed event:
//     the runtime writes run_completed and the world drops the run's hooks;
//   - step_created names the step by the id the builder assigns
//     (step//./workflows/<file>//<name>), not by the model's bare name.
package devkitscen

import (
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/stormctl/stormctl/scenarios"
)

// sources are the workflow sources, under workflows/.
//
//go:embed workflows/*.ts
var sources embed.FS

// SourceDir is the directory of the sources in Sources and in a build
// directory: the builder names a workflow by its file's path, so the sources
// must sit under it for the ids of Workflow.ID to hold.
const SourceDir = "workflows"

// Sources returns the workflow sources, each at SourceDir/<file>.ts.
func Sources() fs.FS { return sources }

// WriteSources writes the workflow sources into dir/SourceDir, creating it,
// ready for the builder to compile with dir as its working directory.
func WriteSources(dir string) error {
	dst := filepath.Join(dir, SourceDir)
	if err := os.MkdirAll(dst, 0o755); err != nil {
		return fmt.Errorf("write workflow sources: %w", err)
	}
	entries, err := fs.ReadDir(sources, SourceDir)
	if err != nil {
		return fmt.Errorf("write workflow sources: %w", err)
	}
	for _, e := range entries {
		b, err := fs.ReadFile(sources, SourceDir+"/"+e.Name())
		if err != nil {
			return fmt.Errorf("write workflow sources: %w", err)
		}
		if err := os.WriteFile(filepath.Join(dst, e.Name()), b, 0o644); err != nil {
			return fmt.Errorf("write workflow sources: %w", err)
		}
	}
	return nil
}

// Workflow is one scenario's workflow: the file that holds it and the
// function it exports.
type Workflow struct {
	// Scenario is the Go scenario's name (scenarios.Scenario.Name).
	Scenario string
	// File is the source file, relative to SourceDir, without ".ts".
	File string
	// Export is the exported `"use workflow"` function.
	Export string
}

// ID is the workflow id the DevKit's builder assigns (as its manifest,
// .well-known/workflow/v1/manifest.json, says): start a run of the workflow
// with it.
func (w Workflow) ID() string {
	return fmt.Sprintf("workflow//./%s/%s//%s", SourceDir, w.File, w.Export)
}

// Path is the workflow's source file in Sources.
func (w Workflow) Path() string { return SourceDir + "/" + w.File + ".ts" }

// Workflows returns every scenario's workflow, in the Go registry's order.
func Workflows() []Workflow {
	return []Workflow{
		{Scenario: "step-storm", File: "step-storm", Export: "stepStorm"},
		{Scenario: "hook-storm", File: "hook-storm", Export: "hookStorm"},
		{Scenario: "blocked-branch", File: "blocked-branch", Export: "blockedBranch"},
		{Scenario: "wake-loop", File: "wake-loop", Export: "wakeLoop"},
		{Scenario: "control", File: "control", Export: "control"},
		{Scenario: "fan-out", File: "fan-out", Export: "fanOut"},
	}
}

// ModelOnly returns the scenarios that have no devkit workflow, by the
// reason: what they do the published runtime cannot.
func ModelOnly() map[string]string {
	return map[string]string{
		"hook-claim": "it forces hook tokens across runs (createHook({experimental_force: true}), spec 8), which @workflow/core 4.8.9 does not have",
	}
}

// ErrNoWorkflow is returned by Lookup for a scenario without a workflow.
var ErrNoWorkflow = errors.New("no devkit workflow for the scenario")

// Lookup returns the workflow of the named scenario.
func Lookup(scenario string) (Workflow, error) {
	var names []string
	for _, w := range Workflows() {
		if w.Scenario == scenario {
			return w, nil
		}
		names = append(names, w.Scenario)
	}
	if why, ok := ModelOnly()[scenario]; ok {
		return Workflow{}, fmt.Errorf("%w %q: %s", ErrNoWorkflow, scenario, why)
	}
	return Workflow{}, fmt.Errorf("%w %q (have: %s)", ErrNoWorkflow, scenario, strings.Join(names, ", "))
}

// TokenField is the input field that carries the run's token prefix.
const TokenField = "token"

// ErrBadToken is returned by Input for a token prefix a run cannot use.
var ErrBadToken = errors.New("bad run token")

// Input is the input of run runIndex of scenario s on the devkit engine: the
// Go scenario's Input(env, runIndex) with the field "token" set to token
// (WithToken).
func Input(s scenarios.Scenario, env scenarios.Env, runIndex int, token string) (json.RawMessage, error) {
	out, err := WithToken(s.Input(env, runIndex), token)
	if err != nil {
		return nil, fmt.Errorf("%s input: %w", s.Name, err)
	}
	return out, nil
}

// WithToken is a Go scenario's run input with the field "token" set to
// token, the run's prefix of every hook token. The token must be non-empty
// and free of ':' (the separator of HookToken) and of whitespace; the
// input must be a JSON object without a "token" field.
func WithToken(input any, token string) (json.RawMessage, error) {
	if token == "" || strings.ContainsAny(token, ": \t\r\n") {
		return nil, fmt.Errorf("%w %q: want a non-empty token without ':' or whitespace", ErrBadToken, token)
	}
	raw, err := json.Marshal(input)
	if err != nil {
		return nil, err
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil {
		return nil, fmt.Errorf("not a JSON object: %w", err)
	}
	if _, ok := fields[TokenField]; ok {
		return nil, fmt.Errorf("already has a %q field", TokenField)
	}
	if fields[TokenField], err = json.Marshal(token); err != nil {
		return nil, err
	}
	return json.Marshal(fields)
}

// HookToken is the real hook token of the scenario token t (the token a Go
// driver passes to scenarios.Hooks.ResumeHook) in a run whose input carries
// the token prefix prefix.
func HookToken(prefix, t string) string { return prefix + ":" + t }

// ScenarioToken is HookToken's inverse: the scenario token of the real hook
// token token in a run whose token prefix is prefix, and false when token is
// not one of that run's. A driver reading a real run's log (hook-storm's
// finds its round hooks by their tokens, r<r>-b<b>) sees the scenario
// tokens.
func ScenarioToken(prefix, token string) (string, bool) {
	t, ok := strings.CutPrefix(token, prefix+":")
	if !ok || prefix == "" {
		return "", false
	}
	return t, true
}
