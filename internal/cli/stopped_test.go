package cli_test

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stormctl/stormctl/internal/cli"
	"github.com/stormctl/stormctl/internal/history"
	"github.com/stormctl/stormctl/internal/storm/stormdir"
)

// TestStormEndsAsItSays runs storms a new user starts and stops as they
// tried them, and checks what each leaves and says beyond its one line
// (docs/exit-codes.md's bad-inputs table checks the lines): a --timeout
// that cuts off a run's start files it stuck, as help defines stuck; a
// storm that stops with exit 3 before its first run leaves no directory,
// so the same command meets the same cause again, not "already holds a
// storm"; Ctrl-C after a run keeps it and says --resume DIR.
func TestStormEndsAsItSays(t *testing.T) {
	t.Parallel()
	local := []string{"storm", "--world", "local", "--scenario", "control", "--condition", "main", "--time-scale", "0.1"}
	for _, tc := range []struct {
		name string
		args []string
		// cancelAfterRuns cancels the storm once runs.jsonl holds this
		// many lines (0: never).
		cancelAfterRuns int
		code            int
		line            string // the stderr line starting "stormctl: ", "" for none
		check           func(t *testing.T, out string)
		again           bool // run the same command again: same code and line
	}{
		{
			name: "a timeout that cuts off the runs' start",
			args: append(local, "--runs", "2", "--timeout", "1ms"),
			code: cli.ExitOK,
			check: func(t *testing.T, out string) {
				runs, err := openStorm(t, out).Runs()
				if err != nil || len(runs) != 2 {
					t.Fatalf("%d runs, %v", len(runs), err)
				}
				for _, r := range runs {
					// Cut off while starting, or started within 1ms and
					// cut off after: stuck either way.
					if r.Outcome != history.Stuck || !strings.HasPrefix(r.Detail, "no terminal event before the timeout") {
						t.Errorf("run %s: %s %q, want stuck: no terminal event before the timeout...", r.RunID, r.Outcome, r.Detail)
					}
				}
			},
		},
		{
			name:  "a store that does not answer, before the first run",
			args:  []string{"storm", "--world", "postgres", "--scenario", "control", "--condition", "main", "--runs", "1", "--pg-url", "postgres://u:secret@127.0.0.1:1/app"},
			code:  cli.ExitInfra,
			line:  "stormctl: open world postgres: connect to 127.0.0.1:1/app: store unavailable: connection refused (check --pg-url: host, port, user, password and database); nothing was measured and nothing was kept",
			check: noDirectory,
			again: true,
		},
		{
			name:            "Ctrl-C after a run",
			args:            append(local, "--runs", "40", "--runs-in-flight", "1"),
			cancelAfterRuns: 1,
			code:            cli.ExitInterrupted,
			line:            "stormctl: interrupted; the partial table is above and what was measured is in OUT: stormctl storm --resume OUT continues the storm",
			check: func(t *testing.T, out string) {
				if runs, err := openStorm(t, out).Runs(); err != nil || len(runs) == 0 {
					t.Errorf("the interrupted storm kept %d runs (%v), want the ones it measured", len(runs), err)
				}
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			out := filepath.Join(t.TempDir(), "out")
			args := append(append([]string{}, tc.args...), "--out", out)
			times := 1
			if tc.again {
				times = 2
			}
			for range times {
				ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
				defer cancel()
				if tc.cancelAfterRuns > 0 {
					go cancelAfterRuns(ctx, cancel, filepath.Join(out, stormdir.FileRuns), tc.cancelAfterRuns)
				}
				code, _, stderr := run(ctx, args...)
				var lines []string
				for _, l := range strings.Split(stderr, "\n") {
					if strings.HasPrefix(l, "stormctl: ") {
						lines = append(lines, strings.ReplaceAll(l, out, "OUT"))
					}
				}
				if code != tc.code {
					t.Fatalf("exit %d, want %d; stderr:\n%s", code, tc.code, stderr)
				}
				switch {
				case tc.line == "" && len(lines) > 0:
					t.Errorf("printed %q, want no stormctl: line", lines)
				case tc.line != "" && (len(lines) != 1 || lines[0] != tc.line):
					t.Errorf("printed\n  %q\nwant\n  %q", lines, tc.line)
				}
				tc.check(t, out)
			}
		})
	}
}

// noDirectory fails the test when the storm left its directory.
func noDirectory(t *testing.T, out string) {
	t.Helper()
	if _, err := os.Stat(out); !errors.Is(err, fs.ErrNotExist) {
		entries, _ := os.ReadDir(out)
		t.Errorf("the storm measured nothing but left %s (%d entries, stat: %v)", out, len(entries), err)
	}
}

// cancelAfterRuns calls cancel once the file at path holds n lines, or
// when ctx ends.
func cancelAfterRuns(ctx context.Context, cancel context.CancelFunc, path string, n int) {
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		if b, err := os.ReadFile(path); err == nil && strings.Count(string(b), "\n") >= n {
			cancel()
			return
		}
	}
}
