package cli_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stormctl/stormctl/internal/cli"
	"github.com/stormctl/stormctl/internal/tools/shrink"
)

// TestShrinkCommand: shrink writes the minimal schedule of a stored
// corrupted run and its Go test into DIR/shrink (or --out), prints the
// sizes before and after and the narrative down to the engine's error, or
// the whole result with --format json; the options parse --out and
// --budget.
func TestShrinkCommand(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "storm")
	if err := os.CopyFS(dir, os.DirFS(schema1Storm)); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := run(t.Context(), "shrink", dir, schema1Corrupted)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	fixture := filepath.Join(dir, "shrink", schema1Corrupted+".txt")
	for _, want := range []string{schema1Corrupted + ": 28 invocations, 92 events, 30 reads -> ", "(minimal; ",
		"  1. the run starts: ", "replays what it read and the engine raises: replay divergence: ", "  wrote " + fixture, "  wrote " + strings.TrimSuffix(fixture, ".txt") + "_test.go"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("stdout lacks %q:\n%s", want, stdout)
		}
	}
	text, err := os.ReadFile(fixture)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(text), "# shrunk by stormctl shrink from run "+schema1Corrupted) {
		t.Errorf("%s starts:\n%s", fixture, text)
	}
	if err := shrink.Reproduce(t.Context(), string(text)); err == nil || !strings.Contains(err.Error(), "replay divergence: step event") {
		t.Errorf("Reproduce(%s) = %v, want the recorded divergence", fixture, err)
	}
	out := filepath.Join(t.TempDir(), "repro")
	code, stdout, stderr = run(t.Context(), "shrink", dir, schema1Corrupted, "--out", out, "--format", "json")
	if code != 0 {
		t.Fatalf("--format json: exit %d: %s", code, stderr)
	}
	var res struct {
		shrink.Result
		Files []string `json:"files"`
	}
	if err := json.Unmarshal([]byte(stdout), &res); err != nil {
		t.Fatalf("--format json: %v\n%s", err, stdout)
	}
	if !res.Minimal || res.After.Events >= res.Before.Events || len(res.Files) != 2 || filepath.Dir(res.Files[1]) != out || len(res.Narrative) == 0 {
		t.Errorf("--format json: %+v", res)
	}
	if o := parseOptions(t, cli.NewCmdShrink, "DIR", "RUN", "--out", "X", "--budget", "10s", "--emit", "vitest"); o.Dir != "DIR" || o.Out != "X" || o.Budget.Seconds() != 10 || o.Emit != "vitest" {
		t.Errorf("options %+v", o)
	}
	// A JavaScript reproduction comes from a run of the published runtime;
	// a form nobody runs is refused before anything is read.
	for _, tt := range []struct{ args, want string }{
		{"--emit node-test", "--emit node-test: run " + schema1Corrupted + " ran on the model, whose reproduction is a Go test"},
		{"--emit jest", `--emit "jest": want go, node-test or vitest`},
		{"--budget -1s", "--budget must not be negative"},
	} {
		code, _, stderr := run(t.Context(), append([]string{"shrink", dir, schema1Corrupted}, strings.Fields(tt.args)...)...)
		if code != 2 || !strings.Contains(stderr, tt.want) {
			t.Errorf("shrink %s: exit %d, stderr %q; want 2 saying %q", tt.args, code, stderr, tt.want)
		}
	}
}
