package storm_test

import (
	"context"
	"maps"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stormctl/stormctl/internal/engines/builtinengines"
	"github.com/stormctl/stormctl/internal/storm"
	"github.com/stormctl/stormctl/internal/storm/stormdir"
	"github.com/stormctl/stormctl/worlds"
	"github.com/stormctl/stormctl/worlds/local"
)

// TestPoolSizes: a world that shares its server's connections
// (Entry.Connections) has them split among its cells (every scenario and
// condition of the config), at most --concurrency and at least
// storm.MinPoolSize each; a world without sizes its own.
func TestPoolSizes(t *testing.T) {
	tests := []struct {
		name        string
		connections int
		worlds      []string
		conditions  []string
		concurrency int
		want        map[string]int32
	}{
		{"--concurrency bounds", 180, []string{"local", "shared"}, []string{"main"}, 20, map[string]int32{"shared": 20}},
		{"shared among 3 x 2 cells", 60, []string{"shared"}, []string{"main", "seq"}, 20, map[string]int32{"shared": 10}},
		{"at least 4", 6, []string{"shared", "local"}, []string{"main", "seq"}, 20, map[string]int32{"shared": 4}},
		{"no shared world", 180, []string{"local"}, []string{"main"}, 20, map[string]int32{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			reg := &worlds.Registry{}
			local.Register(reg)
			shared := local.Entry()
			shared.Name, shared.Connections = "shared", tc.connections
			reg.Register(shared)
			c := stormdir.Config{Worlds: tc.worlds, Conditions: tc.conditions, Concurrency: tc.concurrency,
				Out: filepath.Join(t.TempDir(), "out")}.Defaults()
			p, err := storm.NewPlan(c, reg, builtinengines.Engines())
			if err != nil {
				t.Fatal(err)
			}
			if !maps.Equal(p.PoolSizes, tc.want) {
				t.Errorf("PoolSizes = %v, want %v", p.PoolSizes, tc.want)
			}
		})
	}
}

// TestPoolSizeReachesOpen: each cell's world is opened with its world's
// pool size.
func TestPoolSizeReachesOpen(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir())
	var mu sync.Mutex
	opened := map[int32]int{}
	shared := local.Entry()
	shared.Name, shared.Connections = "shared", 180
	open := shared.Open
	shared.Open = func(ctx context.Context, o worlds.Options) (worlds.World, error) {
		mu.Lock()
		opened[o.PoolSize]++
		mu.Unlock()
		return open(ctx, o)
	}
	reg := &worlds.Registry{}
	reg.Register(shared)
	c := stormdir.Config{Worlds: []string{"shared"}, Scenarios: []string{"control"}, Conditions: []string{"main", "seq"},
		Runs: 1, Concurrency: 30, TimeScale: 0.1, Latency: "none", Timeout: 30 * time.Second, Out: filepath.Join(t.TempDir(), "out")}.Defaults()
	p, err := storm.NewPlan(c, reg, builtinengines.Engines())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 45*time.Second)
	defer cancel()
	if _, err := storm.Run(ctx, p, storm.Deps{Worlds: reg, Version: "test"}); err != nil {
		t.Fatalf("Run: %v", err)
	}
	if want := map[int32]int{30: 2}; !maps.Equal(opened, want) { // 180/2 cells, at most --concurrency 30
		t.Errorf("opened with pool sizes %v, want %v", opened, want)
	}
}
