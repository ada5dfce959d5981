package cli_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stormctl/stormctl/internal/base/leftover"
	"github.com/stormctl/stormctl/internal/storm"
	"github.com/stormctl/stormctl/internal/storm/stormdir"
	"github.com/stormctl/stormctl/reports"
)

// stormctl returns a command running this test binary as stormctl with
// args, its temp directory tmp (where its worlds' scratch goes).
func stormctl(tmp string, args ...string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), mainEnv+"=1", "TMPDIR="+tmp)
	return cmd
}

// cellRuns counts each cell's run indexes in dir's runs.jsonl, failing on
// an index recorded twice.
func cellRuns(t *testing.T, dir string) map[string][]int {
	t.Helper()
	runs, err := openStorm(t, dir).Runs()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]int{}
	for _, r := range runs {
		k := r.CellKey.String()
		if slices.Contains(out[k], r.Index) {
			t.Errorf("%s: run index %d of %s recorded twice", dir, r.Index, k)
		}
		out[k] = append(out[k], r.Index)
	}
	for _, idx := range out {
		slices.Sort(idx)
	}
	return out
}

// scratch lists the stormctl directories under tmp.
func scratch(t *testing.T, tmp string) []string {
	t.Helper()
	left, err := filepath.Glob(filepath.Join(tmp, leftover.Prefix+"*"))
	if err != nil {
		t.Fatal(err)
	}
	return left
}

// TestKillThenResume: a storm killed with SIGKILL once some runs finished,
// then resumed with --resume, holds the runs an uninterrupted storm of the
// same seed holds (each cell's run indexes once each, under the same ids
// RunID gives), and no scratch directory or process is left behind: the
// killed storm's scratch directory is removed by the resumed one.
func TestKillThenResume(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("needs /proc to tell a killed owner from a live one")
	}
	tmp := t.TempDir()
	dir := filepath.Join(t.TempDir(), "killed")
	whole := filepath.Join(t.TempDir(), "whole")
	args := []string{"storm", "--world", "local", "--scenario", "step-storm,control", "--condition", "main",
		"--runs", "6", "--time-scale", "0.25", "--seed", "5", "--format", "json"}

	// The uninterrupted storm runs beside the killed one and its resume.
	uninterrupted := stormctl(t.TempDir(), append(args, "--out", whole)...)
	var wholeErr bytes.Buffer
	uninterrupted.Stderr = &wholeErr
	if err := uninterrupted.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = uninterrupted.Process.Kill(); _ = uninterrupted.Wait() })

	killed := stormctl(tmp, append(args, "--out", dir)...)
	if err := killed.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = killed.Process.Kill(); _ = killed.Wait() })
	runsFile := filepath.Join(dir, stormdir.FileRuns)
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if b, _ := os.ReadFile(runsFile); bytes.Count(b, []byte("\n")) >= 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the storm recorded no 2 runs in 60 s")
		}
	}
	if err := killed.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if err := killed.Wait(); err == nil || !strings.Contains(err.Error(), "killed") {
		t.Fatalf("the storm ended with %v, want killed", err)
	}
	recorded := 0
	for _, idx := range cellRuns(t, dir) {
		recorded += len(idx)
	}
	if recorded >= 12 {
		t.Fatalf("the storm finished all %d runs before it was killed: nothing to resume", recorded)
	}
	left := scratch(t, tmp)
	if len(left) != 1 {
		t.Fatalf("the killed storm left %v, want its one scratch directory (a killed process cannot clean up)", left)
	}

	resumed := stormctl(tmp, "storm", "--resume", dir, "--format", "json")
	var stdout, stderr bytes.Buffer
	resumed.Stdout, resumed.Stderr = &stdout, &stderr
	if err := resumed.Run(); err != nil {
		t.Fatalf("storm --resume: %v\n%s", err, stderr.String())
	}
	for _, w := range []string{
		fmt.Sprintf("storm: removed %s, left behind by stormctl pid %d, which was killed", left[0], killed.Process.Pid),
		fmt.Sprintf("storm: resume %s: %d runs recorded, %d to run", dir, recorded, 12-recorded),
	} {
		if !strings.Contains(stderr.String(), w) {
			t.Errorf("stderr does not say %q:\n%s", w, stderr.String())
		}
	}
	if err := uninterrupted.Wait(); err != nil {
		t.Fatalf("the uninterrupted storm: %v\n%s", err, wholeErr.String())
	}

	got, want := cellRuns(t, dir), cellRuns(t, whole)
	if len(want) != 2 || fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("resumed storm's run indexes %v, the uninterrupted storm's %v", got, want)
	}
	for k, idx := range want {
		if !slices.Equal(idx, []int{0, 1, 2, 3, 4, 5}) {
			t.Errorf("uninterrupted %s ran indexes %v", k, idx)
		}
	}
	var sum reports.Summary
	if err := json.Unmarshal(stdout.Bytes(), &sum); err != nil {
		t.Fatalf("--format json: %v\n%s", err, stdout.String())
	}
	for _, c := range sum.Cells {
		if c.Runs != 6 {
			t.Errorf("the resumed storm's table counts %d runs of %s, want 6", c.Runs, c.Key())
		}
	}
	meta, err := stormdir.ReadMeta(dir)
	if err != nil {
		t.Fatal(err)
	}
	runs, err := openStorm(t, dir).Runs()
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range runs {
		k := r.CellKey
		if want := storm.RunID(5, meta.Started, k, r.Index); r.RunID != want {
			t.Errorf("run %d of %s is %s, want %s", r.Index, k, r.RunID, want)
		}
	}
	if code, _, stderr := run(t.Context(), "report", dir); code != 0 || stderr != "" {
		t.Errorf("report of the resumed storm: exit %d, %s", code, stderr)
	}
	if left := scratch(t, tmp); len(left) != 0 {
		t.Errorf("left behind after the resume: %v", left)
	}
	for _, p := range []*os.Process{killed.Process, resumed.Process, uninterrupted.Process} {
		if leftover.Alive(leftover.Proc{PID: p.Pid}) {
			t.Errorf("stormctl pid %d still runs", p.Pid)
		}
	}
}
