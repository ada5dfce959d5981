package fidelity

import (
	"context"
	"errors"
	"path/filepath"
	"time"

	"github.com/stormctl/stormctl/internal/storm"
	"github.com/stormctl/stormctl/internal/storm/stormdir"
	"github.com/stormctl/stormctl/reports"
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

// Stormed is what a sequence of storms measured: each plan's summary (nil
// for a plan not run, or one that measured nothing), and whether a storm
// was interrupted.
type Stormed struct {
	Summaries   []*reports.Summary
	Interrupted bool
}

// RunAll runs the plans' storms one after another with run. A storm that
// fails keeps what it measured, and failed is told; the first such error
// comes back. A storm interrupted (storm.ErrInterrupted, or ctx ended
// while a world was still opening) stops the sequence: the plans not yet
// run have no summary, Stormed.Interrupted is set and the error is nil.
func RunAll(ctx context.Context, plans []*storm.Plan, run func(ctx context.Context, i int, p *storm.Plan) (*reports.Summary, error), failed func(i int, err error)) (Stormed, error) {
	out := Stormed{Summaries: make([]*reports.Summary, len(plans))}
	var first error
	for i, p := range plans {
		s, err := run(ctx, i, p)
		out.Summaries[i] = s
		if err == nil {
			continue
		}
		// Ctrl-C while a world was still opening ends its storm with the
		// context's error rather than storm.ErrInterrupted.
		if errors.Is(err, storm.ErrInterrupted) || ctx.Err() != nil {
			out.Interrupted = true
			return out, nil // the check was stopped: that is what it says
		}
		failed(i, err)
		if first == nil {
			first = err
		}
	}
	return out, first
}

// Check runs the plans' storms one after another (one world each, with
// run; see RunAll) and judges every claim of their worlds on what they
// measured. A storm interrupted stops the check: the worlds not yet
// stormed are judged unknown, and the report says it was interrupted
// (Report.Interrupted).
func Check(ctx context.Context, plans []*storm.Plan, run func(ctx context.Context, i int, p *storm.Plan) (*reports.Summary, error), failed func(world string, err error)) (*Report, error) {
	worlds := make([]string, len(plans))
	storms := map[string]string{}
	for i, p := range plans {
		worlds[i] = p.Config.Worlds[0]
	}
	stormed, err := RunAll(ctx, plans, func(ctx context.Context, i int, p *storm.Plan) (*reports.Summary, error) {
		storms[worlds[i]] = p.Config.Out
		return run(ctx, i, p)
	}, func(i int, err error) { failed(worlds[i], err) })
	sum := &reports.Summary{Schema: reports.SchemaVersion, Started: time.Now().UTC(), Interrupted: stormed.Interrupted}
	for _, s := range stormed.Summaries {
		if s != nil {
			sum.Cells = append(sum.Cells, s.Cells...)
		}
	}
	rep := NewReport(Evaluate(sum, worlds...), storms)
	rep.Interrupted = sum.Interrupted
	return rep, err
}
