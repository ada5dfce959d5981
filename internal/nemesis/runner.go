package nemesis

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/stormctl/stormctl/internal/base/clock"
)

// Record is one fault as it happened on one target: storm.json's faults.
type Record struct {
	// Fault is the Fault's ID; a fault on several targets has a record
	// per target.
	Fault  int    `json:"fault"`
	Kind   Kind   `json:"kind"`
	World  string `json:"world"`
	Target string `json:"target"`
	// Cells are the storm cells whose world the target belongs to: their
	// runs overlapping the fault are marked.
	Cells []string  `json:"cells"`
	Start time.Time `json:"start"`
	// End is when the target was healed again; zero while the fault lasts.
	End    time.Time `json:"end,omitzero"`
	Detail string    `json:"detail,omitempty"`
	Err    string    `json:"error,omitempty"`
}

// Label is how a run's faults name this fault: kind#id.
func (r Record) Label() string { return fmt.Sprintf("%s#%d", r.Kind, r.Fault) }

// entry is a target and the cells it serves.
type entry struct {
	t     Target
	world string
	cells []string
}

// Runner plays a schedule against the targets of a storm's worlds. Add
// every cell's targets, then Start; Stop ends it. Safe for concurrent use.
type Runner struct {
	cfg    Config
	seed   uint64
	logger *slog.Logger

	entries []*entry // in Add order
	faults  []Fault

	mu      sync.Mutex
	records []Record
	notify  func([]Record)
	cancel  context.CancelFunc
	g       *errgroup.Group
}

// NewRunner returns a Runner for cfg, its schedule seeded by seed.
func NewRunner(cfg Config, seed uint64, logger *slog.Logger) *Runner {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &Runner{cfg: cfg.Defaults(), seed: seed, logger: logger}
}

// Add registers the targets of one cell's world. A target whose name an
// earlier cell registered is that same thing: the cell joins it.
func (r *Runner) Add(world, cell string, ts []Target) {
	for _, t := range ts {
		if !slices.Contains(r.cfg.Kinds, t.Kind) {
			continue
		}
		i := slices.IndexFunc(r.entries, func(e *entry) bool { return e.t.Name == t.Name && e.t.Kind == t.Kind })
		if i >= 0 {
			r.entries[i].cells = append(r.entries[i].cells, cell)
			continue
		}
		r.entries = append(r.entries, &entry{t: t, world: world, cells: []string{cell}})
	}
}

// Missing returns the kinds named one by one (not through "all") that no
// registered target offers.
func (r *Runner) Missing() []Kind {
	if r.cfg.Kinds.All() {
		return nil
	}
	var out []Kind
	for _, k := range r.cfg.Kinds {
		if !slices.ContainsFunc(r.entries, func(e *entry) bool { return e.t.Kind == k }) {
			out = append(out, k)
		}
	}
	return out
}

// Schedule returns the faults the registered targets get (Schedule).
func (r *Runner) Schedule() []Fault {
	if r.faults == nil {
		available := map[string][]Kind{}
		for _, e := range r.entries {
			if !slices.Contains(available[e.world], e.t.Kind) {
				available[e.world] = append(available[e.world], e.t.Kind)
			}
		}
		r.faults = Schedule(r.cfg, r.seed, available)
	}
	return slices.Clone(r.faults)
}

// Start plays the schedule in the background: each world's chain in order,
// a fault on all of its world's targets of its kind at once, the planned
// quiet gap kept after each fault's actual end. notify (may be nil) gets
// every record so far whenever a fault starts or ends.
func (r *Runner) Start(ctx context.Context, notify func([]Record)) {
	faults := r.Schedule()
	ctx, cancel := context.WithCancel(ctx)
	r.mu.Lock()
	r.notify, r.cancel = notify, cancel
	r.g = &errgroup.Group{}
	g := r.g
	r.mu.Unlock()
	chains := map[string][]Fault{}
	for _, f := range faults {
		chains[f.World] = append(chains[f.World], f)
	}
	for _, world := range slices.Sorted(maps.Keys(chains)) {
		chain := chains[world]
		g.Go(func() error { r.play(ctx, chain); return nil })
	}
}

// Stop cancels the faults not started yet, waits for the ones under way to
// heal, and returns every record.
func (r *Runner) Stop() []Record {
	r.mu.Lock()
	cancel, g := r.cancel, r.g
	r.mu.Unlock()
	if cancel != nil {
		cancel()
		_ = g.Wait()
	}
	return r.Records()
}

// Records returns the records so far, in the order the faults started.
func (r *Runner) Records() []Record {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.records)
}

// Aftermath is how long after a fault ends its effects can still show: a
// connection it killed fails at its first use, and a pool hands out an idle
// connection without a ping for up to a second (pgxpool checks one only
// after 1 s idle). A run is marked with a fault whose span, this included,
// overlaps its lifetime.
const Aftermath = time.Second

// Overlapping returns the labels (kind#id) of the faults on cell's targets
// whose span, Aftermath included, overlaps [from, to]; a fault under way
// counts as lasting.
func (r *Runner) Overlapping(cell string, from, to time.Time) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, rec := range r.records {
		if !slices.Contains(rec.Cells, cell) || rec.Start.After(to) || (!rec.End.IsZero() && rec.End.Add(Aftermath).Before(from)) {
			continue
		}
		if l := rec.Label(); !slices.Contains(out, l) {
			out = append(out, l)
		}
	}
	return out
}

// play runs one world's chain.
func (r *Runner) play(ctx context.Context, chain []Fault) {
	var plannedEnd time.Duration
	for _, f := range chain {
		if clock.Sleep(ctx, f.At-plannedEnd) != nil {
			return
		}
		plannedEnd = f.At + f.For
		r.inject(ctx, f)
	}
}

// inject runs f on every target of its kind in its world at once.
func (r *Runner) inject(ctx context.Context, f Fault) {
	var g errgroup.Group
	for _, e := range r.entries {
		if e.world != f.World || e.t.Kind != f.Kind {
			continue
		}
		i := r.begin(Record{Fault: f.ID, Kind: f.Kind, World: f.World, Target: e.t.Name, Cells: slices.Clone(e.cells), Start: time.Now().UTC()})
		g.Go(func() error {
			detail, err := e.t.Inject(ctx, f)
			if err != nil {
				r.logger.Warn("nemesis: fault failed", "fault", f.ID, "kind", f.Kind, "target", e.t.Name, "err", err)
			}
			r.end(i, detail, err)
			return nil
		})
	}
	_ = g.Wait()
}

func (r *Runner) begin(rec Record) int {
	r.mu.Lock()
	r.records = append(r.records, rec)
	i := len(r.records) - 1
	r.mu.Unlock()
	r.changed()
	return i
}

func (r *Runner) end(i int, detail string, err error) {
	r.mu.Lock()
	r.records[i].End = time.Now().UTC()
	r.records[i].Detail = detail
	if err != nil {
		r.records[i].Err = err.Error()
	}
	r.mu.Unlock()
	r.changed()
}

// changed hands the records to notify, one call at a time.
func (r *Runner) changed() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.notify != nil {
		r.notify(slices.Clone(r.records))
	}
}

// Heal is the context a target heals on: ctx's values without its
// cancellation, bounded by d.
func Heal(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), d)
}
