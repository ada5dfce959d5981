package cli_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stormctl/stormctl/internal/cli"
	"github.com/stormctl/stormctl/internal/history"
	"github.com/stormctl/stormctl/internal/tools/replay"
)

// schema1Corrupted is the corrupted step-storm run of the stored storm
// schema1Storm.
const schema1Corrupted = "wrun_01M8YS0VCHWFHAAWY6QB8S4FS3"

// TestReplayCommand: replay re-executes a stored corrupted run from the
// pages its invocations read and reproduces its recorded divergence every
// time (exit 0), printing the summary and the invocations' table, or the
// whole report with --format json; the options parse --repeat.
func TestReplayCommand(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "storm")
	if err := os.CopyFS(dir, os.DirFS(schema1Storm)); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := run(t.Context(), "replay", dir, schema1Corrupted, "--repeat", "3")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, want := range []string{schema1Corrupted + " (local/step-storm/main, corrupted): the recorded divergence (inv-53: replay divergence: ",
		"reproduced 3 of 3 times from the recorded reads", "diverged replays: 17 recorded, 17 in the first repetition", "│ inv-53 ", "3/3"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("stdout lacks %q:\n%s", want, stdout)
		}
	}
	code, stdout, stderr = run(t.Context(), "replay", dir, schema1Corrupted, "--format", "json")
	if code != 0 {
		t.Fatalf("--format json: exit %d: %s", code, stderr)
	}
	var rep replay.Report
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
		t.Fatalf("--format json: %v\n%s", err, stdout)
	}
	if rep.Outcome != history.Corrupted || rep.Verdict != replay.Every || rep.Reproduced != 1 || rep.Recorded == nil || len(rep.Invocations) == 0 {
		t.Errorf("--format json: outcome %s, verdict %q, reproduced %d, recorded %+v, %d invocations", rep.Outcome, rep.Verdict, rep.Reproduced, rep.Recorded, len(rep.Invocations))
	}
	if o := parseOptions(t, cli.NewCmdReplay, "DIR", "RUN", "--repeat", "10"); o.Dir != "DIR" || o.RunID != "RUN" || o.Repeat != 10 {
		t.Errorf("options %+v", o)
	}
}

// TestReplayLiveStorm: a corrupted run of a fresh step-storm replays with
// its divergence reproduced every time; skipped when the storm corrupted
// none (TestReplayCommand holds a recorded one).
func TestReplayLiveStorm(t *testing.T) {
	if testing.Short() {
		t.Skip("storms for half a minute")
	}
	t.Setenv("TMPDIR", t.TempDir())
	dir := filepath.Join(t.TempDir(), "storm")
	sharpStorm(t.Context(), t, dir)
	runs, err := openStorm(t, dir).Runs()
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range runs {
		if r.Outcome != history.Corrupted {
			continue
		}
		code, stdout, stderr := run(t.Context(), "replay", dir, r.RunID, "--repeat", "2")
		if code != 0 || !strings.Contains(stdout, "reproduced 2 of 2 times") {
			t.Errorf("replay %s: exit %d\n%s%s", r.RunID, code, stdout, stderr)
		}
		return
	}
	t.Skip("no run of this step-storm was corrupted: nothing to replay")
}
