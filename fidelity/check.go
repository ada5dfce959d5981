package fidelity

import (
	"context"
	"errors"
	"path/filepath"
	"time"

	"github.com/stormctl/stormctl/reports"
	"github.com/stormctl/stormctl/storm"
	"github.com/stormctl/stormctl/stormdir"
)

// Storms is how a fidelity check storms each world: runs per cell
// (VercelRuns on Vercel), the time scale, the run timeout and the runs in
// flight (0: the world's own default), into Out/<world>/.
type Storms struct {
	Runs, VercelRuns int
	TimeScale        float64
	Timeout          time.Duration
	RunsInFlight     int
	Out              string
}

// Config is the storm world's reference cells run in: every scenario and
// condition the claims read (storm.Plan.Only then prunes the matrix to
// CellsFor(world)), a storm's defaults for the rest, seed
// stormdir.DefaultSeed.
func (s Storms) Config(world string) stormdir.Config {
	c := stormdir.Config{
		Worlds: []string{world}, Scenarios: Scenarios(), Conditions: Conditions(),
		Seed: stormdir.DefaultSeed, Out: filepath.Join(s.Out, world),
	}.Defaults()
	// Set after Defaults, which would turn a typed --time-scale 0 into 1
	// instead of letting NewPlan refuse it.
	c.Runs, c.TimeScale, c.Timeout, c.RunsInFlight = runsOn(world, s.Runs, s.VercelRuns), s.TimeScale, s.Timeout, s.RunsInFlight
	return c
}

// Check runs the plans' storms one after another (one world each, with
// run) and judges every claim of their worlds on what they measured. A
// storm that fails is judged on what it measured, and failed is told; the
// first such error comes back. A storm interrupted (storm.ErrInterrupted,
// or ctx ended while a world was still opening) stops the check: the
// worlds not yet stormed are judged unknown, and the report says it was
// interrupted (Report.Interrupted; the error is then nil).
func Check(ctx context.Context, plans []*storm.Plan, run func(ctx context.Context, i int, p *storm.Plan) (*reports.Summary, error), failed func(world string, err error)) (*Report, error) {
	sum := &reports.Summary{Schema: reports.SchemaVersion, Started: time.Now().UTC()}
	worlds := make([]string, len(plans))
	for i, p := range plans {
		worlds[i] = p.Config.Worlds[0]
	}
	storms := map[string]string{}
	var first error
	for i, p := range plans {
		s, err := run(ctx, i, p)
		storms[worlds[i]] = p.Config.Out
		if s != nil {
			sum.Cells = append(sum.Cells, s.Cells...)
		}
		if err == nil {
			continue
		}
		// Ctrl-C while a world was still opening ends its storm with the
		// context's error rather than storm.ErrInterrupted.
		if errors.Is(err, storm.ErrInterrupted) || ctx.Err() != nil {
			sum.Interrupted = true
			break // the worlds not yet stormed are judged unknown
		}
		failed(worlds[i], err)
		if first == nil {
			first = err
		}
	}
	if sum.Interrupted {
		first = nil // the check was stopped: that is what it says
	}
	rep := NewReport(Evaluate(sum, worlds...), storms)
	rep.Interrupted = sum.Interrupted
	return rep, first
}
