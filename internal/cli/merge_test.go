package cli_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sync/errgroup"

	"github.com/stormctl/stormctl/internal/cli"
	"github.com/stormctl/stormctl/internal/storm/stormdir"
	"github.com/stormctl/stormctl/reports"
)

// TestMergeShards runs one tiny storm whole and as --shard 1/2 and 2/2 (all
// three at once), merges the shards, and checks that the merged storm's run
// counts equal the whole storm's, that it reads back like any storm, and
// that merge refuses what is not two distinct shards of one storm.
func TestMergeShards(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir())
	root := t.TempDir()
	whole, s1, s2 := filepath.Join(root, "whole"), filepath.Join(root, "s1"), filepath.Join(root, "s2")
	sums := make([]*reports.Summary, 3)
	var g errgroup.Group
	for i, job := range []struct {
		dir   string
		shard stormdir.Shard
	}{{whole, stormdir.Shard{}}, {s1, stormdir.Shard{Index: 1, Count: 2}}, {s2, stormdir.Shard{Index: 2, Count: 2}}} {
		g.Go(func() error {
			sums[i] = tinyStorm(t.Context(), t, job.dir, job.shard)
			return nil
		})
	}
	_ = g.Wait()
	if t.Failed() {
		t.FailNow()
	}

	merged := filepath.Join(root, "merged")
	code, stdout, stderr := run(t.Context(), "merge", s2, s1, "--out", merged, "--format", "json")
	if code != cli.ExitOK {
		t.Fatalf("merge: exit %d, stderr:\n%s", code, stderr)
	}
	if !strings.Contains(stderr, "merge: 2 shards (1/2, 2/2) into "+merged+"; checked: every cell's runs equal the sum of its shards'") ||
		!strings.Contains(stderr, "local/control/main: 3 runs = 2 (1/2) + 1 (2/2)") {
		t.Errorf("stderr does not state the count check:\n%s", stderr)
	}
	var printed reports.Summary
	if err := json.Unmarshal([]byte(stdout), &printed); err != nil {
		t.Fatalf("stdout is not a summary: %v\n%s", err, stdout)
	}
	if len(printed.Cells) != len(sums[0].Cells) {
		t.Fatalf("merged %d cells, the whole storm has %d", len(printed.Cells), len(sums[0].Cells))
	}
	for i, want := range sums[0].Cells {
		got := printed.Cells[i]
		if got.Key() != want.Key() || got.Runs != want.Runs || got.Runs != sums[1].Cells[i].Runs+sums[2].Cells[i].Runs {
			t.Errorf("cell %d: merged %s has %d runs; the whole storm's %s has %d, the shards %d + %d",
				i, got.Key(), got.Runs, want.Key(), want.Runs, sums[1].Cells[i].Runs, sums[2].Cells[i].Runs)
		}
	}

	// The merged directory is a whole storm: storm.json without a shard,
	// every run's final log and history, a summary report agrees with.
	meta, err := stormdir.ReadMeta(merged)
	if err != nil {
		t.Fatal(err)
	}
	if !meta.Config.Shard.IsZero() || meta.Config.Runs != 3 {
		t.Errorf("merged storm.json: shard %q, runs %d; want no shard, 3 runs", meta.Config.Shard, meta.Config.Runs)
	}
	st, err := stormdir.LoadStorm(merged)
	if err != nil || len(st.Notes) > 0 {
		t.Fatalf("the merged storm does not read back cleanly: %v %v", err, st.Notes)
	}
	history := readFile(t, filepath.Join(merged, stormdir.FileHistory))
	for _, r := range st.Runs {
		if _, err := os.Stat(filepath.Join(merged, stormdir.DirEvents, r.CellKey.Dir(), r.RunID+".jsonl")); err != nil {
			t.Errorf("run %s has no final log: %v", r.RunID, err)
		}
		if !bytes.Contains(history, []byte(`"`+r.RunID+`"`)) {
			t.Errorf("run %s has no history", r.RunID)
		}
	}
	code, reported, _ := run(t.Context(), "report", merged, "--format", "json")
	if code != cli.ExitOK || reported != stdout {
		t.Errorf("report of the merged storm (exit %d) differs from what merge printed:\n%s\n%s", code, reported, stdout)
	}

	// Refusals: exit 2, one line, nothing written.
	otherSeed := filepath.Join(root, "other-seed")
	if err := os.CopyFS(otherSeed, os.DirFS(s2)); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(otherSeed, stormdir.FileStorm)
	writeFile(t, path, bytes.Replace(readFile(t, path), []byte(`"seed": 7`), []byte(`"seed": 8`), 1))
	tests := []struct {
		name string
		args []string
		want []string
	}{
		{"the same shard twice", []string{s1, s1}, []string{"shard 1/2 is given twice"}},
		{"a whole storm", []string{s1, whole}, []string{whole, "is a whole storm, not a shard"}},
		{"another seed", []string{s1, otherSeed}, []string{"not shards of one storm", "config seed (7 vs 8)"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "merged")
			code, stdout, stderr := run(t.Context(), append(append([]string{"merge"}, tc.args...), "--out", out)...)
			if code != cli.ExitUsage || stdout != "" {
				t.Errorf("exit %d, stdout %q; want %d and nothing", code, stdout, cli.ExitUsage)
			}
			if strings.Count(stderr, "\n") != 1 {
				t.Errorf("stderr is not one line:\n%s", stderr)
			}
			for _, w := range tc.want {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr %q does not mention %q", stderr, w)
				}
			}
			if _, err := os.Stat(out); err == nil {
				t.Errorf("a refused merge created %s", out)
			}
		})
	}
}

func TestStormShardFlag(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want stormdir.Shard
	}{{nil, stormdir.Shard{}}, {[]string{"--shard", "2/3"}, stormdir.Shard{Index: 2, Count: 3}}} {
		if got := parseOptions(t, cli.NewCmdStorm, tc.args...).Config.Shard; got != tc.want {
			t.Errorf("storm %v: Config.Shard = %+v, want %+v", tc.args, got, tc.want)
		}
	}
}
