package storm_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stormctl/stormctl/internal/engines/builtinengines"
	"github.com/stormctl/stormctl/internal/storm"
	"github.com/stormctl/stormctl/internal/storm/stormdir"
	"github.com/stormctl/stormctl/reports"
	"github.com/stormctl/stormctl/worlds"
	"github.com/stormctl/stormctl/worlds/local"
)

var errLost = errors.New("the world lost what it was opened to do")

// checkedWorld is a local world whose SelfCheck fails from its failAt-th
// call on (a devkit world whose delay hook stopped finding its point).
type checkedWorld struct {
	worlds.World
	calls  *atomic.Int32
	failAt int32
}

func (w checkedWorld) SelfCheck() error {
	if w.calls.Add(1) >= w.failAt {
		return errLost
	}
	return nil
}

// TestSelfCheckStopsStorm: a world's failed SelfCheck, asked after each
// run recorded, stops the storm with its error (naming the cell); the
// runs recorded before stay, and the storm is marked interrupted so that
// --resume can finish it.
func TestSelfCheckStopsStorm(t *testing.T) {
	var base worlds.Registry
	local.Register(&base)
	e, err := base.Lookup("local")
	if err != nil {
		t.Fatal(err)
	}
	calls := &atomic.Int32{}
	open := e.Open
	e.Open = func(ctx context.Context, opts worlds.Options) (worlds.World, error) {
		w, err := open(ctx, opts)
		if err != nil {
			return nil, err
		}
		return checkedWorld{World: w, calls: calls, failAt: 2}, nil
	}
	var reg worlds.Registry
	reg.Register(e)
	t.Setenv("TMPDIR", t.TempDir())
	cfg := stormdir.Config{Worlds: []string{"local"}, Scenarios: []string{"control"}, Conditions: []string{"main"},
		Runs: 6, RunsInFlight: 1, TimeScale: 0.1, Latency: "none", Timeout: 30 * time.Second, Seed: 3,
		Out: filepath.Join(t.TempDir(), "storm")}
	p, err := storm.NewPlan(cfg.Defaults(), &reg, builtinengines.Engines())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 45*time.Second)
	defer cancel()
	sum, err := storm.Run(ctx, p, storm.Deps{Worlds: &reg, Version: "test"})
	if !errors.Is(err, errLost) {
		t.Fatalf("Run = %v, want the world's SelfCheck error", err)
	}
	if want := "cell local/control/main: "; !strings.HasPrefix(err.Error(), want) {
		t.Errorf("error %q does not start with %q", err, want)
	}
	runs := jsonLines[reports.RunRecord](t, filepath.Join(p.Config.Out, stormdir.FileRuns))
	if len(runs) != 2 {
		t.Errorf("%d runs recorded, want the 2 that ran before the check failed", len(runs))
	}
	if sum == nil || !sum.Interrupted {
		t.Errorf("summary %+v: want one marked interrupted (runs are missing)", sum)
	}
}
