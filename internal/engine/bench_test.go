package engine

import (
	"testing"
)

// fanOut is a workflow of rounds x width parallel steps.
func fanOut(rounds, width int) Program {
	return func(c *Ctx) (any, error) {
		for r := range rounds {
			fs := make([]*Future, width)
			for b := range width {
				fs[b] = c.Go(func(c *Ctx) (any, error) {
					var v string
					err := c.AwaitInto(c.Step("work", []int{r, b}), &v)
					return v, err
				})
			}
			if _, err := c.Await(c.All(fs...)); err != nil {
				return nil, err
			}
		}
		return rounds * width, nil
	}
}

// BenchmarkReplay1000 replays a finished 1,000-event log (83 rounds of 4
// parallel steps) through the engine from an in-memory slice: the cost of one
// invocation's replay, without the store.
func BenchmarkReplay1000(b *testing.B) {
	prog := fanOut(83, 4)
	log := simulate(b, prog, nil, IDsCallsite)
	log = log[:len(log)-1]
	if n := len(log); n < 990 || n > 1010 {
		b.Fatalf("fixture has %d events, want about 1000", n)
	}
	for _, wake := range allWakes {
		for _, ids := range []IDPolicy{IDsPositional, IDsCallsite} {
			l := log
			if ids == IDsPositional {
				l = simulate(b, prog, nil, ids)
				l = l[:len(l)-1]
			}
			b.Run(string(wake)+"/"+string(ids), func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					if out := Replay(prog, "run-sim", l, ReplayMode{IDs: ids, Wake: wake}, simNow); out.Divergence != nil {
						b.Fatal(out.Divergence)
					}
				}
				b.ReportMetric(float64(len(l))*float64(b.N)/b.Elapsed().Seconds(), "events/s")
			})
		}
	}
}
