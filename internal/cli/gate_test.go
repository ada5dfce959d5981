package cli_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stormctl/stormctl/internal/cli"
	"github.com/stormctl/stormctl/internal/history"
	"github.com/stormctl/stormctl/internal/storm/stormdir"
	"github.com/stormctl/stormctl/reports"
	"github.com/stormctl/stormctl/reports/gate"
)

// fixtureStorm writes the storm described by testdata/storms/NAME.txt (one
// cell per line: world scenario condition outcome=runs... [rejections=N]
// [reads=N] [non_prefix=N] [judged]; rejections and reads are the first
// run's) as a storm directory, storm.json and runs.jsonl, and returns it.
// storm.json's config.runs is the most runs a cell has: a fixture whose
// cells have fewer is a partial storm.
func fixtureStorm(t *testing.T, name string) string {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", "storms", name+".txt"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	dir := filepath.Join(t.TempDir(), name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	var cells []history.CellKey
	var lines []string
	runs := 0
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		fields := strings.Fields(sc.Text())
		if len(fields) == 0 || strings.HasPrefix(fields[0], "#") {
			continue
		}
		if len(fields) < 4 {
			t.Fatalf("%s.txt:%d: want world scenario condition outcome=runs...", name, n)
		}
		k := history.CellKey{World: fields[0], Scenario: fields[1], Condition: fields[2]}
		cells = append(cells, k)
		var outcomes []history.Outcome
		rejections, reads, nonPrefix, judged := 0, 0, 0, false
		for _, kv := range fields[3:] {
			if kv == "judged" {
				judged = true
				continue
			}
			key, val, _ := strings.Cut(kv, "=")
			v, err := strconv.Atoi(val)
			if err != nil {
				t.Fatalf("%s.txt:%d: %q: %v", name, n, kv, err)
			}
			switch key {
			case "rejections":
				rejections = v
				continue
			case "reads":
				reads = v
				continue
			case "non_prefix":
				nonPrefix = v
				continue
			}
			for range v {
				outcomes = append(outcomes, history.Outcome(key))
			}
		}
		runs = max(runs, len(outcomes))
		for i, o := range outcomes {
			r := reports.RunRecord{CellKey: history.NewCellKey(k.World, k.Scenario, k.Condition), Index: i,
				RunID: fmt.Sprintf("wrun_%s_%d", strings.NewReplacer("/", "-", "+", "-").Replace(k.String()), i), Outcome: o,
				Started: at, Ended: at.Add(time.Second), Millis: 1000, Judged: judged}
			if i == 0 {
				r.Stats = history.RunStats{Rejections: int64(rejections)}
				r.Findings.Reads, r.Findings.NonPrefixReads = reads, nonPrefix
			}
			b, err := json.Marshal(r)
			if err != nil {
				t.Fatal(err)
			}
			lines = append(lines, string(b))
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	meta, _ := json.Marshal(map[string]any{"schema": reports.SchemaVersion, "version": "test", "cells": cells, "started": at,
		"config": map[string]any{"runs": runs}})
	if err := os.WriteFile(filepath.Join(dir, stormdir.FileStorm), meta, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, stormdir.FileRuns), []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestGateCommand(t *testing.T) {
	tests := []struct {
		name  string
		storm string
		args  []string // {base} is fixture storm "clean", {partial} "interrupted"
		code  int
		// lines are the stdout lines, each containing its string.
		lines []string
	}{
		{"clean storm, default rules", "clean", nil, cli.ExitOK,
			[]string{"gate passed: 3 cells, 5 rules; calibrated: the 2 legacy (main*) cells found 24 corrupted/silent/gap runs of 48"}},
		{"seq corrupted", "seq-corrupted", nil, cli.ExitGateFailed,
			[]string{"--max corrupted=0: local/step-storm/seq: 2 corrupted of 24 runs (max 0)"}},
		{"control dirty", "control-dirty", nil, cli.ExitGateFailed,
			[]string{"--max gap=0: local/control/seq: 1 gap", "--control-clean: local/control/seq: the control is not clean: 0 corrupted, 0 silent, 1 gap"}},
		{"stuck target runs", "stuck-target", nil, cli.ExitGateFailed,
			[]string{"--min-decided 0.8: local/step-storm/seq+callsite+ordered: not enough evidence: 33 decided runs of 48 (15 stuck); at least 39 needed",
				"--max stuck=0: local/step-storm/seq+callsite+ordered: 15 stuck of 48 runs (max 0)"}},
		{"stuck target runs, fewer decided allowed", "stuck-target", []string{"--min-decided", "0.5"}, cli.ExitGateFailed,
			[]string{"--max stuck=0: local/step-storm/seq+callsite+ordered: 15 stuck of 48 runs (max 0)"}},
		{"all target runs infra", "infra-target", nil, cli.ExitGateFailed,
			[]string{"--min-decided 0.8: local/step-storm/seq+callsite+ordered: not enough evidence: 0 decided runs of 24 (24 infra); at least 20 needed"}},
		{"all target runs infra, explicit rules", "infra-target", []string{"--conditions", "seq*", "--max", "corrupted+silent=0", "--min-decided", "0"}, cli.ExitGateFailed,
			[]string{"--min-decided 0: local/step-storm/seq+callsite+ordered: not enough evidence: 0 decided runs of 24 (24 infra); at least 1 needed"}},
		{"uncalibrated", "uncalibrated", nil, cli.ExitGateFailed,
			[]string{"uncalibrated: the 2 legacy (main*) cells found nothing in 48 runs"}},
		{"uncalibrated whatever the rules", "uncalibrated", []string{"--max", "failed=100"}, cli.ExitGateFailed,
			[]string{"uncalibrated:"}},
		{"no legacy cells, no claim", "no-legacy", nil, cli.ExitOK,
			[]string{"gate passed: 2 cells, 5 rules; no legacy (main*) cells: no calibration claim"}},
		{"true positives not computed", "clean", []string{"--conditions", "seq*", "--require-true-positives"}, cli.ExitGateFailed,
			[]string{"--require-true-positives: local/step-storm/seq+callsite+ordered: verdicts not computed (true_positives is null)"}},
		{"rejections required and present", "clean", []string{"--conditions", "seq*", "--require-rejections", "--max", "corrupted+silent=0,gap=0"}, cli.ExitOK,
			[]string{"gate passed: 2 cells, 3 rules"}},
		{"no worse than itself", "clean", []string{"--baseline", "{base}", "--no-worse", "--conditions", "seq*"}, cli.ExitOK,
			[]string{"gate passed: 2 cells, 1 rule;"}},
		{"a storm that stopped early", "interrupted", nil, cli.ExitGateFailed,
			[]string{"partial: 1 of the 96 runs planned is missing: 1 of 4 cells has fewer runs than the 24 each was to have"}},
		{"a partial baseline", "clean", []string{"--baseline", "{partial}", "--no-worse", "--conditions", "seq*"}, cli.ExitGateFailed,
			[]string{"--no-worse: the baseline is partial: 1 of 96 runs missing: a storm missing runs it planned is no evidence to compare with"}},
		{"worse than the baseline", "seq-worse", []string{"--baseline", "{base}", "--no-worse", "--conditions", "seq*"}, cli.ExitGateFailed,
			[]string{"--no-worse: local/step-storm/seq+callsite+ordered: worse than the baseline: corrupted 0/24 0.0% [0.0, 13.8] → 5/24 20.8% [9.2, 40.5] (p=0.0496)"}},
	}
	base := strings.NewReplacer("{base}", fixtureStorm(t, "clean"), "{partial}", fixtureStorm(t, "interrupted"))
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			args := []string{"gate", fixtureStorm(t, tc.storm)}
			for _, a := range tc.args {
				args = append(args, base.Replace(a))
			}
			code, stdout, stderr := run(t.Context(), args...)
			if code != tc.code {
				t.Errorf("exit %d, want %d; stdout:\n%sstderr:\n%s", code, tc.code, stdout, stderr)
			}
			if stderr != "" {
				t.Errorf("stderr = %q, want nothing (gate reports on stdout)", stderr)
			}
			got := strings.Split(strings.TrimSuffix(stdout, "\n"), "\n")
			if len(got) != len(tc.lines) {
				t.Fatalf("%d lines, want %d:\n%s", len(got), len(tc.lines), stdout)
			}
			for i, w := range tc.lines {
				if !strings.Contains(got[i], w) {
					t.Errorf("line %d = %q, want it to contain %q", i+1, got[i], w)
				}
			}
		})
	}
}

func TestGateFormats(t *testing.T) {
	dir := fixtureStorm(t, "seq-corrupted")
	code, stdout, _ := run(t.Context(), "gate", dir, "--format", "json")
	if code != cli.ExitGateFailed {
		t.Errorf("exit %d, want %d", code, cli.ExitGateFailed)
	}
	var res gate.Result
	if err := json.Unmarshal([]byte(stdout), &res); err != nil {
		t.Fatalf("not a gate result: %v\n%s", err, stdout)
	}
	if res.Passed || len(res.Broken) != 1 || res.Broken[0].Rule != "--max corrupted=0" || res.Calibration.Claim != gate.Calibrated {
		t.Errorf("json result = %+v", res)
	}
	code, stdout, _ = run(t.Context(), "gate", dir, "--format", "markdown")
	if code != cli.ExitGateFailed || !strings.HasPrefix(stdout, "**stormctl gate failed**") || !strings.Contains(stdout, "\n- --max corrupted=0: ") {
		t.Errorf("markdown: exit %d:\n%s", code, stdout)
	}
}

// TestNewCommandsUsageErrors checks that bad usage of report, compare, gate
// and merge exits 2 with one line naming the fault, and writes nothing.
func TestNewCommandsUsageErrors(t *testing.T) {
	clean := fixtureStorm(t, "clean")
	tests := []struct {
		name string
		args []string // {storm} is a fixture storm, {out} a fresh path
		want []string
	}{
		{"report without a dir", []string{"report"}, []string{"accepts 1 arg"}},
		{"report of no storm", []string{"report", "{out}"}, []string{"not a storm directory"}},
		{"report format", []string{"report", "{storm}", "--format", "xml"}, []string{"--format", `"xml"`, "table", "markdown", "json"}},
		{"compare one dir", []string{"compare", "{storm}"}, []string{"accepts 2 arg"}},
		{"compare of no storm", []string{"compare", "{storm}", "{out}"}, []string{"not a storm directory"}},
		{"gate unknown max key", []string{"gate", "{storm}", "--max", "bogus=1"}, []string{"--max", "bogus", "corrupted+silent"}},
		{"gate max without a number", []string{"gate", "{storm}", "--max", "corrupted"}, []string{"--max", "KEY=N"}},
		{"gate max twice", []string{"gate", "{storm}", "--max", "gap=0", "--max", "gap=1"}, []string{"--max", "twice"}},
		{"gate infra rate", []string{"gate", "{storm}", "--max-infra-rate", "2"}, []string{"--max-infra-rate", "[0, 1]"}},
		{"gate min decided", []string{"gate", "{storm}", "--min-decided", "1.2"}, []string{"--min-decided", "[0, 1]"}},
		{"gate no-worse without baseline", []string{"gate", "{storm}", "--no-worse"}, []string{"--no-worse", "--baseline"}},
		{"gate baseline without no-worse", []string{"gate", "{storm}", "--baseline", "{storm}"}, []string{"--baseline", "--no-worse"}},
		{"gate of no storm", []string{"gate", "{out}"}, []string{"not a storm directory"}},
		{"merge without --out", []string{"merge", "{storm}"}, []string{"--out"}},
		{"merge of a whole storm", []string{"merge", "{storm}", "--out", "{out}"}, []string{"cannot merge", "not a shard"}},
		{"merge of no storm", []string{"merge", "{out}", "--out", "{out}2"}, []string{"cannot merge", "storm.json"}},
		{"storm shard", []string{"storm", "--shard", "3/2", "--out", "{out}"}, []string{"--shard", "3/2", "i/n"}},
		{"storm more shards than runs", []string{"storm", "--runs", "2", "--shard", "1/3", "--out", "{out}"}, []string{"--shard 1/3", "--runs 2"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "out")
			var args []string
			for _, a := range tc.args {
				args = append(args, strings.NewReplacer("{storm}", clean, "{out}", out).Replace(a))
			}
			code, stdout, stderr := run(t.Context(), args...)
			if code != cli.ExitUsage {
				t.Errorf("exit %d, want %d", code, cli.ExitUsage)
			}
			if stdout != "" {
				t.Errorf("stdout = %q, want nothing", stdout)
			}
			if strings.Count(stderr, "\n") != 1 || !strings.HasPrefix(stderr, "stormctl: ") {
				t.Fatalf("stderr = %q, want one line starting with \"stormctl: \"", stderr)
			}
			for _, w := range tc.want {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr %q does not mention %q", stderr, w)
				}
			}
			if _, err := os.Stat(out); err == nil {
				if _, err := os.Stat(filepath.Join(out, stormdir.FileStorm)); err == nil {
					t.Errorf("%s was written", out)
				}
			}
		})
	}
}

// TestGateNeverPassesWhatItCouldNotRead: a storm or baseline with a
// malformed artifact (runs.jsonl cut off) is gated on what could be read,
// and that result never says passed: the rules that hold are printed with
// a "malformed:" line, and stormctl exits 2.
func TestGateNeverPassesWhatItCouldNotRead(t *testing.T) {
	cut := func(t *testing.T) string {
		dir := fixtureStorm(t, "clean")
		cutRuns(t, dir)
		return dir
	}
	tests := []struct {
		name string
		args func(t *testing.T) []string
	}{
		{"the storm", func(t *testing.T) []string { return []string{cut(t)} }},
		{"the baseline", func(t *testing.T) []string {
			return []string{fixtureStorm(t, "clean"), "--baseline", cut(t), "--no-worse", "--conditions", "seq*"}
		}},
		{"the storm, --only-whole", func(t *testing.T) []string { return []string{cut(t), "--only-whole"} }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"gate"}, tc.args(t)...)
			code, stdout, stderr := run(t.Context(), args...)
			if code != cli.ExitUsage || !strings.Contains(stderr, "runs.jsonl") {
				t.Errorf("exit %d, stderr %q; want %d naming runs.jsonl", code, stderr, cli.ExitUsage)
			}
			if strings.Contains(stdout, "gate passed") || !strings.Contains(stdout, "malformed: some artifacts could not be read") {
				t.Errorf("stdout on a malformed storm:\n%s", stdout)
			}
			_, stdout, _ = run(t.Context(), append(args, "--format", "json")...)
			var res gate.Result
			if err := json.Unmarshal([]byte(stdout), &res); err != nil || res.Passed {
				t.Errorf("gate --format json: passed %v, %v:\n%s", res.Passed, err, stdout)
			}
		})
	}
}

// cutRuns appends a line cut off mid-record to the runs.jsonl of the storm
// in dir: a malformed artifact, as a storm killed mid-write leaves it.
func cutRuns(t *testing.T, dir string) {
	t.Helper()
	f, err := os.OpenFile(filepath.Join(dir, stormdir.FileRuns), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	_, err = f.WriteString(`{"world":"local","scen`)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
}
