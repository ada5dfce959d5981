package cli_test

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stormctl/stormctl/internal/cli"
	"github.com/stormctl/stormctl/internal/eventlog"
	"github.com/stormctl/stormctl/internal/storm/stormdir"
	"github.com/stormctl/stormctl/worlds"
	"github.com/stormctl/stormctl/worlds/devkitworld"
	"github.com/stormctl/stormctl/worlds/local"
)

// panicky is a local world whose appends panic from the nth on: a bug in a
// world, met on the goroutine of a run (n = 1: run_created) or of the
// engine (n > 1: an invocation's append).
type panicky struct {
	worlds.World
	n       int64
	appends *atomic.Int64
}

func (p panicky) Append(ctx context.Context, runID string, d []eventlog.Draft) ([]eventlog.Event, error) {
	if p.appends.Add(1) >= p.n {
		panic("boom in a world's Append")
	}
	return p.World.Append(ctx, runID, d)
}

// withPanickyWorld adds world "panicky" (panicking from its nth append) to
// the factory's worlds.
func withPanickyWorld(n int64) func(*cli.Factory) {
	return func(f *cli.Factory) {
		f.Worlds = func(s worlds.Setup, logger *slog.Logger) (*worlds.Registry, func() error) {
			reg, stop := cli.DefaultWorlds(s, logger)
			var appends atomic.Int64
			reg.Register(worlds.Entry{Name: "panicky", Schemes: []string{string(eventlog.SchemeULID)},
				Open: func(ctx context.Context, o worlds.Options) (worlds.World, error) {
					w, err := local.Open(ctx, o)
					return panicky{World: w, n: n, appends: &appends}, err
				}})
			return reg, stop
		}
	}
}

// TestInternalErrors: a bug (a panic, on the command's goroutine or any a
// storm owns) or an artifact that cannot be written exits 4 with one line
// saying what failed and where the artifacts are; a panic's line says it
// is a bug and where its stack is. Never 2: the input was fine.
func TestInternalErrors(t *testing.T) {
	storm := []string{"storm", "--scenario", "control", "--condition", "main", "--runs", "2", "--time-scale", "0.1", "--out", "{out}"}
	tests := []struct {
		name  string
		edit  func(*cli.Factory)
		args  []string
		setup func(t *testing.T, out string)
		// want are regular expressions the line must match, in order.
		want    []string
		wantBug bool
	}{
		{"a panic in a command", func(f *cli.Factory) {
			f.Worlds = func(worlds.Setup, *slog.Logger) (*worlds.Registry, func() error) { panic("boom in a command") }
		}, storm, nil, []string{`internal error: panic: boom in a command`}, true},
		{"a panic on a run's goroutine", withPanickyWorld(1), append(storm, "--world", "panicky"), nil,
			[]string{`internal error: panic: boom in a world's Append`}, true},
		{"a panic on an engine goroutine", withPanickyWorld(2), append(storm, "--world", "panicky"), nil,
			[]string{`internal error: panic: boom in a world's Append`}, true},
		{"disk full writing runs.jsonl", nil, storm, func(t *testing.T, out string) {
			if _, err := os.Stat("/dev/full"); err != nil {
				t.Skip("no /dev/full to stand for a full disk")
			}
			if err := os.MkdirAll(out, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink("/dev/full", filepath.Join(out, stormdir.FileRuns)); err != nil {
				t.Fatal(err)
			}
		}, []string{`internal error: write runs\.jsonl: .*no space left on device`}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("TMPDIR", t.TempDir()) // the worlds' scratch, and a panic's stack file
			out := filepath.Join(t.TempDir(), "out")
			if tc.setup != nil {
				tc.setup(t, out)
			}
			args := make([]string, len(tc.args))
			for i, a := range tc.args {
				args[i] = strings.ReplaceAll(a, "{out}", out)
			}
			code, _, stderr := runWith(t.Context(), tc.edit, args...)
			if code != cli.ExitInternal {
				t.Errorf("exit code = %d, want %d (stderr %q)", code, cli.ExitInternal, stderr)
			}
			lines := strings.Split(strings.TrimSuffix(stderr, "\n"), "\n")
			last := lines[len(lines)-1]
			if strings.Count(stderr, "stormctl: ") != 1 || !strings.HasPrefix(last, "stormctl: ") {
				t.Fatalf("stderr = %q, want one last line starting with \"stormctl: \"", stderr)
			}
			want := append(tc.want, regexp.QuoteMeta("artifacts so far are in "+out)+"$")
			if tc.wantBug {
				want = append(want, `; this is a bug in stormctl, please report it with the stack in (\S+); `)
			}
			for _, w := range want {
				if !regexp.MustCompile(w).MatchString(last) {
					t.Errorf("%q does not match %q", last, w)
				}
			}
			if tc.wantBug {
				m := regexp.MustCompile(`the stack in (\S+);`).FindStringSubmatch(last)
				if m == nil {
					return
				}
				stack, err := os.ReadFile(m[1])
				if err != nil || !strings.Contains(string(stack), "goroutine ") || !strings.Contains(string(stack), "panic") {
					t.Errorf("stack file %s: %v\n%s", m[1], err, stack)
				}
			}
			left, _ := filepath.Glob(filepath.Join(os.Getenv("TMPDIR"), "stormctl-[0-9]*"))
			if len(left) > 0 {
				t.Errorf("the storm left its scratch directories: %v", left)
			}
		})
	}
}

// lostWindow is a local world whose SelfCheck says, from the first run
// on, what a devkit world says when the sidecar's delay hook no longer
// finds its point in the package.
type lostWindow struct{ worlds.World }

func (lostWindow) SelfCheck() error {
	return &devkitworld.WindowError{World: "devkit-local", Package: "@workflow/world-local", Version: "9.9.9",
		Type: eventlog.StepCreated, Asked: devkitworld.WindowCheckAfter, Hook: devkitworld.HookEventsFile}
}

// TestWindowNotSpentIsInfra: a storm whose world's delay hook never fired
// stops with exit 3 and one line naming the package and its version; the
// run recorded before stays.
func TestWindowNotSpentIsInfra(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir())
	out := filepath.Join(t.TempDir(), "out")
	edit := func(f *cli.Factory) {
		f.Worlds = func(s worlds.Setup, logger *slog.Logger) (*worlds.Registry, func() error) {
			reg, stop := cli.DefaultWorlds(s, logger)
			reg.Register(worlds.Entry{Name: "lost-window", Schemes: []string{string(eventlog.SchemeULID)},
				Open: func(ctx context.Context, o worlds.Options) (worlds.World, error) {
					w, err := local.Open(ctx, o)
					return lostWindow{World: w}, err
				}})
			return reg, stop
		}
	}
	code, _, stderr := runWith(t.Context(), edit, "storm", "--world", "lost-window", "--scenario", "control", "--condition", "main",
		"--runs", "3", "--runs-in-flight", "1", "--time-scale", "0.1", "--latency", "fixed:1ms", "--out", out)
	if code != cli.ExitInfra {
		t.Errorf("exit code = %d, want %d (stderr %q)", code, cli.ExitInfra, stderr)
	}
	lines := strings.Split(strings.TrimSuffix(stderr, "\n"), "\n")
	last := lines[len(lines)-1]
	if strings.Count(stderr, "stormctl: ") != 1 || !strings.HasPrefix(last, "stormctl: ") {
		t.Fatalf("stderr = %q, want one last line starting with \"stormctl: \"", stderr)
	}
	for _, w := range []string{"lost-window/control/main", "@workflow/world-local 9.9.9", "--latency none"} {
		if !strings.Contains(last, w) {
			t.Errorf("%q lacks %q", last, w)
		}
	}
	if b, err := os.ReadFile(filepath.Join(out, stormdir.FileRuns)); err != nil || strings.Count(string(b), "\n") != 1 {
		t.Errorf("runs.jsonl: %v, %d lines; want the one run recorded before the check", err, strings.Count(string(b), "\n"))
	}
}
