package cli

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stormctl/stormctl/internal/storm/stormdir"
)

// TestStoppedWhereSaysWhatWasKept checks the line a storm that stopped
// early ends with: what became of its directory, and whether --resume
// continues it.
func TestStoppedWhereSaysWhatWasKept(t *testing.T) {
	t.Parallel()
	down := &InfraError{Err: errors.New("open world postgres: connect to db:5432/app: store unavailable: connection refused")}
	for _, tc := range []struct {
		name    string
		err     error
		kept    bool // the directory holds a storm.json
		resumed bool
		want    string
		code    int
	}{
		{"store down before the first run", down, false, false,
			"stormctl: open world postgres: connect to db:5432/app: store unavailable: connection refused; nothing was measured and nothing was kept\n", ExitInfra},
		{"store down when resumed", down, true, true,
			"stormctl: open world postgres: connect to db:5432/app: store unavailable: connection refused; the storm in DIR is as it was: --resume DIR continues it once that is fixed\n", ExitInfra},
		{"store down after runs were measured", down, true, false,
			"stormctl: open world postgres: connect to db:5432/app: store unavailable: connection refused; the runs measured so far are in DIR: --resume DIR continues the storm once that is fixed\n", ExitInfra},
		{"interrupted with runs kept", ErrInterrupted, true, false,
			"stormctl: interrupted; the partial table is above and what was measured is in DIR: stormctl storm --resume DIR continues the storm\n", ExitInterrupted},
		{"interrupted before the directory was made", ErrInterrupted, false, false,
			"stormctl: interrupted; partial results above and in the output directory\n", ExitInterrupted},
		{"bad usage is left as it is", &UsageError{Err: errors.New("--runs must be in [1, 1000000], got 0")}, true, false,
			"stormctl: --runs must be in [1, 1000000], got 0\n", ExitUsage},
		{"done", nil, true, false, "", ExitOK},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := filepath.Join(t.TempDir(), "storm")
			if tc.kept {
				if err := os.MkdirAll(dir, 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(dir, stormdir.FileStorm), []byte("{}"), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			var line strings.Builder
			code := ExitCode(stoppedWhere(tc.err, dir, tc.resumed), &line)
			if got := strings.ReplaceAll(line.String(), dir, "DIR"); got != tc.want || code != tc.code {
				t.Errorf("exit %d, printed\n  %q\nwant exit %d,\n  %q", code, got, tc.code, tc.want)
			}
		})
	}
}
