package cli_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/stormctl/stormctl/internal/base/filetest"
	"github.com/stormctl/stormctl/internal/base/texttest"
	"github.com/stormctl/stormctl/internal/cli"
	"github.com/stormctl/stormctl/internal/history"
	"github.com/stormctl/stormctl/internal/storm/stormdir"
	"github.com/stormctl/stormctl/internal/tools/fidelity"
)

// TestFidelityFrom judges stored fixture storms (testdata/storms/fidelity-*.txt)
// without running anything.
func TestFidelityFrom(t *testing.T) {
	tests := []struct {
		name string
		// args may hold {NAME} for fixture storm fidelity-NAME, {both} for a
		// fidelity --out holding local/ and postgres/, {out} for a fresh
		// directory.
		args []string
		code int
		// want are stdout's lines, in order, each containing its string
		// (other lines may come between).
		want []string
		// files must exist afterwards; {out} as in args.
		files []string
	}{
		{"one world, every claim passes", []string{"--from", "{local}"}, cli.ExitOK,
			[]string{"local (", "main step-storm is heavily corrupted", "24/24 (100%)", "PASS", "fidelity: 8 of 8 claims pass"}, nil},
		{"two storms, seq's claims on postgres", []string{"--from", "{local},{postgres}"}, cli.ExitOK,
			[]string{"local (", "postgres (", "seq cuts main's step-storm corrupted ≥ 5x", "20/24 (83.3%) → 2/24 (8.3%) (10.0x)", "fidelity: 16 of 16 claims pass"}, nil},
		{"a fidelity --out with one storm per world", []string{"--from", "{both}"}, cli.ExitOK,
			[]string{"local (", "postgres (", "fidelity: 16 of 16 claims pass"}, nil},
		{"--world narrows the stored worlds", []string{"--from", "{both}", "--world", "postgres"}, cli.ExitOK,
			[]string{"postgres (", "fidelity: 8 of 8 claims pass"}, nil},
		{"a failing claim exits 1 and says why", []string{"--from", "{fail}"}, cli.ExitGateFailed,
			[]string{"FAIL", "FAIL callsite-step: callsite silent 3, needs 0", "FAIL target-clean: the fence never rejected a write",
				"fidelity: 6 of 8 claims pass (2 fail)"}, nil},
		{"an interrupted storm is unknown, not a pass", []string{"--from", "{interrupted}"}, cli.ExitGateFailed,
			[]string{"note control-clean: judged with 1 infra run in its cells",
				"unknown callsite-hook: local/hook-storm/callsite has no runs (interrupted?)",
				"unknown tail-fence-hook-not-better: local/hook-storm/tail-fence has no runs",
				"fidelity: 6 of 8 claims pass (2 unknown)"}, nil},
		{"a storm whose control runs all stuck is unknown, not clean", []string{"--from", "{stuck-control}"}, cli.ExitGateFailed,
			[]string{"unknown control-clean: local/control/main: not enough evidence: 0 decided runs of 24 (24 stuck); at least 20 needed",
				"unknown target-clean: local/control/seq+callsite+ordered: not enough evidence: 0 decided runs of 24 (24 stuck)",
				"fidelity: 6 of 8 claims pass (2 unknown)"}, nil},
		{"a world asked for and not stored is unknown", []string{"--from", "{local}", "--world", "local,postgres"}, cli.ExitGateFailed,
			[]string{"local (", "postgres\n", "unknown main-step-corrupted: postgres/step-storm/main is not in the storm", "fidelity: 8 of 16 claims pass (8 unknown)"}, nil},
		{"markdown", []string{"--from", "{fail}", "--format", "markdown"}, cli.ExitGateFailed,
			[]string{"#### local (", "claim", "|:---", "| FAIL", "- FAIL callsite-step", "**fidelity: 6 of 8 claims pass (2 fail)**"}, nil},
		{"--out writes fidelity.json", []string{"--from", "{local}", "--out", "{out}"}, cli.ExitOK,
			[]string{"fidelity: 8 of 8 claims pass"}, []string{"{out}/fidelity.json"}},
	}
	dirs := map[string]string{}
	for _, name := range []string{"local", "postgres", "fail", "interrupted", "stuck-control"} {
		dirs[name] = fixtureStorm(t, "fidelity-"+name)
	}
	both := filepath.Join(t.TempDir(), "fid")
	for _, w := range []string{"local", "postgres"} {
		if err := os.MkdirAll(filepath.Join(both, w), 0o755); err != nil {
			t.Fatal(err)
		}
		for _, f := range []string{stormdir.FileStorm, stormdir.FileRuns} {
			b, err := os.ReadFile(filepath.Join(dirs[w], f))
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(both, w, f), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	dirs["both"] = both
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "out")
			expand := func(s string) string {
				s = strings.ReplaceAll(s, "{out}", out)
				for k, v := range dirs {
					s = strings.ReplaceAll(s, "{"+k+"}", v)
				}
				return s
			}
			args := []string{"fidelity"}
			for _, a := range tc.args {
				args = append(args, expand(a))
			}
			code, stdout, stderr := run(t.Context(), args...)
			if code != tc.code {
				t.Errorf("exit %d, want %d; stdout:\n%sstderr:\n%s", code, tc.code, stdout, stderr)
			}
			if stderr != "" {
				t.Errorf("stderr = %q, want nothing", stderr)
			}
			texttest.InOrder(t, "stdout", stdout, tc.want)
			lines := strings.Split(strings.TrimSuffix(stdout, "\n"), "\n")
			if last := strings.TrimPrefix(lines[len(lines)-1], "**"); !strings.HasPrefix(last, "fidelity: ") {
				t.Errorf("the last line is not the fidelity line:\n%s", stdout)
			}
			for _, f := range tc.files {
				if _, err := os.Stat(expand(f)); err != nil {
					t.Errorf("%v", err)
				}
			}
			for _, d := range dirs { // --from never writes into the storms
				if _, err := os.Stat(filepath.Join(d, cli.FidelityFile)); err == nil {
					t.Errorf("%s was written into %s", cli.FidelityFile, d)
				}
			}
		})
	}
}

// TestFidelityFromJSON checks the JSON document: what --format json prints
// and --out writes.
func TestFidelityFromJSON(t *testing.T) {
	out := filepath.Join(t.TempDir(), "out")
	code, stdout, stderr := run(t.Context(), "fidelity", "--from", fixtureStorm(t, "fidelity-fail"), "--format", "json", "--out", out)
	if code != cli.ExitGateFailed {
		t.Fatalf("exit %d, want %d; stderr:\n%s", code, cli.ExitGateFailed, stderr)
	}
	var printed, written fidelity.Report
	if err := json.Unmarshal([]byte(stdout), &printed); err != nil {
		t.Fatalf("stdout is not a fidelity report: %v\n%s", err, stdout)
	}
	filetest.ReadJSON(t, filepath.Join(out, cli.FidelityFile), &written)
	if !reflect.DeepEqual(printed, written) {
		t.Errorf("stdout and %s differ:\n%+v\n%+v", cli.FidelityFile, printed, written)
	}
	if printed.Schema != fidelity.SchemaVersion || printed.Passed != 6 || printed.Failed != 2 || printed.Unknown != 0 || len(printed.Results) != 8 {
		t.Errorf("report = %+v", printed)
	}
	for _, r := range printed.Results {
		if r.World != "local" || r.Claim == "" || r.Reason == "" {
			t.Errorf("result %+v", r)
		}
	}
}

// TestFidelityRefusesAmbiguousCells: a cell in two --from storms is refused.
func TestFidelityRefusesAmbiguousCells(t *testing.T) {
	code, stdout, stderr := run(t.Context(), "fidelity", "--from", fixtureStorm(t, "fidelity-local")+","+fixtureStorm(t, "fidelity-fail"))
	if code != cli.ExitUsage || stdout != "" || !strings.Contains(stderr, "local/step-storm/main is in both") || strings.Count(stderr, "\n") != 1 {
		t.Errorf("exit %d, stdout %q, stderr %q; want 2 and one line naming the cell", code, stdout, stderr)
	}
}

func TestFidelityFlags(t *testing.T) {
	got := parseOptions(t, cli.NewCmdFidelity)
	if !reflect.DeepEqual(got.Worlds, []string{"local", "postgres"}) || got.WorldsGiven || got.Runs != 24 || got.VercelRuns != cli.DefaultVercelRuns ||
		got.TimeScale != 1 || got.Timeout != 240*time.Second || got.RunsInFlight != 0 || got.Out != "" || got.Format != "table" || got.From != nil {
		t.Errorf("defaults = %+v", got)
	}
}

// TestFidelityInterrupted runs the command's storm path under a context
// already cancelled (Ctrl-C before the first run ended): the storm of the
// first world is written and stops, the other world is never stormed, every
// claim is unknown, fidelity.json is written, and the exit is 130.
func TestFidelityInterrupted(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	t.Setenv("TMPDIR", t.TempDir()) // the worlds' files
	out := filepath.Join(t.TempDir(), "fid")
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	code, stdout, stderr := run(ctx, "fidelity", "--world", "local,vercel", "--out", out)
	if code != cli.ExitInterrupted {
		t.Fatalf("exit %d, want %d; stdout:\n%sstderr:\n%s", code, cli.ExitInterrupted, stdout, stderr)
	}
	if !strings.Contains(stderr, "fidelity: local (1 of 2): 14 cells x 24 runs") || strings.Contains(stderr, "vercel (2 of 2)") {
		t.Errorf("stderr does not show local stormed alone:\n%s", stderr)
	}
	if !strings.HasSuffix(stdout, "fidelity: 0 of 14 claims pass (14 unknown)\n") {
		t.Errorf("stdout:\n%s", stdout)
	}
	var rep fidelity.Report
	filetest.ReadJSON(t, filepath.Join(out, cli.FidelityFile), &rep)
	if !rep.Interrupted || rep.Unknown != 14 || rep.Storms["local"] != filepath.Join(out, "local") || rep.Storms["vercel"] != "" {
		t.Errorf("%s = %+v", cli.FidelityFile, rep)
	}
	var meta struct{ Cells []history.CellKey }
	filetest.ReadJSON(t, filepath.Join(out, "local", stormdir.FileStorm), &meta)
	byName := func(a, b history.CellKey) int { return strings.Compare(a.String(), b.String()) }
	want := fidelity.CellsFor("local")
	slices.SortFunc(meta.Cells, byName)
	slices.SortFunc(want, byName)
	if !reflect.DeepEqual(meta.Cells, want) {
		t.Errorf("the local storm's cells =\n%v\nwant\n%v", meta.Cells, want)
	}
	if _, err := os.Stat(filepath.Join(out, "vercel", stormdir.FileStorm)); err == nil {
		t.Errorf("the vercel storm was started")
	}
}
