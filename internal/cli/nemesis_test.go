package cli_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stormctl/stormctl/internal/cli"
)

// TestNemesisUsage: every bad --nemesis value, and every endpoint or kind
// the nemesis must not act on, exits 2 with one line naming the flag,
// before a storm starts (an already-cancelled context keeps a regression
// from running one).
func TestNemesisUsage(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want []string
	}{
		{"unknown kind", []string{"--nemesis", "reboot"}, []string{"--nemesis", `"reboot"`, "pg-restart", "fs-unavailable"}},
		{"kind twice", []string{"--nemesis", "latency,latency"}, []string{"--nemesis", `"latency"`, "twice"}},
		{"no kind", []string{"--nemesis", ","}, []string{"--nemesis", "no fault kind"}},
		{"kind without its world", []string{"--world", "local", "--nemesis", "pg-restart"}, []string{"--nemesis pg-restart", "postgres", "--world local"}},
		{"faults zero", []string{"--nemesis", "all", "--nemesis-faults", "0"}, []string{"--nemesis-faults", "0"}},
		{"faults too many", []string{"--nemesis", "all", "--nemesis-faults", "1000"}, []string{"--nemesis-faults", "1000"}},
		{"window too short", []string{"--nemesis", "all", "--nemesis-window", "1ms"}, []string{"--nemesis-window", "1ms"}},
		{"window too long", []string{"--nemesis", "all", "--nemesis-window", "2h"}, []string{"--nemesis-window", "2h"}},
		{"gap negative", []string{"--nemesis", "all", "--nemesis-gap", "-1s"}, []string{"--nemesis-gap", "-1s"}},
		{"remote pg", []string{"--world", "postgres", "--nemesis", "all", "--pg-url", "postgres://me:secret@db.example.com:5432/x"},
			[]string{"--nemesis", "loopback", "--pg-url", "db.example.com:5432"}},
		{"pg socket", []string{"--world", "postgres", "--nemesis", "latency", "--pg-url", "host=/var/run/postgresql dbname=x"},
			[]string{"--nemesis", "unix socket"}},
		{"pg-restart with pg-url", []string{"--world", "postgres", "--nemesis", "pg-restart", "--pg-url", "postgres://me@127.0.0.1:5432/x"},
			[]string{"--nemesis pg-restart", "--pg-url"}},
		{"remote ingest", []string{"--world", "vercel", "--nemesis", "all", "--ingest-url", "http://ingest.example.com"},
			[]string{"--nemesis", "loopback", "--ingest-url", "ingest.example.com"}},
		{"ingest-503 with ingest-url", []string{"--world", "vercel", "--nemesis", "ingest-503", "--ingest-url", "http://127.0.0.1:8080"},
			[]string{"--nemesis ingest-503", "--ingest-url"}},
		{"remote dynamo", []string{"--world", "vercel", "--nemesis", "latency", "--dynamo-endpoint", "https://dynamodb.us-east-1.amazonaws.com"},
			[]string{"--nemesis", "loopback", "--dynamo-endpoint"}},
		{"redis-down with redis-url", []string{"--world", "vercel", "--nemesis", "redis-down", "--redis-url", "redis://127.0.0.1:6379"},
			[]string{"--nemesis redis-down", "--redis-url"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "out")
			ctx, cancel := context.WithCancel(t.Context())
			cancel()
			code, stdout, stderr := run(ctx, append([]string{"storm", "--out", out}, tc.args...)...)
			if code != cli.ExitUsage || stdout != "" {
				t.Errorf("exit code %d, stdout %q; want %d and nothing", code, stdout, cli.ExitUsage)
			}
			if strings.Count(stderr, "\n") != 1 || !strings.HasPrefix(stderr, "stormctl: ") {
				t.Fatalf("stderr = %q, want one line starting with \"stormctl: \"", stderr)
			}
			for _, w := range tc.want {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr %q does not mention %q", stderr, w)
				}
			}
			if strings.Contains(stderr, "secret") {
				t.Errorf("stderr %q prints a password", stderr)
			}
			if _, err := os.Stat(filepath.Join(out, "storm.json")); err == nil {
				t.Errorf("a storm started: %s/storm.json exists", out)
			}
		})
	}
}
