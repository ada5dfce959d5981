package fidelity_test

import (
	"context"
	"errors"
	"maps"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/stormctl/stormctl/internal/storm"
	"github.com/stormctl/stormctl/internal/storm/stormdir"
	"github.com/stormctl/stormctl/internal/tools/fidelity"
	"github.com/stormctl/stormctl/reports"
)

// TestStormsConfig: each world's storm is the claims' scenarios and
// conditions, seed stormdir.DefaultSeed, into Out/<world>/, at the runs
// given (VercelRuns on vercel); a typed zero reaches the config.
func TestStormsConfig(t *testing.T) {
	t.Parallel()
	s := fidelity.Storms{Runs: 24, VercelRuns: 18, TimeScale: 0, Timeout: time.Minute, RunsInFlight: 3, Out: "fid"}
	for _, tc := range []struct {
		world string
		runs  int
	}{{fidelity.Local, 24}, {fidelity.Postgres, 24}, {fidelity.Vercel, 18}} {
		c := s.Config(tc.world)
		if c.Runs != tc.runs || c.Seed != stormdir.DefaultSeed || c.Out != filepath.Join("fid", tc.world) || c.TimeScale != 0 ||
			c.Timeout != time.Minute || c.RunsInFlight != 3 || !slices.Equal(c.Worlds, []string{tc.world}) ||
			!slices.Equal(c.Scenarios, fidelity.Scenarios()) || !slices.Equal(c.Conditions, fidelity.Conditions()) {
			t.Errorf("Config(%s) = %+v", tc.world, c)
		}
	}
}

// TestCheck: the storms run one after another; a failed one is judged on
// what it measured and its error comes back; an interrupted one stops the
// check, the worlds after it judged unknown.
func TestCheck(t *testing.T) {
	t.Parallel()
	plans := []*storm.Plan{
		{Config: stormdir.Config{Worlds: []string{fidelity.Local}, Out: "fid/local"}},
		{Config: stormdir.Config{Worlds: []string{fidelity.Postgres}, Out: "fid/postgres"}},
	}
	boom := errors.New("boom")
	tests := []struct {
		name string
		errs []error // per plan
		// ran and failed are the worlds run and reported failed.
		ran, failed     []string
		wantErr         error
		wantInterrupted bool
	}{
		{"both ran", []error{nil, nil}, []string{"local", "postgres"}, nil, nil, false},
		{"the first failed", []error{boom, nil}, []string{"local", "postgres"}, []string{"local"}, boom, false},
		{"the first interrupted", []error{storm.ErrInterrupted, nil}, []string{"local"}, nil, nil, true},
		{"failed, then interrupted", []error{boom, storm.ErrInterrupted}, []string{"local", "postgres"}, []string{"local"}, nil, true},
	}
	for _, tc := range tests {
		var ran, failed []string
		rep, err := fidelity.Check(t.Context(), plans, func(_ context.Context, i int, p *storm.Plan) (*reports.Summary, error) {
			ran = append(ran, p.Config.Worlds[0])
			return &reports.Summary{}, tc.errs[i]
		}, func(world string, _ error) { failed = append(failed, world) })
		if !slices.Equal(ran, tc.ran) || !slices.Equal(failed, tc.failed) || !errors.Is(err, tc.wantErr) || (err == nil) != (tc.wantErr == nil) ||
			rep.Interrupted != tc.wantInterrupted {
			t.Errorf("%s: ran %v, failed %v, err %v, interrupted %v", tc.name, ran, failed, err, rep.Interrupted)
		}
		wantStorms := map[string]string{}
		for _, w := range tc.ran {
			wantStorms[w] = "fid/" + w
		}
		if !maps.Equal(rep.Storms, wantStorms) {
			t.Errorf("%s: storms %v, want %v", tc.name, rep.Storms, wantStorms)
		}
		// Every world's claims are judged, stormed or not: unknown here,
		// on no cells.
		if rep.Passed != 0 || rep.Failed != 0 || rep.Unknown == 0 || !slices.ContainsFunc(rep.Results, func(r fidelity.Result) bool { return r.World == fidelity.Postgres }) {
			t.Errorf("%s: %d passed, %d failed, %d unknown, results %v", tc.name, rep.Passed, rep.Failed, rep.Unknown, rep.Results)
		}
	}
}
