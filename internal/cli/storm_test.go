package cli_test

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/stormctl/stormctl/internal/base/filetest"
	"github.com/stormctl/stormctl/internal/cli"
	"github.com/stormctl/stormctl/internal/history"
	"github.com/stormctl/stormctl/internal/storm/stormdir"
	"github.com/stormctl/stormctl/reports"
)

func TestStormFlags(t *testing.T) {
	// The flags' defaults are Config.Defaults (--out aside: it is chosen at
	// run time from the clock).
	defaults := stormdir.Config{}.Defaults()
	defaults.Out = ""
	defaults.Seed = 1
	tests := []struct {
		name string
		args []string
		// want edits the defaults into the Config the flags should give.
		want       func(c *stormdir.Config)
		wantFormat cli.Format
		wantCPU    string
	}{
		{"defaults", nil, func(*stormdir.Config) {}, "table", ""},
		{
			"conditions with overrides",
			[]string{"--condition", "main,seq/wake=ordered"},
			func(c *stormdir.Config) { c.Conditions = []string{"main", "seq/wake=ordered"} },
			"table", "",
		},
		{
			"repeated flags add up",
			[]string{"--condition", "main", "--condition", "seq/wake=ordered/ids=callsite", "--world", "local", "--scenario", "control,hook-storm"},
			func(c *stormdir.Config) {
				c.Conditions = []string{"main", "seq/wake=ordered/ids=callsite"}
				c.Worlds = []string{"local"}
				c.Scenarios = []string{"control", "hook-storm"}
			},
			"table", "",
		},
		{
			"every flag",
			[]string{
				"--world", "local", "--scenario", "control", "--condition", "seq", "--runs", "3", "--concurrency", "4",
				"--runs-in-flight", "5", "--seed", "6", "--time-scale", "0.25", "--rounds", "9", "--latency", "fixed:5ms",
				"--timeout", "90s", "--page-size", "7", "--out", "somewhere", "--keep", "--format", "json",
				"--cpu-profile", "cpu.out", "--hosts", "3", "--admission", "off",
			},
			func(c *stormdir.Config) {
				*c = stormdir.Config{
					Worlds: []string{"local"}, Scenarios: []string{"control"}, Conditions: []string{"seq"},
					Runs: 3, Concurrency: 4, RunsInFlight: 5, Seed: 6, TimeScale: 0.25, Rounds: 9, Latency: "fixed:5ms",
					Timeout: 90 * time.Second, PageSize: 7, Out: "somewhere", Keep: true, Hosts: 3, Admission: "off",
				}
			},
			"json", "cpu.out",
		},
		{
			// Parsing keeps what was typed; runStorm rejects it.
			"zero runs reach the options",
			[]string{"--runs", "0", "--time-scale", "0"},
			func(c *stormdir.Config) { c.Runs, c.TimeScale = 0, 0 },
			"table", "",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o := parseOptions(t, cli.NewCmdStorm, tc.args...)
			want := defaults
			tc.want(&want)
			if !reflect.DeepEqual(o.Config, want) {
				t.Errorf("Config =\n%+v\nwant\n%+v", o.Config, want)
			}
			if o.Format != tc.wantFormat {
				t.Errorf("Format = %q, want %q", o.Format, tc.wantFormat)
			}
			if o.CPUProfile != tc.wantCPU {
				t.Errorf("CPUProfile = %q, want %q", o.CPUProfile, tc.wantCPU)
			}
			if o.IO == nil || o.Factory == nil {
				t.Errorf("options lack their IO or Factory: %+v", o)
			}
		})
	}
}

func TestExitCode(t *testing.T) {
	tests := []struct {
		name     string
		err      error
		want     int
		wantLine string // "" means nothing is printed
	}{
		{"nil", nil, cli.ExitOK, ""},
		{"usage", &cli.UsageError{Err: errors.New("--runs must be at least 1")}, cli.ExitUsage, "stormctl: --runs must be at least 1\n"},
		{"wrapped usage", fmt.Errorf("storm: %w", &cli.UsageError{Err: errors.New("bad")}), cli.ExitUsage, "stormctl: storm: bad\n"},
		{"infra", &cli.InfraError{Err: errors.New("store down")}, cli.ExitInfra, "stormctl: store down\n"},
		{"wrapped infra", fmt.Errorf("cell: %w", &cli.InfraError{Err: errors.New("store down")}), cli.ExitInfra, "stormctl: cell: store down\n"},
		{"gate", cli.ErrGateFailed, cli.ExitGateFailed, ""},
		{"wrapped gate", fmt.Errorf("gate DIR: %w", cli.ErrGateFailed), cli.ExitGateFailed, ""},
		{"interrupted", cli.ErrInterrupted, cli.ExitInterrupted, "stormctl: interrupted; partial results above and in the output directory\n"},
		{"untyped", errors.New("something"), cli.ExitUsage, "stormctl: something\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var buf strings.Builder
			if got := cli.ExitCode(tc.err, &buf); got != tc.want {
				t.Errorf("ExitCode = %d, want %d", got, tc.want)
			}
			if buf.String() != tc.wantLine {
				t.Errorf("printed %q, want %q", buf.String(), tc.wantLine)
			}
		})
	}
}

// TestStormEndToEnd runs one real, tiny storm through the command line:
// one control run on the local world, its 5s sleeps scaled to 0.5s.
func TestStormEndToEnd(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	t.Setenv("TMPDIR", t.TempDir()) // the worlds' files
	out := filepath.Join(t.TempDir(), "storm")

	code, stdout, stderr := run(t.Context(), "storm", "--runs", "1", "--scenario", "control", "--condition", "main",
		"--time-scale", "0.1", "--out", out, "--format", "json")
	if code != cli.ExitOK {
		t.Fatalf("exit code %d, stderr:\n%s", code, stderr)
	}
	if strings.Contains(stderr, "stormctl:") {
		t.Errorf("stderr has an error:\n%s", stderr)
	}

	var sum reports.Summary
	if err := json.Unmarshal([]byte(stdout), &sum); err != nil {
		t.Fatalf("stdout is not a summary: %v\n%s", err, stdout)
	}
	if len(sum.Cells) != 1 {
		t.Fatalf("%d cells, want 1:\n%s", len(sum.Cells), stdout)
	}
	c := sum.Cells[0]
	if want := (history.CellKey{World: "local", Scenario: "control", Condition: "main"}); c.Key() != want {
		t.Errorf("cell %v, want %v", c.Key(), want)
	}
	if c.Runs != 1 || c.Completed != 1 {
		t.Errorf("runs = %d, completed = %d, want 1 and 1 (%s)", c.Runs, c.Completed, c.Compact())
	}

	for _, name := range []string{stormdir.FileStorm, stormdir.FileRuns, stormdir.FileHistory, stormdir.FileSummary, stormdir.FileMD} {
		fi, err := os.Stat(filepath.Join(out, name))
		if err != nil {
			t.Errorf("artifact missing: %v", err)
			continue
		}
		if fi.Size() == 0 {
			t.Errorf("%s is empty", name)
		}
	}
	if fi, err := os.Stat(filepath.Join(out, stormdir.DirEvents)); err != nil || !fi.IsDir() {
		t.Errorf("%s/ is not a directory: %v", stormdir.DirEvents, err)
	}
	if n := countLines(t, filepath.Join(out, stormdir.FileRuns)); n != 1 {
		t.Errorf("%s has %d lines, want 1", stormdir.FileRuns, n)
	}
	var onDisk reports.Summary
	filetest.ReadJSON(t, filepath.Join(out, stormdir.FileSummary), &onDisk)
	if !reflect.DeepEqual(onDisk.Cells, sum.Cells) {
		t.Errorf("%s cells differ from stdout:\n%+v\n%+v", stormdir.FileSummary, onDisk.Cells, sum.Cells)
	}
	var meta stormdir.Meta
	filetest.ReadJSON(t, filepath.Join(out, stormdir.FileStorm), &meta)
	if meta.Version != testVersion || meta.Config.Runs != 1 || meta.Config.TimeScale != 0.1 {
		t.Errorf("%s = %+v", stormdir.FileStorm, meta)
	}
}

func countLines(t *testing.T, path string) int {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	n := 0
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		n++
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return n
}
