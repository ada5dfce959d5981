package builtin_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/stormctl/stormctl/internal/engine"
	"github.com/stormctl/stormctl/internal/engine/conditions"
	"github.com/stormctl/stormctl/internal/eventlog"
	"github.com/stormctl/stormctl/internal/history"
	"github.com/stormctl/stormctl/internal/storm"
	"github.com/stormctl/stormctl/worlds"
)

// TestUnusedEndpoints: each endpoint flag the storm gives no work to is
// named, with why.
func TestUnusedEndpoints(t *testing.T) {
	guarded := conditions.Condition{Name: "main/guard=count-index", Knobs: engine.Knobs{Policy: engine.Policy{Guard: eventlog.GuardCountIndex}}}
	plain := conditions.Condition{Name: "main", Knobs: engine.Knobs{Policy: engine.Policy{Guard: eventlog.GuardNone}}}
	plan := func(cells ...history.CellKey) *storm.Plan {
		return &storm.Plan{Cells: cells, Conditions: map[string]conditions.Condition{guarded.Name: guarded, plain.Name: plain}}
	}
	cell := func(world, condition string) history.CellKey {
		return history.CellKey{World: world, Scenario: "control", Condition: condition}
	}
	const pg, redis, ingest, dynamo = "postgres://127.0.0.1/test", "redis://127.0.0.1:6379", "http://127.0.0.1:8080", "http://127.0.0.1:8000"
	tests := []struct {
		name  string
		ep    worlds.Values
		plans []*storm.Plan
		want  []string // the flags named, in order
	}{
		{"no flags", worlds.Values{}, []*storm.Plan{plan(cell("local", "main"))}, nil},
		{"--pg-url used", worlds.Values{"pg-url": pg}, []*storm.Plan{plan(cell("postgres", "main"))}, nil},
		{"--pg-url without postgres", worlds.Values{"pg-url": pg}, []*storm.Plan{plan(cell("local", "main"))}, []string{"--pg-url"}},
		{"vercel flags without vercel", worlds.Values{"ingest-url": ingest, "redis-url": redis}, []*storm.Plan{plan(cell("local", "main"))},
			[]string{"--ingest-url", "--redis-url"}},
		{"--redis-url with a guarded cell", worlds.Values{"redis-url": redis}, []*storm.Plan{plan(cell("vercel", "main"), cell("vercel", guarded.Name))}, nil},
		{"--redis-url and no guarded cell", worlds.Values{"redis-url": redis}, []*storm.Plan{plan(cell("vercel", "main"))}, []string{"--redis-url"}},
		{"the guard on another world only", worlds.Values{"redis-url": redis}, []*storm.Plan{plan(cell("vercel", "main"), cell("local", guarded.Name))}, []string{"--redis-url"}},
		{"a guarded cell in a later plan", worlds.Values{"redis-url": redis, "pg-url": pg},
			[]*storm.Plan{plan(cell("postgres", "main")), plan(cell("vercel", guarded.Name))}, nil},
		{"stores behind --ingest-url", worlds.Values{"ingest-url": ingest, "dynamo-endpoint": dynamo, "redis-url": redis}, []*storm.Plan{plan(cell("vercel", guarded.Name))},
			[]string{"--dynamo-endpoint", "--redis-url"}},
		// --devkit-dir is said unused like every endpoint flag (a checkout
		// the storm's worlds never run is not tested).
		{"--devkit-dir without a devkit world", worlds.Values{"devkit-dir": "/src/workflow"}, []*storm.Plan{plan(cell("local", "main"))}, []string{"--devkit-dir"}},
		{"--devkit-dir used", worlds.Values{"devkit-dir": "/src/workflow"}, []*storm.Plan{plan(cell("devkit-postgres", "main"))}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var named []string
			for _, l := range surface(t).Unused(tc.ep, storm.Uses(tc.plans...)) {
				flag, _, _ := strings.Cut(l, ":")
				named = append(named, flag)
			}
			if !slices.Equal(named, tc.want) {
				t.Errorf("named %q, want %q: %q", named, tc.want, surface(t).Unused(tc.ep, storm.Uses(tc.plans...)))
			}
		})
	}
}

// TestUnusedLines: the line of a flag none of whose worlds is in the storm
// names the worlds, what the value points at, and the fix.
func TestUnusedLines(t *testing.T) {
	tests := []struct {
		v    worlds.Values
		want string
	}{
		{worlds.Values{"pg-url": "postgres://127.0.0.1/test"}, "--pg-url: no devkit-postgres or postgres cell in this storm, so that server is not used (add --world devkit-postgres or postgres)"},
		{worlds.Values{"devkit-dir": "/src/workflow"}, "--devkit-dir: no devkit-local or devkit-postgres cell in this storm, so that checkout is not used (add --world devkit-local or devkit-postgres)"},
	}
	uses := map[string][]eventlog.Guard{"local": {eventlog.GuardNone}}
	for _, tc := range tests {
		if got := surface(t).Unused(tc.v, uses); !slices.Equal(got, []string{tc.want}) {
			t.Errorf("Unused(%v) = %q, want %q", tc.v, got, tc.want)
		}
	}
}
