package cli_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stormctl/stormctl/internal/cli"
	"github.com/stormctl/stormctl/internal/engine/conditions"
	"github.com/stormctl/stormctl/internal/storm/stormdir"
	"github.com/stormctl/stormctl/internal/tools/fidelity"
)

// engineStorm is fixture storm name with storm.json saying which engine
// ran its cells (config.engine) and what knobs condition cond (its cells'
// condition) has, as a storm writes them.
func engineStorm(t *testing.T, name, engine, cond string) string {
	t.Helper()
	dir := fixtureStorm(t, name)
	path := filepath.Join(dir, stormdir.FileStorm)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var meta map[string]any
	if err := json.Unmarshal(b, &meta); err != nil {
		t.Fatal(err)
	}
	c, err := conditions.Parse(cond)
	if err != nil {
		t.Fatal(err)
	}
	meta["config"] = map[string]any{"engine": engine}
	meta["conditions"] = map[string]any{cond: c}
	if b, err = json.Marshal(meta); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestFidelityReferenceFrom compares stored storms of the two engines:
// each cell goes to the side storm.json says ran it, a missing side is
// unknown and exits 1, a side given twice is refused.
func TestFidelityReferenceFrom(t *testing.T) {
	model := engineStorm(t, "reference-model", "model", "main")
	real := engineStorm(t, "reference-real", "devkit", "main")

	code, stdout, stderr := run(t.Context(), "fidelity", "--reference", "devkit", "--from", model, "--from", real, "--format", "json")
	if code != cli.ExitOK {
		t.Fatalf("exit %d, want 0\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	var rep fidelity.ReferenceReport
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
		t.Fatalf("stdout is not a reference report: %v\n%s", err, stdout)
	}
	if s := rep.Storms["devkit-local"]; s.Model != model || s.Real != real {
		t.Errorf("storms %+v, want model %s real %s", rep.Storms, model, real)
	}
	want := map[string]string{ // scenario + figure -> the gap the fixtures make
		"step-storm non-prefix reads of reads":        "off",       // 33% against 0.8%
		"step-storm corrupted+silent of decided runs": "within",    // 12/12 against 9/9
		"hook-storm corrupted+silent of decided runs": "within",    // 8/12 against 6/6
		"control corrupted+silent of decided runs":    "both-zero", // clean on both
	}
	seen := 0
	for _, f := range rep.Figures {
		if g, ok := want[f.Scenario+" "+f.Name]; ok {
			seen++
			if string(f.Gap) != g {
				t.Errorf("%s %s: gap %s, want %s (model %s, real %s)", f.Scenario, f.Name, f.Gap, g, f.Model.Text, f.Real.Text)
			}
		}
	}
	if seen != len(want) {
		t.Errorf("found %d of the %d figures checked", seen, len(want))
	}
	for _, f := range rep.Figures {
		if f.Scenario == "hook-storm" && f.Name == "corrupted+silent of decided runs" && !strings.Contains(f.Note, "real: 6 of 12 runs decided nothing") {
			t.Errorf("hook-storm's bad rate does not note the real side's undecided runs: %q", f.Note)
		}
	}

	// One side only: every figure unknown, exit 1, the table says so.
	code, stdout, _ = run(t.Context(), "fidelity", "--reference", "devkit", "--from", model)
	if code != cli.ExitGateFailed || !strings.Contains(stdout, "not measured") || !strings.Contains(stdout, "unknown") {
		t.Errorf("model side only: exit %d, want %d, and a table saying the real side is not measured:\n%s", code, cli.ExitGateFailed, stdout)
	}

	// A side given twice is refused: which to compare would be a guess.
	code, _, stderr = run(t.Context(), "fidelity", "--reference", "devkit", "--from", model, "--from", engineStorm(t, "reference-model", "model", "main"))
	if code != cli.ExitUsage || !strings.Contains(stderr, "is in both") {
		t.Errorf("a side twice: exit %d, stderr %q", code, stderr)
	}
}

// TestFidelityReferenceFromModelCondition: --model-condition picks the
// model side's cells by their knobs, whatever their condition is named, and
// pairs them with the real side's main; the report says what the model ran.
// Cells of another condition are not the model side: it is not measured.
func TestFidelityReferenceFromModelCondition(t *testing.T) {
	parallel := engineStorm(t, "reference-model-parallel", "model", "main/writes=parallel")
	model := engineStorm(t, "reference-model", "model", "main")
	real := engineStorm(t, "reference-real", "devkit", "main")
	for _, tc := range []struct {
		name      string
		model     string
		args      []string
		code      int
		condition string // the report's model_condition
	}{
		{"parallel cells, parallel condition", parallel, []string{"--model-condition", "main/writes=parallel"}, cli.ExitOK, "main/writes=parallel"},
		{"parallel cells, main", parallel, nil, cli.ExitGateFailed, ""},
		{"main cells, parallel condition", model, []string{"--model-condition", "main/writes=parallel"}, cli.ExitGateFailed, "main/writes=parallel"},
		{"main cells, main spelled as an override", model, []string{"--model-condition", "main/writes=serial"}, cli.ExitOK, "main/writes=serial"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"fidelity", "--reference", "devkit", "--from", tc.model, "--from", real, "--format", "json"}, tc.args...)
			code, stdout, stderr := run(t.Context(), args...)
			if code != tc.code {
				t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tc.code, stdout, stderr)
			}
			var rep fidelity.ReferenceReport
			if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
				t.Fatalf("stdout is not a reference report: %v\n%s", err, stdout)
			}
			if rep.ModelCondition != tc.condition {
				t.Errorf("model_condition %q, want %q", rep.ModelCondition, tc.condition)
			}
			measured := rep.Storms["devkit-local"].Model != ""
			if measured != (tc.code == cli.ExitOK) {
				t.Errorf("model side measured: %v (storms %+v), want %v", measured, rep.Storms, tc.code == cli.ExitOK)
			}
			if tc.code == cli.ExitOK && (rep.Compared == 0 || rep.Unknown != 0) {
				t.Errorf("%d figures compared, %d unknown: want every figure paired", rep.Compared, rep.Unknown)
			}
		})
	}
}

// TestFidelityReferenceContracts: the report carries one claim per
// contract, unknown (never pass) on storms whose real runs recorded no
// spec version, spec 9's included; a contract's condition is a model
// condition only against the channel that carries it, and --model-world
// takes one --world.
func TestFidelityReferenceContracts(t *testing.T) {
	model := engineStorm(t, "reference-model", "model", "main")
	real := engineStorm(t, "reference-real", "devkit", "main")
	code, stdout, stderr := run(t.Context(), "fidelity", "--reference", "devkit", "--from", model, "--from", real, "--format", "json")
	if code != cli.ExitOK {
		t.Fatalf("exit %d, want 0\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	var rep fidelity.ReferenceReport
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
		t.Fatalf("stdout is not a reference report: %v\n%s", err, stdout)
	}
	if len(rep.Contracts) != len(fidelity.Contracts()) {
		t.Fatalf("%d contract claims, want %d", len(rep.Contracts), len(fidelity.Contracts()))
	}
	for _, c := range rep.Contracts {
		if c.Verdict != fidelity.Unknown {
			t.Errorf("%s: %s on real runs that recorded no spec (%s)", c.Contract.Name, c.Verdict, c.Evidence)
		}
	}
	for _, tc := range []struct {
		name string
		args []string
		want string // in stderr
	}{
		{"a contract against the stable channel", []string{"--model-condition", "slot+noop"}, "slot+noop against --devkit-channel beta"},
		{"another preset", []string{"--model-condition", "seq", "--devkit-channel", "beta"}, "must run the contract the real runtime runs"},
		{"model world for two worlds", []string{"--model-world", "local"}, "give one --world"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"fidelity", "--reference", "devkit", "--from", model, "--from", real}, tc.args...)
			code, _, stderr := run(t.Context(), args...)
			if code != cli.ExitUsage || !strings.Contains(stderr, tc.want) {
				t.Errorf("exit %d, stderr %q; want %d and %q", code, stderr, cli.ExitUsage, tc.want)
			}
		})
	}
}
