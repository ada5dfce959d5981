package replay_test

import (
	"testing"

	"github.com/stormctl/stormctl/internal/base/filetest"
	"github.com/stormctl/stormctl/internal/history"
	"github.com/stormctl/stormctl/internal/storm/stormdir"
	"github.com/stormctl/stormctl/internal/tools/evidence"
	"github.com/stormctl/stormctl/internal/tools/replay"
)

// storedStorm is a storm recorded by an earlier build (local world;
// control and step-storm under main, control under
// seq+callsite+ordered; one run a cell), whose step-storm run is
// corrupted: a fixture of real concurrency, replayed deterministically.
var storedStorm = filetest.Repo("internal", "storm", "stormdir", "testdata", "schema1")

// TestReplayStoredStorm: every invocation of every run of a recorded
// storm, served the pages it read (rebuilt from the history and the final
// log), does again what it recorded, every time: the corrupted run's
// run_failed with the recorded error at the same event, its count of
// diverged replays, the fenced writes of the target condition.
func TestReplayStoredStorm(t *testing.T) {
	t.Parallel()
	const repeat = 3
	dir, err := stormdir.Open(storedStorm)
	if err != nil {
		t.Fatal(err)
	}
	runs, err := dir.Runs()
	if err != nil || len(runs) == 0 {
		t.Fatalf("runs of %s: %d, %v", storedStorm, len(runs), err)
	}
	corrupted := 0
	for _, rec := range runs {
		t.Run(rec.CellKey.String(), func(t *testing.T) {
			r, err := evidence.Load(storedStorm, rec.RunID)
			if err != nil {
				t.Fatal(err)
			}
			rep, err := replay.Run(t.Context(), r.ReplayInput(), replay.Options{Repeat: repeat})
			if err != nil {
				t.Fatal(err)
			}
			if len(rep.Invocations) == 0 {
				t.Fatal("no invocation replayed")
			}
			for _, inv := range rep.Invocations {
				if inv.Verdict != replay.Every || !inv.Exact || len(inv.Behaviours) != 1 {
					t.Errorf("%s: %s, exact %v, %d behaviours: %+v", inv.Actor, inv.Verdict, inv.Exact, len(inv.Behaviours), inv.Behaviours)
				}
			}
			if rep.Divergences.Replayed != int(rep.Divergences.Recorded) {
				t.Errorf("%d diverged replays, recorded %d", rep.Divergences.Replayed, rep.Divergences.Recorded)
			}
			if rec.Outcome != history.Corrupted {
				if rep.Recorded != nil {
					t.Errorf("a %s run has a recorded divergence: %+v", rec.Outcome, rep.Recorded)
				}
				return
			}
			corrupted++
			if rep.Recorded == nil || rep.Recorded.Error != rec.Detail || rep.Verdict != replay.Every || rep.Reproduced != repeat {
				t.Errorf("recorded %+v, verdict %q, reproduced %d of %d; want %q every time", rep.Recorded, rep.Verdict, rep.Reproduced, repeat, rec.Detail)
			}
			if rep.Divergences.Recorded == 0 {
				t.Error("a corrupted run with no diverged replay recorded")
			}
		})
	}
	if corrupted == 0 {
		t.Errorf("%s holds no corrupted run: the fixture lost what this test is about", storedStorm)
	}
}
