package worldtest

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/stormctl/stormctl/internal/eventlog"
	"github.com/stormctl/stormctl/worlds"
)

// claimCase is one script of the cross-run token index (spec 8's
// force-claim): writes to runs A, B and C of one world, all stamped with
// mode, and each run's log afterwards, one event per line.
//
// A write is "RUN: TYPE CORR [TOKEN]", with "hook_created!" a forced
// creation and a trailing " -> conflict" for a write the world must refuse
// with an eventlog.ErrConflict (writing nothing). A log line is
// "hook_created CORR TOKEN", "hook_created CORR TOKEN from RUN/CORR" (a
// takeover), "hook_conflict CORR TOKEN held by RUN", "hook_disposed CORR",
// "hook_disposed CORR by RUN/CORR" (forceClaimedBy) or "TYPE CORR".
type claimCase struct {
	name   string
	mode   eventlog.HookClaim
	writes string
	logs   map[string]string
}

var claimCases = []claimCase{
	{name: "free_token", mode: eventlog.HookClaimRefuse,
		writes: "A: hook_created h1 tok",
		logs:   map[string]string{"A": "hook_created h1 tok"}},
	{name: "refuse_other_run", mode: eventlog.HookClaimRefuse,
		writes: "A: hook_created h1 tok\nB: hook_created h2 tok",
		logs:   map[string]string{"A": "hook_created h1 tok", "B": "hook_conflict h2 tok held by A"}},
	{name: "refuse_forced", mode: eventlog.HookClaimRefuse,
		writes: "A: hook_created h1 tok\nB: hook_created! h2 tok",
		logs:   map[string]string{"A": "hook_created h1 tok", "B": "hook_conflict h2 tok held by A"}},
	{name: "force_unforced_conflicts", mode: eventlog.HookClaimForce,
		writes: "A: hook_created h1 tok\nB: hook_created h2 tok",
		logs:   map[string]string{"A": "hook_created h1 tok", "B": "hook_conflict h2 tok held by A"}},
	{name: "force_takes", mode: eventlog.HookClaimForce,
		writes: "A: hook_created h1 tok\nB: hook_created! h2 tok",
		logs: map[string]string{
			"A": "hook_created h1 tok\nhook_disposed h1 by B/h2",
			"B": "hook_created h2 tok from A/h1"}},
	// A token stays unique within a run for the run's life (the model's
	// per-run key, "hook_token/"): the run that lost it cannot take it
	// back with another hook. Upstream releases a claim at its disposal;
	// no scenario creates one token twice in a run.
	{name: "force_back_same_run", mode: eventlog.HookClaimForce,
		writes: "A: hook_created h1 tok\nB: hook_created! h2 tok\nA: hook_created! h3 tok -> conflict",
		logs: map[string]string{
			"A": "hook_created h1 tok\nhook_disposed h1 by B/h2",
			"B": "hook_created h2 tok from A/h1"}},
	{name: "force_back_other_run", mode: eventlog.HookClaimForce,
		writes: "A: hook_created h1 tok\nB: hook_created! h2 tok\nC: hook_created! h3 tok\nB: hook_disposed h2 -> conflict",
		logs: map[string]string{
			"A": "hook_created h1 tok\nhook_disposed h1 by B/h2",
			"B": "hook_created h2 tok from A/h1\nhook_disposed h2 by C/h3",
			"C": "hook_created h3 tok from B/h2"}},
	{name: "victim_disposes_after", mode: eventlog.HookClaimForce,
		writes: "A: hook_created h1 tok\nB: hook_created! h2 tok\nA: hook_disposed h1 -> conflict",
		logs: map[string]string{
			"A": "hook_created h1 tok\nhook_disposed h1 by B/h2",
			"B": "hook_created h2 tok from A/h1"}},
	{name: "disposed_frees", mode: eventlog.HookClaimForce,
		writes: "A: hook_created h1 tok\nA: hook_disposed h1\nB: hook_created! h2 tok",
		logs:   map[string]string{"A": "hook_created h1 tok\nhook_disposed h1", "B": "hook_created h2 tok"}},
	{name: "run_end_frees", mode: eventlog.HookClaimRefuse,
		writes: "A: hook_created h1 tok\nA: run_completed -\nB: hook_created h2 tok",
		logs:   map[string]string{"A": "hook_created h1 tok\nrun_completed", "B": "hook_created h2 tok"}},
	{name: "own_run_per_run_key", mode: eventlog.HookClaimForce,
		writes: "A: hook_created h1 tok\nA: hook_created! h2 tok -> conflict",
		logs:   map[string]string{"A": "hook_created h1 tok"}},
	{name: "tokens_apart", mode: eventlog.HookClaimRefuse,
		writes: "A: hook_created h1 tok\nB: hook_created h2 other",
		logs:   map[string]string{"A": "hook_created h1 tok", "B": "hook_created h2 other"}},
}

// testHookClaim runs claimCases: the cross-run token index of a world
// with worlds.Entry.HookClaims, on the schemes eventlog.Run.CheckHookClaim
// admits (ulid).
func testHookClaim(t testing.TB, s *suite) {
	for _, tt := range claimCases {
		Run(t, tt.name, func(t testing.TB) {
			w := s.open(t)
			runs := map[string]string{}
			names := map[string]string{}
			for _, n := range []string{"A", "B", "C"} {
				runs[n] = NewRun(t, w, eventlog.Run{Scheme: s.scheme, HookClaim: tt.mode})
				names[runs[n]] = n
			}
			for i, line := range strings.Split(tt.writes, "\n") {
				run, d, conflict := parseClaimWrite(t, line)
				_, err := w.Append(t.Context(), runs[run], []eventlog.Draft{d})
				switch {
				case conflict && !errors.Is(err, eventlog.ErrConflict):
					t.Fatalf("write %d (%s): %v, want an error matching %v", i+1, line, err, eventlog.ErrConflict)
				case !conflict && err != nil:
					t.Fatalf("write %d (%s): %v", i+1, line, err)
				}
			}
			for _, n := range []string{"A", "B", "C"} {
				got := claimLog(t, w, runs[n], names)
				if want := tt.logs[n]; got != want {
					t.Errorf("run %s's log:\n%s\nwant:\n%s", n, orNone(got), orNone(want))
				}
			}
		})
	}
}

// parseClaimWrite parses a write line of a claimCase.
func parseClaimWrite(t testing.TB, line string) (run string, d eventlog.Draft, conflict bool) {
	t.Helper()
	line, conflict = strings.CutSuffix(line, " -> conflict")
	run, rest, ok := strings.Cut(line, ": ")
	f := strings.Fields(rest)
	if !ok || len(f) < 2 {
		t.Fatalf("bad write line %q", line)
	}
	typ, force := strings.CutSuffix(f[0], "!")
	corr := f[1]
	if corr == "-" {
		corr = ""
	}
	d = Draft(eventlog.Type(typ), corr)
	d.Force = force
	if len(f) > 2 {
		d.Token = f[2]
	}
	return run, d, conflict
}

// claimLog renders a run's log as claimCase's log lines, naming runs by
// names.
func claimLog(t testing.TB, w worlds.World, runID string, names map[string]string) string {
	t.Helper()
	page, err := w.List(t.Context(), runID, eventlog.Cursor{}, 0)
	if err != nil {
		t.Fatalf("List(%s): %v", runID, err)
	}
	ref := func(h *eventlog.HookRef) string { return names[h.RunID] + "/" + h.HookID }
	var lines []string
	for _, e := range page.Events {
		switch {
		case e.Type == eventlog.HookCreated && eventlog.ForceClaimedFrom(e) != nil:
			lines = append(lines, fmt.Sprintf("hook_created %s %s from %s", e.CorrelationID, e.Token, ref(eventlog.ForceClaimedFrom(e))))
		case e.Type == eventlog.HookCreated:
			lines = append(lines, fmt.Sprintf("hook_created %s %s", e.CorrelationID, e.Token))
		case e.Type == eventlog.HookConflict:
			var p eventlog.HookConflictData
			mustUnmarshal(t, e, &p)
			lines = append(lines, fmt.Sprintf("hook_conflict %s %s held by %s", e.CorrelationID, p.Token, names[p.ConflictingRunID]))
		case eventlog.ForceClaimedBy(e) != nil:
			lines = append(lines, fmt.Sprintf("hook_disposed %s by %s", e.CorrelationID, ref(eventlog.ForceClaimedBy(e))))
		default:
			lines = append(lines, strings.TrimSpace(string(e.Type)+" "+e.CorrelationID))
		}
	}
	return strings.Join(lines, "\n")
}

// testHookClaimRace: claimers forcing one token at once, each from a run
// of its own, against a victim that holds it: whatever the interleaving,
// exactly one hook ends holding the token, every other one's run has its
// hook_disposed{forceClaimedBy} after its hook_created, and the chain of
// takeovers names only hooks that were created.
func testHookClaimRace(t testing.TB, s *suite) {
	const claimers = 6
	w := s.open(t)
	newRun := func() string { return NewRun(t, w, eventlog.Run{Scheme: s.scheme, HookClaim: eventlog.HookClaimForce}) }
	victim := newRun()
	hookOf := func(i int) string { return fmt.Sprintf("h%d", i) }
	created := func(i int) eventlog.Draft {
		d := Draft(eventlog.HookCreated, hookOf(i))
		d.Token, d.Force = "race", true
		return d
	}
	Append(t, w, victim, created(0))
	runs := []string{victim}
	for range claimers {
		runs = append(runs, newRun())
	}
	var wg sync.WaitGroup
	errs := make([]error, len(runs))
	for i := 1; i < len(runs); i++ {
		wg.Go(func() { _, errs[i] = w.Append(t.Context(), runs[i], []eventlog.Draft{created(i)}) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatalf("a forced claim failed: %v", err)
	}
	holders := 0
	for i, run := range runs {
		page, err := w.List(t.Context(), run, eventlog.Cursor{}, 0)
		if err != nil {
			t.Fatalf("List(run %d): %v", i, err)
		}
		types := make([]eventlog.Type, len(page.Events))
		for j, e := range page.Events {
			types[j] = e.Type
			if e.Type == eventlog.HookDisposed && eventlog.ForceClaimedBy(e) == nil {
				t.Errorf("run %d's hook_disposed names no claimer (forceClaimedBy): only a takeover disposes of a hook here", i)
			}
			if by := eventlog.ForceClaimedBy(e); by != nil {
				k := slices.Index(runs, by.RunID)
				if k < 0 || by.HookID != hookOf(k) {
					t.Errorf("run %d's hook was taken by %s/%s, not a claimer's hook", i, by.RunID, by.HookID)
				}
			}
		}
		switch {
		case slices.Equal(types, []eventlog.Type{eventlog.HookCreated}):
			holders++
		case !slices.Equal(types, []eventlog.Type{eventlog.HookCreated, eventlog.HookDisposed}):
			t.Errorf("run %d's log is %v, want its hook_created, then its hook_disposed unless it holds the token", i, types)
		}
	}
	if holders != 1 {
		t.Errorf("%d hooks hold the token, want exactly 1", holders)
	}
}

// mustUnmarshal decodes e's payload into v, failing t if it cannot.
func mustUnmarshal(t testing.TB, e eventlog.Event, v any) {
	t.Helper()
	if err := json.Unmarshal(e.Payload, v); err != nil {
		t.Fatalf("event %s %s: payload %s: %v", e.Type, e.CorrelationID, e.Payload, err)
	}
}

// testHookClaimRefused: a world refuses to create a run that shares tokens
// under a scheme its cross-run index is not built for
// (eventlog.Run.CheckHookClaim), rather than ignore the stamp.
func testHookClaimRefused(t testing.TB, s *suite) {
	w := s.open(t)
	for _, mode := range []eventlog.HookClaim{eventlog.HookClaimRefuse, eventlog.HookClaimForce} {
		id := "wrun_claim_" + string(mode)
		if err := w.CreateRun(t.Context(), eventlog.Run{ID: id, Scheme: s.scheme, HookClaim: mode}); !errors.Is(err, eventlog.ErrHookClaimUnsupported) {
			t.Errorf("CreateRun(scheme %s, hook claim %s) = %v, want the hook-claim refusal", s.scheme, mode, err)
		}
		if _, err := w.List(t.Context(), id, eventlog.Cursor{}, 10); !errors.Is(err, eventlog.ErrNoRun) {
			t.Errorf("run %s after its refused creation: List = %v, want no such run", id, err)
		}
	}
}
