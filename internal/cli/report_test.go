package cli_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stormctl/stormctl/internal/cli"
	"github.com/stormctl/stormctl/internal/engines/builtinengines"
	"github.com/stormctl/stormctl/internal/storm"
	"github.com/stormctl/stormctl/internal/storm/stormdir"
	"github.com/stormctl/stormctl/reports"
	"github.com/stormctl/stormctl/reports/table"
	"github.com/stormctl/stormctl/worlds"
	"github.com/stormctl/stormctl/worlds/local"
)

// tinyStorm runs a real storm on the local world (the control scenario,
// everything at a tenth of its time, no latency) into dir and returns the
// summary the storm printed.
func tinyStorm(ctx context.Context, t *testing.T, dir string, shard stormdir.Shard) *reports.Summary {
	t.Helper()
	var reg worlds.Registry
	local.Register(&reg)
	p, err := storm.NewPlan(stormdir.Config{
		Worlds: []string{"local"}, Scenarios: []string{"control"}, Conditions: []string{"main", "seq"},
		Runs: 3, TimeScale: 0.1, Latency: "none", Timeout: 30 * time.Second, Seed: 7, Out: dir, Shard: shard,
	}.Defaults(), &reg, builtinengines.Engines())
	if err != nil {
		t.Fatalf("NewPlan: %v", err)
	}
	ctx, cancel := context.WithTimeout(ctx, 45*time.Second)
	defer cancel()
	sum, err := storm.Run(ctx, p, storm.Deps{Worlds: &reg, Version: testVersion})
	if err != nil {
		t.Fatalf("storm %s: %v", shard, err)
	}
	return sum
}

// TestReportRendersTheStorm: report on a real storm's directory prints, in
// every format, exactly what the storm printed.
func TestReportRendersTheStorm(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir())
	dir := filepath.Join(t.TempDir(), "storm")
	sum := tinyStorm(t.Context(), t, dir, stormdir.Shard{})
	for _, format := range cli.Formats() {
		t.Run(string(format), func(t *testing.T) {
			var want bytes.Buffer
			if err := format.Print(&want, table.Summary{Summary: sum}); err != nil {
				t.Fatal(err)
			}
			code, stdout, stderr := run(t.Context(), "report", dir, "--format", string(format))
			if code != cli.ExitOK || stderr != "" {
				t.Fatalf("exit %d, stderr %q", code, stderr)
			}
			if stdout != want.String() {
				t.Errorf("report printed\n%s\nthe storm printed\n%s", stdout, want.String())
			}
		})
	}
}

// TestReportMalformed: a cut-off runs.jsonl or an unknown schema version is
// named with its file and line, exits 2, and what could be read is printed.
func TestReportMalformed(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir())
	orig := filepath.Join(t.TempDir(), "storm")
	sum := tinyStorm(t.Context(), t, orig, stormdir.Shard{})
	total := 0
	for _, c := range sum.Cells {
		total += c.Runs
	}
	tests := []struct {
		name string
		// damage breaks the copy of the storm in dir.
		damage func(t *testing.T, dir string)
		// runs is how many runs the printed table must still count.
		runs int
		// stderr must contain each.
		want []string
	}{
		{"runs.jsonl cut off mid-line", func(t *testing.T, dir string) {
			path := filepath.Join(dir, stormdir.FileRuns)
			b := readFile(t, path)
			last := bytes.LastIndexByte(b[:len(b)-1], '\n') // the start of the last line
			cut := last + 1 + (len(b)-last-1)/2             // half way into it
			writeFile(t, path, b[:cut])
		}, total - 1, []string{fmt.Sprintf("%s:%d: malformed line (cut off or not JSON)", stormdir.FileRuns, total), "summary.json counts"}},
		{"storm.json of an unknown schema", func(t *testing.T, dir string) {
			path := filepath.Join(dir, stormdir.FileStorm)
			writeFile(t, path, bytes.Replace(readFile(t, path), []byte(`"schema": 2`), []byte(`"schema": 99`), 1))
		}, total, []string{stormdir.FileStorm + ":2: unknown schema version 99 (this build reads 1 and 2)"}},
		{"summary.json of an unknown schema", func(t *testing.T, dir string) {
			path := filepath.Join(dir, stormdir.FileSummary)
			writeFile(t, path, bytes.Replace(readFile(t, path), []byte(`"schema": 2`), []byte(`"schema": 3`), 1))
		}, total, []string{stormdir.FileSummary + ":2: unknown schema version 3 (this build reads 1 and 2)"}},
		{"summary.json cut off", func(t *testing.T, dir string) {
			path := filepath.Join(dir, stormdir.FileSummary)
			b := readFile(t, path)
			writeFile(t, path, b[:len(b)/2])
		}, total, []string{stormdir.FileSummary + ":", "unexpected end of JSON input"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "storm")
			if err := os.CopyFS(dir, os.DirFS(orig)); err != nil {
				t.Fatal(err)
			}
			tc.damage(t, dir)
			code, stdout, stderr := run(t.Context(), "report", dir, "--format", "json")
			if code != cli.ExitUsage {
				t.Errorf("exit %d, want %d; stderr:\n%s", code, cli.ExitUsage, stderr)
			}
			if !strings.Contains(stderr, "stormctl: ") {
				t.Errorf("stderr has no error line:\n%s", stderr)
			}
			for _, w := range tc.want {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr does not mention %q:\n%s", w, stderr)
				}
			}
			var got reports.Summary
			if err := json.Unmarshal([]byte(stdout), &got); err != nil {
				t.Fatalf("what could be read was not printed: %v\n%s", err, stdout)
			}
			runs := 0
			for _, c := range got.Cells {
				runs += c.Runs
			}
			if len(got.Cells) != len(sum.Cells) || runs != tc.runs {
				t.Errorf("printed %d cells, %d runs; want %d cells, %d runs", len(got.Cells), runs, len(sum.Cells), tc.runs)
			}

			// The table, too, is printed before exit 2.
			code, stdout, _ = run(t.Context(), "report", dir)
			if code != cli.ExitUsage || !strings.Contains(stdout, "│ world │") {
				t.Errorf("table format: exit %d, stdout:\n%s", code, stdout)
			}
			for _, c := range got.Cells {
				if line := fmt.Sprintf("%s %s %s: %s", c.World, c.Scenario, c.Condition, c.Compact()); !strings.Contains(stdout, line) {
					t.Errorf("the table lacks %q:\n%s", line, stdout)
				}
			}
		})
	}
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func writeFile(t *testing.T, path string, b []byte) {
	t.Helper()
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}
