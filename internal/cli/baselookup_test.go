package cli_test

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/stormctl/stormctl/internal/base/filetest"
	"github.com/stormctl/stormctl/internal/cli"
	"github.com/stormctl/stormctl/internal/storm/stormdir"
)

// actionStep returns the run script of the step with the given id in the
// repository's action.yml.
func actionStep(t *testing.T, id string) string {
	t.Helper()
	b, err := os.ReadFile(filetest.Repo("action.yml"))
	if err != nil {
		t.Fatal(err)
	}
	var a struct {
		Runs struct {
			Steps []struct {
				ID  string `yaml:"id"`
				Run string `yaml:"run"`
			} `yaml:"steps"`
		} `yaml:"runs"`
	}
	if err := yaml.Unmarshal(b, &a); err != nil {
		t.Fatalf("action.yml: %v", err)
	}
	for _, s := range a.Runs.Steps {
		if s.ID == id {
			return s.Run
		}
	}
	t.Fatalf("action.yml has no step with id %q", id)
	return ""
}

// storeMerged merges the shards of a storm of 24 runs per cell over
// gateCells, each holding held[i] runs of every cell (gone: not given),
// into the stand-in gh's state as run id's merged storm on main.
func storeMerged(t *testing.T, state, id string, held []int) {
	t.Helper()
	const gone = -1
	tmp := t.TempDir()
	args := []string{"merge"}
	for i, h := range held {
		if h == gone {
			continue
		}
		dir := filepath.Join(tmp, fmt.Sprintf("storm-shard-%d", i+1))
		writeGateShard(t, dir, stormdir.Shard{Index: i + 1, Count: len(held)}, 24, h)
		args = append(args, dir)
	}
	out := filepath.Join(state, "runs", "main", id, "stormctl-merged")
	if code, _, stderr := run(t.Context(), append(args, "--out", out)...); code != cli.ExitOK {
		t.Fatalf("merge: exit %d:\n%s", code, stderr)
	}
}

// TestBaseLookupTakesTheNewestWholeStorm runs action.yml's base-storm step
// (its bash script as written, stormctl being this test binary and gh the
// act harness's stand-in) against stored runs of the base branch: a
// partial storm (a shard lost), a run without the artifact and a storm that
// cannot be read are passed over for the newest whole one, and a branch
// with none says so and finds nothing (the no-worse gate is then skipped
// and the comment says there was no base storm).
func TestBaseLookupTakesTheNewestWholeStorm(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash on PATH: the action's steps are bash scripts")
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	script := actionStep(t, "base")
	whole, partial := []int{6, 6, 6, 6}, []int{6, 6, -1, 6}
	tests := []struct {
		name   string
		stored func(t *testing.T, state string)
		found  string // the run whose storm is the base; "" none
		says   []string
	}{
		{
			name: "the newest storm partial, an older one whole",
			stored: func(t *testing.T, state string) {
				storeMerged(t, state, "100", whole)
				storeMerged(t, state, "300", partial)
				if err := os.MkdirAll(filepath.Join(state, "runs", "main", "200"), 0o755); err != nil {
					t.Fatal(err) // a run that stored no merged storm
				}
			},
			found: "100",
			says: []string{
				"partial: shard 3/4 was not merged",
				"run 300 of storm.yml on main stored a partial storm: looking further back",
				"the base storm: run 100 of storm.yml on main",
			},
		},
		{
			name: "the newest storm unreadable",
			stored: func(t *testing.T, state string) {
				storeMerged(t, state, "100", whole)
				storeMerged(t, state, "200", whole)
				cutRuns(t, filepath.Join(state, "runs", "main", "200", "stormctl-merged"))
			},
			found: "100",
			says: []string{
				"could not read the storm run 200 of storm.yml on main stored (above): looking further back",
				"the base storm: run 100 of storm.yml on main",
			},
		},
		{
			name:   "only partial storms",
			stored: func(t *testing.T, state string) { storeMerged(t, state, "100", partial) },
			says: []string{
				"run 100 of storm.yml on main stored a partial storm: looking further back",
				"no whole stored storm of storm.yml on main in its last 10 runs: nothing to compare with",
			},
		},
		{
			name: "the newest storm whole",
			stored: func(t *testing.T, state string) {
				storeMerged(t, state, "100", partial)
				storeMerged(t, state, "200", whole)
			},
			found: "200",
			says:  []string{"gate passed: the storm is whole: 12 cells", "the base storm: run 200 of storm.yml on main"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			state, bin, work := filepath.Join(root, "state"), filepath.Join(root, "bin"), filepath.Join(root, "work")
			for _, d := range []string{state, bin, work} {
				if err := os.MkdirAll(d, 0o755); err != nil {
					t.Fatal(err)
				}
			}
			tc.stored(t, state)
			gh, err := filepath.Abs("../ghaction/act/bin/gh")
			if err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(gh, filepath.Join(bin, "gh")); err != nil {
				t.Fatal(err)
			}
			shim := fmt.Sprintf("#!/bin/sh\n%s=1 exec %q \"$@\"\n", mainEnv, exe)
			if err := os.WriteFile(filepath.Join(bin, "stormctl"), []byte(shim), 0o755); err != nil {
				t.Fatal(err)
			}
			output := filepath.Join(root, "github-output")
			cmd := exec.CommandContext(t.Context(), bash, "--noprofile", "--norc", "-eo", "pipefail", "-c", script)
			cmd.Dir = work
			cmd.Env = append(os.Environ(), "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"),
				"STORMCTL_ACT_STATE="+state, "GITHUB_OUTPUT="+output, "GITHUB_REPOSITORY=stormctl/stormctl",
				"GH_TOKEN=stand-in", "BASE=main", "WORKFLOW=storm.yml", "ARTIFACT=stormctl-merged")
			var out bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &out
			if err := cmd.Run(); err != nil {
				t.Fatalf("the base step failed: %v\n%s", err, out.String())
			}
			t.Logf("the base step printed:\n%s", out.String())
			for _, w := range tc.says {
				if !strings.Contains(out.String(), w) {
					t.Errorf("the base step does not say %q", w)
				}
			}
			got, err := os.ReadFile(output)
			if err != nil {
				t.Fatal(err)
			}
			if want := fmt.Sprintf("found=%v\n", tc.found != ""); string(got) != want {
				t.Errorf("GITHUB_OUTPUT = %q, want %q", got, want)
			}
			if _, err := os.Stat(filepath.Join(work, "base-candidate")); !os.IsNotExist(err) {
				t.Errorf("base-candidate left behind (%v)", err)
			}
			base := filepath.Join(work, "base", stormdir.FileStorm)
			if tc.found == "" {
				if _, err := os.Stat(base); !os.IsNotExist(err) {
					t.Errorf("no base storm wanted, but %s is there (%v)", base, err)
				}
				return
			}
			want, err := os.ReadFile(filepath.Join(state, "runs", "main", tc.found, "stormctl-merged", stormdir.FileStorm))
			if err != nil {
				t.Fatal(err)
			}
			if got, err := os.ReadFile(base); err != nil || !bytes.Equal(got, want) {
				t.Errorf("base/storm.json is not run %s's (%v)", tc.found, err)
			}
		})
	}
}
