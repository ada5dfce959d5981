package cli_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/stormctl/stormctl/internal/base/filetest"
	"github.com/stormctl/stormctl/internal/cli"
	"github.com/stormctl/stormctl/internal/engine"
	"github.com/stormctl/stormctl/internal/engine/conditions"
	"github.com/stormctl/stormctl/internal/engines/builtinengines"
	"github.com/stormctl/stormctl/scenarios"
	"github.com/stormctl/stormctl/worlds"
)

const testVersion = "v0.0.0-test"

// testFactory returns a factory over buffers: no terminals, logs discarded.
func testFactory() (f *cli.Factory, stdout, stderr *bytes.Buffer) {
	stdout, stderr = &bytes.Buffer{}, &bytes.Buffer{}
	f = &cli.Factory{
		IO:      &cli.IOStreams{In: strings.NewReader(""), Out: stdout, ErrOut: stderr},
		Version: testVersion,
		Worlds:  cli.DefaultWorlds,
		Engines: builtinengines.Engines(),
		Logger:  func() *slog.Logger { return slog.New(slog.DiscardHandler) },
	}
	return f, stdout, stderr
}

// run executes stormctl with args in-process, the way Main does, and
// returns its exit code and outputs.
func run(ctx context.Context, args ...string) (code int, stdout, stderr string) {
	return runWith(ctx, nil, args...)
}

// runWith is run with the test factory changed by edit first (nil: as is).
func runWith(ctx context.Context, edit func(*cli.Factory), args ...string) (code int, stdout, stderr string) {
	f, out, errOut := testFactory()
	if edit != nil {
		edit(f)
	}
	root := cli.NewCmdRoot(f)
	root.SetArgs(args)
	code = cli.ExitCode(cli.Execute(ctx, root), errOut)
	return code, out.String(), errOut.String()
}

// parseOptions runs the command newCmd builds with args and a runF that
// captures the parsed options instead of running the command.
func parseOptions[O any](t *testing.T, newCmd func(*cli.Factory, func(context.Context, *O) error) *cobra.Command, args ...string) *O {
	t.Helper()
	f, _, _ := testFactory()
	var got *O
	cmd := newCmd(f, func(_ context.Context, o *O) error {
		got = o
		return nil
	})
	cmd.SetArgs(args)
	cmd.SetOut(f.IO.Out)
	cmd.SetErr(f.IO.ErrOut)
	if err := cmd.ExecuteContext(t.Context()); err != nil {
		t.Fatalf("%s %v: %v", cmd.Name(), args, err)
	}
	if got == nil {
		t.Fatal("runF was not called")
	}
	return got
}

func presetNames() []string {
	var names []string
	for _, p := range conditions.Presets() {
		names = append(names, p.Name)
	}
	return names
}

func scenarioNames() []string {
	var names []string
	for _, s := range scenarios.Registry() {
		names = append(names, s.Name)
	}
	return names
}

func worldNames(t *testing.T) []string {
	r, stop := cli.DefaultWorlds(worlds.Setup{}, slog.New(slog.DiscardHandler))
	t.Cleanup(func() { _ = stop() })
	return r.Names()
}

// TestDefaultWorlds pins the built-in worlds.
func TestDefaultWorlds(t *testing.T) {
	names := worldNames(t)
	for _, w := range []string{"devkit-local", "devkit-postgres", "local", "postgres", "vercel"} {
		if !slices.Contains(names, w) {
			t.Errorf("world %s is not registered (got %v)", w, names)
		}
	}
}

// emptyDir returns an empty directory.
func emptyDir(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "empty")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestUsageErrors checks that bad usage or input exits 2 with one line on
// stderr that names the fault, before any storm starts. Each case runs under
// an already-cancelled context, so a regression that starts a storm ends at
// once instead of running it (and is caught by the stderr and artifact
// checks) rather than making the test slow.
func TestUsageErrors(t *testing.T) {
	keys := []string{"scheme", "fence", "on-reject", "ids", "wake", "admission", "guard", "seal", "seal-after"}
	tests := []struct {
		name string
		// args may hold {out}: a fresh directory under the test's temp dir,
		// or what out returns.
		args []string
		out  func(t *testing.T) string
		want []string // the stderr line must contain each
	}{
		{"unknown world", []string{"storm", "--world", "nope", "--out", "{out}"}, nil, []string{"--world", `"nope"`, "local"}},
		{"one unknown world of two", []string{"storm", "--world", "local,nope", "--out", "{out}"}, nil, []string{"--world", `"nope"`, "local"}},
		{"unknown scenario", []string{"storm", "--scenario", "nope", "--out", "{out}"}, nil,
			[]string{"--scenario", `"nope"`, "step-storm", "hook-storm", "control"}},
		{"unknown condition", []string{"storm", "--condition", "nope", "--out", "{out}"}, nil,
			append([]string{"--condition", `"nope"`}, presetNames()...)},
		{"unknown override key", []string{"storm", "--condition", "seq/bogus=1", "--out", "{out}"}, nil,
			append([]string{"--condition", `"bogus=1"`}, keys...)},
		{"unknown override value", []string{"storm", "--condition", "seq/wake=sideways", "--out", "{out}"}, nil,
			[]string{"--condition", "wake", `"sideways"`, "racy", "ordered"}},
		{"seal without slots", []string{"storm", "--condition", "seq/seal=noop", "--out", "{out}"}, nil,
			[]string{"--condition", "seal", "scheme=slot only"}},
		{"unknown seal", []string{"storm", "--condition", "slot/seal=sometimes", "--out", "{out}"}, nil,
			[]string{"--condition", "seal", `"sometimes"`, "noop"}},
		{"bad seal-after", []string{"storm", "--condition", "slot+noop/seal-after=soon", "--out", "{out}"}, nil,
			[]string{"--condition", "seal-after", `"soon"`}},
		{"condition twice", []string{"storm", "--condition", "main, main", "--out", "{out}"}, nil,
			[]string{"--condition", `"main"`, "twice"}},
		{"scheme the world lacks", []string{"storm", "--condition", "sequence", "--out", "{out}"}, nil,
			[]string{"--condition", `"sequence"`, "local"}},
		{"runs zero", []string{"storm", "--runs", "0", "--out", "{out}"}, nil, []string{"--runs", "0"}},
		{"runs negative", []string{"storm", "--runs", "-3", "--out", "{out}"}, nil, []string{"--runs", "-3"}},
		{"runs not a number", []string{"storm", "--runs", "many", "--out", "{out}"}, nil, []string{"--runs", `"many"`}},
		{"concurrency zero", []string{"storm", "--concurrency", "0", "--out", "{out}"}, nil, []string{"--concurrency"}},
		{"runs in flight zero", []string{"storm", "--runs-in-flight", "0", "--out", "{out}"}, nil, []string{"--runs-in-flight"}},
		{"page size zero", []string{"storm", "--page-size", "0", "--out", "{out}"}, nil, []string{"--page-size"}},
		{"timeout zero", []string{"storm", "--timeout", "0s", "--out", "{out}"}, nil, []string{"--timeout"}},
		{"time scale zero", []string{"storm", "--time-scale", "0", "--out", "{out}"}, nil, []string{"--time-scale"}},
		{"time scale too big", []string{"storm", "--time-scale", "1000", "--out", "{out}"}, nil, []string{"--time-scale", "1000"}},
		{"rounds zero", []string{"storm", "--rounds", "0", "--out", "{out}"}, nil, []string{"--rounds", "[1, 64]", "0"}},
		{"latency", []string{"storm", "--latency", "weird", "--out", "{out}"}, nil, []string{"--latency", `"weird"`, "seed", "none", "fixed:"}},
		{"format", []string{"storm", "--format", "xml", "--out", "{out}"}, nil, []string{"--format", `"xml"`, "table", "markdown", "json"}},
		{"out under a file", []string{"storm", "--out", "{out}"}, filetest.UnderFile, []string{"--out"}},
		{"out read-only", []string{"storm", "--out", "{out}"}, filetest.ReadOnlyDir, []string{"--out", "not writable"}},
		{"unknown storm flag", []string{"storm", "--nope", "--out", "{out}"}, nil, []string{"--nope"}},
		{"unknown root flag", []string{"--nope"}, nil, []string{"--nope"}},
		{"unknown subcommand", []string{"nope"}, nil, []string{`"nope"`}},
		{"storm argument", []string{"storm", "extra-arg", "--out", "{out}"}, nil, []string{"extra-arg"}},
		{"conditions argument", []string{"conditions", "extra-arg"}, nil, []string{"extra-arg"}},
		{"listing format", []string{"worlds", "--format", "xml"}, nil, []string{"--format", `"xml"`}},
		{"fidelity unknown world", []string{"fidelity", "--world", "local,nope", "--out", "{out}"}, nil, []string{"--world", `"nope"`, "local, postgres, vercel"}},
		{"fidelity world twice", []string{"fidelity", "--world", "local,local", "--out", "{out}"}, nil, []string{"--world", `"local"`, "twice"}},
		{"fidelity no world", []string{"fidelity", "--world", "", "--out", "{out}"}, nil, []string{"--world", "local"}},
		{"fidelity runs zero", []string{"fidelity", "--runs", "0", "--out", "{out}"}, nil, []string{"--runs", "0"}},
		{"fidelity vercel runs zero", []string{"fidelity", "--vercel-runs", "0", "--out", "{out}"}, nil, []string{"--vercel-runs", "0"}},
		{"fidelity runs in flight zero", []string{"fidelity", "--runs-in-flight", "0", "--out", "{out}"}, nil, []string{"--runs-in-flight"}},
		{"fidelity time scale zero", []string{"fidelity", "--time-scale", "0", "--out", "{out}"}, nil, []string{"--time-scale"}},
		{"fidelity timeout zero", []string{"fidelity", "--timeout", "0s", "--out", "{out}"}, nil, []string{"--timeout"}},
		{"fidelity format", []string{"fidelity", "--format", "xml", "--out", "{out}"}, nil, []string{"--format", `"xml"`, "table", "markdown", "json"}},
		{"fidelity out under a file", []string{"fidelity", "--world", "local", "--out", "{out}"}, filetest.UnderFile, []string{"--out"}},
		{"fidelity argument", []string{"fidelity", "extra-arg"}, nil, []string{"extra-arg"}},
		{"fidelity --from with --runs", []string{"fidelity", "--from", "{out}", "--runs", "3"}, nil, []string{"--runs", "--from"}},
		{"fidelity --from with an endpoint", []string{"fidelity", "--from", "{out}", "--pg-url", "postgres://x"}, nil, []string{"--pg-url", "--from"}},
		{"fidelity --from nothing there", []string{"fidelity", "--from", "{out}"}, nil, []string{"--from", "{out}"}},
		{"fidelity --from no storm in it", []string{"fidelity", "--from", "{out}"}, emptyDir, []string{"--from", "not a storm directory"}},
		{"fidelity --from unknown world", []string{"fidelity", "--from", "{out}", "--world", "nope"}, nil, []string{"--world", `"nope"`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "out")
			if tc.out != nil {
				out = tc.out(t)
			}
			args := slices.Clone(tc.args)
			for i, a := range args {
				args[i] = strings.ReplaceAll(a, "{out}", out)
			}
			ctx, cancel := context.WithCancel(t.Context())
			cancel()

			code, stdout, stderr := run(ctx, args...)
			if code != cli.ExitUsage {
				t.Errorf("exit code = %d, want %d", code, cli.ExitUsage)
			}
			if stdout != "" {
				t.Errorf("stdout = %q, want nothing", stdout)
			}
			if strings.Count(stderr, "\n") != 1 || !strings.HasSuffix(stderr, "\n") || !strings.HasPrefix(stderr, "stormctl: ") {
				t.Fatalf("stderr = %q, want one line starting with \"stormctl: \"", stderr)
			}
			for _, w := range tc.want {
				if w = strings.ReplaceAll(w, "{out}", out); !strings.Contains(stderr, w) {
					t.Errorf("stderr %q does not mention %q", stderr, w)
				}
			}
			if _, err := os.Stat(filepath.Join(out, "storm.json")); err == nil {
				t.Errorf("a storm started: %s/storm.json exists", out)
			}
		})
	}
}

func TestHelpHasExamples(t *testing.T) {
	f, _, _ := testFactory()
	commands := [][]string{{}} // the root
	for _, c := range cli.NewCmdRoot(f).Commands() {
		commands = append(commands, []string{c.Name()})
	}
	if len(commands) < 6 {
		t.Fatalf("only %d commands: %v", len(commands), commands)
	}
	for _, cmd := range commands {
		t.Run("stormctl "+strings.Join(cmd, " "), func(t *testing.T) {
			code, stdout, stderr := run(t.Context(), append(cmd, "--help")...)
			if code != cli.ExitOK || stderr != "" {
				t.Fatalf("exit %d, stderr %q", code, stderr)
			}
			if !strings.Contains(stdout, "\nExamples:\n") {
				t.Errorf("help has no Examples: section:\n%s", stdout)
			}
			if !strings.Contains(stdout, "stormctl "+strings.Join(cmd, " ")) {
				t.Errorf("help does not show the command in use:\n%s", stdout)
			}
		})
	}
}

func TestListings(t *testing.T) {
	tests := []struct {
		cmd    string
		header []string
		names  []string
	}{
		// a column per knob of the table, in its order
		{"conditions", append(append([]string{"preset"}, engine.KnobColumns()...), "about"), presetNames()},
		// a row per registered scenario and world (scenarios.TestRegistry
		// and TestDefaultWorlds pin the built-in ones)
		{"scenarios", []string{"scenario", "shape"}, scenarioNames()},
		{"worlds", []string{"world", "schemes", "conditions", "engines", "store"}, worldNames(t)},
	}
	for _, tc := range tests {
		t.Run(tc.cmd+"/table", func(t *testing.T) {
			for _, args := range [][]string{{tc.cmd}, {tc.cmd, "--format", "table"}} {
				code, stdout, stderr := run(t.Context(), args...)
				if code != cli.ExitOK || stderr != "" {
					t.Fatalf("%v: exit %d, stderr %q", args, code, stderr)
				}
				for _, w := range append(slices.Clone(tc.header), tc.names...) {
					if !strings.Contains(stdout, w) {
						t.Errorf("%v: output does not contain %q:\n%s", args, w, stdout)
					}
				}
			}
		})
		t.Run(tc.cmd+"/markdown", func(t *testing.T) {
			code, stdout, stderr := run(t.Context(), tc.cmd, "--format", "markdown")
			if code != cli.ExitOK || stderr != "" {
				t.Fatalf("exit %d, stderr %q", code, stderr)
			}
			// unpadded, like the result tables a markdown summary starts with
			if want := "| " + strings.Join(tc.header, " | ") + " |\n|" + strings.Repeat("---|", len(tc.header)) + "\n"; !strings.HasPrefix(stdout, want) {
				t.Errorf("markdown does not start with %q:\n%s", want, stdout)
			}
			if got, want := strings.Count(stdout, "\n"), 2+len(tc.names); got != want {
				t.Errorf("%d lines, want %d (header, alignment, a row each):\n%s", got, want, stdout)
			}
			for _, n := range tc.names {
				if !strings.Contains(stdout, "| "+n+" |") {
					t.Errorf("no row for %q:\n%s", n, stdout)
				}
			}
		})
		t.Run(tc.cmd+"/json", func(t *testing.T) {
			code, stdout, stderr := run(t.Context(), tc.cmd, "--format", "json")
			if code != cli.ExitOK || stderr != "" {
				t.Fatalf("exit %d, stderr %q", code, stderr)
			}
			var items []map[string]any
			if err := json.Unmarshal([]byte(stdout), &items); err != nil {
				t.Fatalf("not a JSON array of objects: %v\n%s", err, stdout)
			}
			var names []string
			for _, it := range items {
				name, _ := it["name"].(string)
				names = append(names, name)
			}
			if !slices.Equal(names, tc.names) {
				t.Errorf("names = %v, want %v", names, tc.names)
			}
		})
	}
}

func TestVersion(t *testing.T) {
	for _, args := range [][]string{{"version"}, {"--version"}} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			code, stdout, stderr := run(t.Context(), args...)
			if code != cli.ExitOK || stderr != "" {
				t.Fatalf("exit %d, stderr %q", code, stderr)
			}
			if !strings.HasPrefix(stdout, "stormctl ") || !strings.Contains(stdout, testVersion) || strings.Count(stdout, "\n") != 1 {
				t.Errorf("stdout = %q, want one line naming stormctl %s", stdout, testVersion)
			}
		})
	}
}
