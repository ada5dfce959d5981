package cli

import (
	"slices"
	"strings"
	"testing"

	"github.com/stormctl/stormctl/conditions"
	"github.com/stormctl/stormctl/engine"
	"github.com/stormctl/stormctl/eventlog"
	"github.com/stormctl/stormctl/history"
	"github.com/stormctl/stormctl/storm"
)

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
		ep    WorldEndpoints
		plans []*storm.Plan
		want  []string // the flags named, in order
	}{
		{"no flags", WorldEndpoints{}, []*storm.Plan{plan(cell("local", "main"))}, nil},
		{"--pg-url used", WorldEndpoints{PGURL: pg}, []*storm.Plan{plan(cell("postgres", "main"))}, nil},
		{"--pg-url without postgres", WorldEndpoints{PGURL: pg}, []*storm.Plan{plan(cell("local", "main"))}, []string{"--pg-url"}},
		{"vercel flags without vercel", WorldEndpoints{IngestURL: ingest, RedisURL: redis}, []*storm.Plan{plan(cell("local", "main"))},
			[]string{"--ingest-url", "--redis-url"}},
		{"--redis-url with a guarded cell", WorldEndpoints{RedisURL: redis}, []*storm.Plan{plan(cell("vercel", "main"), cell("vercel", guarded.Name))}, nil},
		{"--redis-url and no guarded cell", WorldEndpoints{RedisURL: redis}, []*storm.Plan{plan(cell("vercel", "main"))}, []string{"--redis-url"}},
		{"the guard on another world only", WorldEndpoints{RedisURL: redis}, []*storm.Plan{plan(cell("vercel", "main"), cell("local", guarded.Name))}, []string{"--redis-url"}},
		{"a guarded cell in a later plan", WorldEndpoints{RedisURL: redis, PGURL: pg},
			[]*storm.Plan{plan(cell("postgres", "main")), plan(cell("vercel", guarded.Name))}, nil},
		{"stores behind --ingest-url", WorldEndpoints{IngestURL: ingest, DynamoEndpoint: dynamo, RedisURL: redis}, []*storm.Plan{plan(cell("vercel", guarded.Name))},
			[]string{"--dynamo-endpoint", "--redis-url"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var named []string
			for _, l := range unusedEndpoints(tc.ep, tc.plans...) {
				flag, _, _ := strings.Cut(l, ":")
				named = append(named, flag)
			}
			if !slices.Equal(named, tc.want) {
				t.Errorf("named %q, want %q: %q", named, tc.want, unusedEndpoints(tc.ep, tc.plans...))
			}
		})
	}
}
