package bench

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stormctl/stormctl/worlds/postgres/pgtest"
)

// cluster is the package's one embedded cluster.
var cluster pgtest.Shared

func TestMain(m *testing.M) { os.Exit(cluster.Main(m)) }

// TestAppendSmoke runs every script on the hot run with 2 clients for one
// 1 s round per side (the SPREAD rendering is checked by
// TestPgbenchScripts and the CLI smoke test) and checks that each row has
// positive figures on both sides. It asserts nothing about speed.
func TestAppendSmoke(t *testing.T) {
	url := cluster.URL(t)
	var progress strings.Builder
	res, err := RunAppend(t.Context(), AppendConfig{Placements: []Placement{PlaceHot}, Clients: []int{2}, Rounds: 1, Duration: time.Second},
		AppendDeps{URL: url, Progress: &progress})
	t.Log(progress.String())
	if err != nil {
		t.Fatal(err)
	}
	if want := len(Scripts); len(res.Rows) != want {
		t.Fatalf("%d rows, want %d", len(res.Rows), want)
	}
	for _, r := range res.Rows {
		for side, s := range map[string]Side{"pgbench": r.Pgbench, "stormctl": r.Stormctl} {
			if s.TPS <= 0 || s.EventsPerSec <= 0 || len(s.Rounds) != 1 || s.Rounds[0].Events <= 0 {
				t.Errorf("%s: %s side has no positive figures: %+v", r.Name(), side, s)
			}
			if r.Script != ScriptFenced && s.Rounds[0].Events != s.Rounds[0].Attempts {
				t.Errorf("%s: %s side committed %d events in %d attempts", r.Name(), side, s.Rounds[0].Events, s.Rounds[0].Attempts)
			}
		}
		if r.Ratio <= 0 {
			t.Errorf("%s: ratio %g", r.Name(), r.Ratio)
		}
	}
}

// TestForensicsSmoke loads 20,000 events over 200 runs and runs both sides
// once each; it checks the figures are there and sane, never how fast.
func TestForensicsSmoke(t *testing.T) {
	url := cluster.URL(t)
	var progress strings.Builder
	res, err := RunForensics(t.Context(), ForensicsConfig{Events: 20_000, Runs: 200, Rounds: 2},
		ForensicsDeps{URL: url, Progress: &progress})
	t.Log(progress.String())
	if err != nil {
		t.Fatal(err)
	}
	if res.Rows != 20_000 || res.Totals.Events != 20_000 || res.Totals.Runs != 200 {
		t.Errorf("read %d rows, forensics saw %d events over %d runs; want 20000 over 200", res.Rows, res.Totals.Events, res.Totals.Runs)
	}
	if res.Totals.WithoutCommitTS != 0 {
		t.Errorf("%d events without a commit time on a cluster with track_commit_timestamp", res.Totals.WithoutCommitTS)
	}
	if res.Totals.InvertedPairs == 0 || res.Totals.Displaced == 0 {
		t.Errorf("no inversions although a quarter of the batch pairs committed out of id order: %+v", res.Totals)
	}
	if len(res.Sides) != 2 {
		t.Fatalf("%d sides, want 2 (bare read, library forensics)", len(res.Sides))
	}
	for _, s := range res.Sides {
		if len(s.Rounds) != 2 || s.Median <= 0 || s.Ratio <= 0 || s.PeakHeap == 0 {
			t.Errorf("%s: missing figures: %+v", s.Name, s)
		}
	}
}
