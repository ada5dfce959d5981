package storm

import (
	"context"
	"fmt"
	"time"

	"github.com/stormctl/stormctl/internal/history"
	"github.com/stormctl/stormctl/internal/nemesis"
	"github.com/stormctl/stormctl/worlds"
)

// startNemesis gathers the fault targets of the storm's cells, records the
// schedule in storm.json and starts playing it (Config.Nemesis on). Each
// fault's record goes to storm.json as it starts and again as it ends. A
// kind named one by one that no cell's world offers is an error.
func (r *runner) startNemesis(ctx context.Context, cells []*cell) error {
	cfg := r.plan.Config
	if !cfg.Nemesis.On() {
		return nil
	}
	nr := nemesis.NewRunner(cfg.Nemesis, cfg.Seed, r.deps.Logger)
	for _, c := range cells {
		if t, ok := worlds.Inner(c.world).(nemesis.Targeter); ok {
			nr.Add(c.key.World, c.key.String(), t.Targets())
		}
	}
	if missing := nr.Missing(); len(missing) > 0 {
		return fmt.Errorf("--nemesis %s: no world of this storm offers it (pg-restart needs the embedded cluster; ingest-503, dynamo-pause and redis-down need the vercel world's own ingest server, embedded DynamoDB-API server and embedded Redis)", missing[0])
	}
	r.meta.FaultSchedule = nr.Schedule()
	if err := r.out.WriteMeta(&r.meta); err != nil {
		return err
	}
	r.nem = nr
	nr.Start(ctx, func(recs []nemesis.Record) {
		r.meta.Faults = recs // calls come one at a time
		if err := r.out.WriteMeta(&r.meta); err != nil {
			r.deps.Logger.Warn("nemesis: record the faults in storm.json", "err", err)
		}
	})
	return nil
}

// stopNemesis ends the faults not yet started and waits for those under way
// to heal, before the worlds close.
func (r *runner) stopNemesis() {
	if r.nem != nil {
		r.nem.Stop()
	}
}

// faultsOf labels the faults on cell k's world that overlapped [from, to].
func (r *runner) faultsOf(k history.CellKey, from, to time.Time) []string {
	if r.nem == nil {
		return nil
	}
	return r.nem.Overlapping(k.String(), from, to)
}
