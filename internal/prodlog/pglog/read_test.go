package pglog_test

import (
	"errors"
	"net/url"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/stormctl/stormctl/internal/engine"
	"github.com/stormctl/stormctl/internal/engine/conditions"
	"github.com/stormctl/stormctl/internal/eventlog"
	"github.com/stormctl/stormctl/internal/prodlog"
	"github.com/stormctl/stormctl/internal/prodlog/pglog"
	"github.com/stormctl/stormctl/internal/tools/replay"
	"github.com/stormctl/stormctl/scenarios"
	"github.com/stormctl/stormctl/worlds/postgres/pgtest"
)

var cluster pgtest.Shared

func TestMain(m *testing.M) { os.Exit(cluster.Main(m)) }

// The fixture testdata/stepstorm.jsonl holds two runs of a step-storm
// the model ran on devkit-postgres (the published @workflow/world-postgres
// 4.3.7, condition main, default latency; 2026-12-04), dumped row by row
// from the package's tables in random order: corrupted, a run that ended
// with CORRUPTED_EVENT_LOG (82 events, stale-prefix), and unfinished, one
// the storm stopped in flight (71 events).
const (
	fixture     = "testdata/stepstorm.jsonl"
	corrupted   = "wrun_01M916WYJGPSVFEJ4SPQD9S0FX"
	unfinished  = "wrun_01M916WYJGPPP4C9NJ0EF9RVWE"
	corruptedAt = 53
)

// database creates a fresh database on the shared cluster, loads the
// fixture into it as world-postgres's tables and returns its URL and a
// connection to it.
func database(t *testing.T) (string, *pgx.Conn) {
	t.Helper()
	base := cluster.URL(t)
	admin := pgtest.Connect(t, base)
	name := strings.ToLower(strings.NewReplacer("/", "_", "-", "_").Replace(t.Name()))
	pgtest.Exec(t, admin, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize())
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	u.Path = "/" + name
	conn := pgtest.Connect(t, u.String())
	pgtest.LoadWorldPostgres(t, conn, fixture)
	return u.String(), conn
}

// TestReadListsAsThePackage: a run's log reads back in the package's list
// order (by id), its eventData decoded from CBOR into what stormctl
// wrote (a step_created's name and args, a hook's unscoped token, the
// run_failed's code and message), with the workflow its row names.
func TestReadListsAsThePackage(t *testing.T) {
	dbURL, _ := database(t)
	log, err := pglog.Read(t.Context(), pglog.Options{URL: dbURL, RunID: corrupted})
	if err != nil {
		t.Fatal(err)
	}
	if log.Workflow != "stormctl/step-storm" || log.Status != "failed" || len(log.Events) != 82 {
		t.Fatalf("workflow %q, status %q, %d events", log.Workflow, log.Status, len(log.Events))
	}
	if !slices.IsSortedFunc(log.Events, func(a, b eventlog.Event) int { return strings.Compare(a.ID, b.ID) }) {
		t.Error("events are not in id order")
	}
	first, last := log.Events[0], log.Events[len(log.Events)-1]
	if first.Type != eventlog.RunCreated || !strings.Contains(string(first.Payload), `"rounds":6`) {
		t.Errorf("first event %s %s", first.Type, first.Payload)
	}
	if f := engine.Failure(last); last.Type != eventlog.RunFailed || f.Code != engine.CodeCorrupted || !strings.HasPrefix(f.Message, "replay divergence: ") {
		t.Errorf("last event %s %+v", last.Type, f)
	}
	for _, e := range log.Events {
		switch e.Type {
		case eventlog.HookCreated:
			if e.Token != "poke" {
				t.Errorf("hook %s: token %q, want the run's own poke", e.CorrelationID, e.Token)
			}
		case eventlog.StepCreated:
			if !strings.Contains(string(e.Payload), `"name":`) || !strings.Contains(string(e.Payload), `"args":`) {
				t.Errorf("step_created %s: payload %s", e.CorrelationID, e.Payload)
			}
		case eventlog.WaitCreated:
			if !strings.Contains(string(e.Payload), `"resumeAt":"2026-12-04T`) {
				t.Errorf("wait_created %s: payload %s", e.CorrelationID, e.Payload)
			}
		}
	}
}

// TestReadRefuses: a run not there, tables not there and a server that
// does not answer are each told apart.
func TestReadRefuses(t *testing.T) {
	dbURL, _ := database(t)
	if _, err := pglog.Read(t.Context(), pglog.Options{URL: dbURL, RunID: "wrun_01M916WYJG000000000000000"}); !errors.Is(err, prodlog.ErrNoRun) {
		t.Errorf("missing run: %v, want %v", err, prodlog.ErrNoRun)
	}
	if _, err := pglog.Read(t.Context(), pglog.Options{URL: dbURL, Schema: "nope", RunID: corrupted}); !errors.Is(err, prodlog.ErrNoTable) {
		t.Errorf("missing schema: %v, want %v", err, prodlog.ErrNoTable)
	}
	if _, err := pglog.Read(t.Context(), pglog.Options{URL: "postgres://u@127.0.0.1:1/app?connect_timeout=5", RunID: corrupted}); !errors.Is(err, eventlog.ErrUnavailable) {
		t.Errorf("closed port: %v, want %v", err, eventlog.ErrUnavailable)
	}
}

// TestFirstDivergingPrefix replays every prefix of the stored logs through
// the model and finds the corrupted run's first diverging prefix: 53 of its
// 82 events, ending at the step_created whose step the code calls under
// another name, with the very error its run_failed records. The unfinished
// run replays cleanly at every prefix. The same real events fail the
// check when they disagree with what the replay finds: without the
// run_failed (a divergence the log does not record), and under callsite
// ids (the run drew positional ones).
func TestFirstDivergingPrefix(t *testing.T) {
	dbURL, conn := database(t)
	sc, err := scenarios.Lookup("step-storm")
	if err != nil {
		t.Fatal(err)
	}
	prefixes := func(run, condition string) replay.PrefixReport {
		t.Helper()
		log, err := pglog.Read(t.Context(), pglog.Options{URL: dbURL, RunID: run})
		if err != nil {
			t.Fatal(err)
		}
		cond, err := conditions.Parse(condition)
		if err != nil {
			t.Fatal(err)
		}
		rep, err := replay.Prefixes(t.Context(), replay.StoredLog{Log: log, Scenario: sc.Name,
			Condition: cond.Name, Knobs: cond.Knobs, Program: sc.Program}, replay.PrefixOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return rep
	}

	rep := prefixes(corrupted, "main")
	f := rep.First
	switch {
	case f == nil:
		t.Fatalf("no prefix diverges: %s", rep.Summary)
	case f.Length != corruptedAt || f.EndsAt.Type != eventlog.StepCreated || f.At != f.EndsAt || f.Kind != "step_name":
		t.Errorf("first diverging prefix %+v, want %d events ending at a step_created, step_name", f, corruptedAt)
	case !rep.Reproduced || !rep.Explained() || rep.Recorded == nil || f.Error != rep.Recorded.Message:
		t.Errorf("reproduced %v, explained %v, recorded %+v, error %q", rep.Reproduced, rep.Explained(), rep.Recorded, f.Error)
	}
	if rep.Prefixes != 81 || rep.Terminal == nil || rep.Terminal.Index != 81 {
		t.Errorf("%d prefixes, terminal %+v; want 81 up to the run_failed", rep.Prefixes, rep.Terminal)
	}

	if rep := prefixes(unfinished, "main"); rep.First != nil || rep.Prefixes != 71 || !rep.Explained() {
		t.Errorf("unfinished run: %d prefixes, first %+v, explained %v: %s", rep.Prefixes, rep.First, rep.Explained(), rep.Summary)
	}

	if rep := prefixes(corrupted, "callsite"); rep.Explained() || rep.First == nil || rep.First.Length >= corruptedAt {
		t.Errorf("callsite ids: first %+v, explained %v; want an earlier divergence the log does not record", rep.First, rep.Explained())
	}

	pgtest.Exec(t, conn, `DELETE FROM workflow.workflow_events WHERE run_id = $1 AND type = 'run_failed'`, corrupted)
	rep = prefixes(corrupted, "main")
	if rep.Explained() || rep.First == nil || rep.First.Length != corruptedAt || rep.Recorded != nil {
		t.Errorf("without run_failed: first %+v, recorded %+v, explained %v: %s", rep.First, rep.Recorded, rep.Explained(), rep.Summary)
	}
}
