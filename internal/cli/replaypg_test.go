package cli_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stormctl/stormctl/internal/base/filetest"
	"github.com/stormctl/stormctl/internal/devkit/devkitscen"
	"github.com/stormctl/stormctl/internal/tools/replay"
	"github.com/stormctl/stormctl/worlds/postgres/pgtest"
)

// The runs of pglog/testdata/stepstorm.jsonl: a step-storm of the model on
// devkit-postgres (the published @workflow/world-postgres), dumped from
// the package's tables.
const (
	pgCorrupted  = "wrun_01M916WYJGPSVFEJ4SPQD9S0FX"
	pgUnfinished = "wrun_01M916WYJGPPP4C9NJ0EF9RVWE"
)

// TestReplayPGURL: replay --pg-url reads a run's log as world-postgres
// stores it and reports the first diverging prefix of a corrupted run (exit
// 0: it raises the error the log's run_failed records), that every prefix
// of an unfinished run replays cleanly, and with one line each (exit 2) a
// run not there, a run of the published runtime and a run of a workflow
// stormctl does not know.
func TestReplayPGURL(t *testing.T) {
	url := pgtest.Cluster(t)
	conn := pgtest.Connect(t, url)
	pgtest.LoadWorldPostgres(t, conn, filetest.Repo("internal", "prodlog", "pglog", "testdata", "stepstorm.jsonl"))
	core, err := devkitscen.Lookup("step-storm")
	if err != nil {
		t.Fatal(err)
	}
	for run, name := range map[string]string{"wrun_01M916WYJG1111111111111111": core.ID(), "wrun_01M916WYJG2222222222222222": "checkout"} {
		pgtest.Exec(t, conn, `INSERT INTO workflow.workflow_runs (id, deployment_id, status, name) VALUES ($1, 'app', 'failed', $2)`, run, name)
		// Another writer's run_created: its input is no stormctl envelope
		// (CBOR of {"input":"x"}).
		pgtest.Exec(t, conn, `INSERT INTO workflow.workflow_events (id, type, run_id, payload_cbor) VALUES ($1, 'run_created', $2, '\xa165696e7075746178')`,
			"wevt_"+strings.TrimPrefix(run, "wrun_"), run)
	}

	code, stdout, stderr := run(t.Context(), "replay", "--pg-url", url, "--run", pgCorrupted)
	if code != 0 {
		t.Fatalf("corrupted run: exit %d: %s%s", code, stdout, stderr)
	}
	for _, want := range []string{pgCorrupted + " (workflow stormctl/step-storm: scenario step-storm, condition main; ",
		"the first diverging prefix is 53 of 82 events, ending at event 53 (step_created ", "the log's run_failed records the same error",
		"81 prefixes replayed", "recorded: CORRUPTED_EVENT_LOG at event 82 (run_failed "} {
		if !strings.Contains(stdout, want) {
			t.Errorf("corrupted run: stdout lacks %q:\n%s", want, stdout)
		}
	}
	code, stdout, stderr = run(t.Context(), "replay", "--pg-url", url, "--run", pgCorrupted, "--format", "json")
	var rep replay.PrefixReport
	if code != 0 || json.Unmarshal([]byte(stdout), &rep) != nil || rep.First == nil || rep.First.Length != 53 || !rep.Reproduced {
		t.Errorf("--format json: exit %d, first %+v, reproduced %v: %s", code, rep.First, rep.Reproduced, stderr)
	}
	code, stdout, stderr = run(t.Context(), "replay", "--pg-url", url, "--run", pgUnfinished)
	if code != 0 || !strings.Contains(stdout, "every one of the 71 prefixes replays cleanly (the log has no terminal event") {
		t.Errorf("unfinished run: exit %d: %s%s", code, stdout, stderr)
	}
	// A run that disagrees with its log fails: under callsite ids the
	// corrupted run diverges at its first step, which it did not record.
	if code, stdout, _ := run(t.Context(), "replay", "--pg-url", url, "--run", pgCorrupted, "--condition", "callsite"); code != 1 {
		t.Errorf("callsite ids: exit %d, want 1: %s", code, stdout)
	}

	for _, tt := range []struct {
		name, run string
		args      []string
		want      string
	}{
		{"missing run", "wrun_01M916WYJG0000000000000000", nil, "stormctl: run wrun_01M916WYJG0000000000000000: no such run in \"workflow\".\"workflow_runs\" or \"workflow\".\"workflow_events\"\n"},
		{"published runtime's run, through the model", "wrun_01M916WYJG1111111111111111", []string{"--engine", "model"}, "stormctl: run wrun_01M916WYJG1111111111111111 is of workflow " + core.ID() + ", stormctl's step-storm as the published runtime ran it: its correlation ids and payloads are @workflow/core's, which the model does not draw; replay it with --engine devkit (the default for it)\n"},
		{"stormctl's model run, through the runtime", pgCorrupted, []string{"--engine", "devkit"}, "stormctl: run " + pgCorrupted + " is of workflow \"stormctl/step-storm\", which is no workflow the published runtime can load here (stormctl's scenarios compiled for the devkit engine are named workflow//./workflows/<scenario>//<name>): replay it with --engine model\n"},
		{"unknown workflow", "wrun_01M916WYJG2222222222222222", nil, "stormctl: run wrun_01M916WYJG2222222222222222 is of workflow \"checkout\", which is no stormctl scenario's (stormctl's own runs are named stormctl/<scenario>): there is no code to replay it with\n"},
	} {
		code, _, stderr := run(t.Context(), append([]string{"replay", "--pg-url", url, "--run", tt.run}, tt.args...)...)
		if code != 2 || stderr != tt.want {
			t.Errorf("%s: exit %d, stderr %q; want 2, %q", tt.name, code, stderr, tt.want)
		}
	}
}
