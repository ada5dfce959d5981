package cli_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stormctl/stormctl/internal/base/filetest"
)

// schema1Storm is a storm directory written by the last build of artifact
// schema 1 (camelCase keys in storm.json, runs.jsonl and history.jsonl):
// local world, control and step-storm under main and
// seq+callsite+ordered, one run a cell, trimmed to three cells.
var schema1Storm = filetest.Repo("internal", "storm", "stormdir", "testdata", "schema1")

// TestReadsSchema1Storms: every command that reads a stored storm prints,
// on a storm of schema 1, what the build that wrote it printed.
// testdata/schema1/*.golden were written by that build (commit dbf2176,
// the last of schema 1) and are never regenerated, only edited where a
// checker's counting changed on purpose since (forensics*.golden: a
// non-prefix read of local/step-storm/main, 20 -> 19, since loads are judged
// on their own cursor's prefix, docs/forensics.md; the classes line names
// whose classes it counts, runs.jsonl's or this build's; the dup ends and
// refused columns, checkers added 2026-12-06; "1 rejection", no longer
// "1 rejections", and explain's rejections with their verdicts, 12-06
// too; worlds.golden's devkit-vercel line, which names the beta channel's
// packages since that channel runs there, 12-06): each holds the command
// ("# stormctl ARGS", DIR the storm's directory), its exit code, stdout,
// stderr, and summary.json when the command rewrote it. replay-*.golden,
// conditions, worlds and scenarios.golden were written by the build before
// the 12-06 layout (ec5c594), so that the move into internal/ and engines
// as plug-ins are checked to print what it printed; conditions and worlds
// were written again when spec 9's preset and the repeats knob were added
// (a column and a preset more, nothing else changed), and conditions and
// scenarios again when spec 8's hook-claim knob and scenario were added
// (a column and a scenario more), and scenarios when fan-out was (a
// scenario more).
func TestReadsSchema1Storms(t *testing.T) {
	goldens, err := filepath.Glob(filepath.Join("testdata", "schema1", "*.golden"))
	if err != nil || len(goldens) == 0 {
		t.Fatalf("no golden files: %v", err)
	}
	for _, path := range goldens {
		t.Run(strings.TrimSuffix(filepath.Base(path), ".golden"), func(t *testing.T) {
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			head, _, _ := bytes.Cut(want, []byte("\n"))
			args := strings.Fields(strings.TrimPrefix(string(head), "# stormctl "))
			dir := filepath.Join(t.TempDir(), "storm")
			if err := os.CopyFS(dir, os.DirFS(schema1Storm)); err != nil {
				t.Fatal(err)
			}
			for i, a := range args {
				if a == "DIR" {
					args[i] = dir
				}
			}
			code, stdout, stderr := run(t.Context(), args...)
			var got strings.Builder
			got.WriteString(string(head) + "\nexit " + strconv.Itoa(code) + "\n--- stdout\n" + stdout + "--- stderr\n" + stderr)
			if after, err := os.ReadFile(filepath.Join(dir, "summary.json")); err == nil {
				if before, _ := os.ReadFile(filepath.Join(schema1Storm, "summary.json")); !bytes.Equal(after, before) {
					got.WriteString("--- summary.json\n" + string(after))
				}
			}
			if g := strings.ReplaceAll(got.String(), dir, "DIR"); g != string(want) {
				t.Errorf("stormctl %s differs from what the schema 1 build printed:\n%s", strings.Join(args, " "), lineDiff(string(want), g))
			}
		})
	}
}

// lineDiff names the first line where got departs from want.
func lineDiff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	for i := range max(len(w), len(g)) {
		var wl, gl string
		if i < len(w) {
			wl = w[i]
		}
		if i < len(g) {
			gl = g[i]
		}
		if wl != gl {
			return "line " + strconv.Itoa(i+1) + ":\nwant " + strconv.Quote(wl) + "\ngot  " + strconv.Quote(gl)
		}
	}
	return "(same lines)"
}

// TestResumeRefusesSchema1: a storm of schema 1 is read by every command
// but continued by none: its runs would be appended in another casing
// than its own (exit 2, the directory untouched).
func TestResumeRefusesSchema1(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "storm")
	if err := os.CopyFS(dir, os.DirFS(schema1Storm)); err != nil {
		t.Fatal(err)
	}
	before, err := os.ReadFile(filepath.Join(dir, "runs.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	code, _, stderr := run(t.Context(), "storm", "--resume", dir)
	if code != 2 || !strings.Contains(stderr, "artifacts are of schema 1, this build writes 2") {
		t.Fatalf("exit %d, stderr %q; want 2 naming the schema", code, stderr)
	}
	if after, err := os.ReadFile(filepath.Join(dir, "runs.jsonl")); err != nil || !bytes.Equal(after, before) {
		t.Errorf("runs.jsonl changed: %v", err)
	}
}
