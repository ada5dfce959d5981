package bench

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"golang.org/x/sync/errgroup"

	"github.com/stormctl/stormctl/internal/eventlog"
	"github.com/stormctl/stormctl/worlds/postgres"
)

// table is the forensics benchmark's workflow_events, in a schema of its
// own marked with marker; only a schema carrying the marker is dropped.
type table struct {
	schema, marker string
}

func (t *table) name() string { return pgx.Identifier{t.schema, "workflow_events"}.Sanitize() }

// create makes the schema and a table shaped like world-postgres's
// workflow_events (DOMAIN.md): id wevt_ ULID primary key, type,
// correlation_id, created_at, run_id, payload jsonb, payload_cbor,
// spec_version, and the unique index on (run_id, correlation_id, type).
func (t *table) create(ctx context.Context, pool *pgxpool.Pool) error {
	s := pgx.Identifier{t.schema}.Sanitize()
	stmts := []string{
		"CREATE SCHEMA " + s,
		fmt.Sprintf("COMMENT ON SCHEMA %s IS '%s'", s, t.marker),
		`CREATE TABLE ` + t.name() + ` (
			id             varchar PRIMARY KEY,
			type           varchar NOT NULL,
			correlation_id varchar,
			created_at     timestamptz NOT NULL DEFAULT now(),
			run_id         varchar NOT NULL,
			payload        jsonb,
			payload_cbor   bytea,
			spec_version   integer
		)`,
		`CREATE UNIQUE INDEX workflow_events_run_corr_type ON ` + t.name() + ` (run_id, correlation_id, type)`,
	}
	err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		for _, q := range stmts {
			if _, err := tx.Exec(ctx, q); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("bench: create %s: %w", t.name(), err)
	}
	return nil
}

// drop drops the schema if it still carries the marker.
func (t *table) drop(ctx context.Context, pool *pgxpool.Pool) error {
	if err := postgres.DropMarkedSchema(ctx, pool, t.schema, t.marker); err != nil {
		return fmt.Errorf("bench: %w", err)
	}
	return nil
}

// LoadStats says how the table was loaded.
type LoadStats struct {
	Seconds      float64 `json:"seconds"`
	Transactions int     `json:"transactions"`
	// Swapped counts transactions committed after a later-minted one on
	// purpose, on top of what the loaders' concurrency reorders.
	Swapped int `json:"swapped"`
}

// loadTypes are the event types drawn for the table, with their weights.
var loadTypes = []struct {
	typ    eventlog.Type
	weight int
}{
	{eventlog.StepCreated, 25}, {eventlog.StepStarted, 20}, {eventlog.StepCompleted, 20},
	{eventlog.HookCreated, 5}, {eventlog.HookReceived, 15}, {eventlog.WaitCreated, 5},
	{eventlog.WaitCompleted, 5}, {eventlog.AttrSet, 5},
}

// load fills the table: cfg.Events events, each on a uniformly drawn run,
// in transactions of cfg.Batch events (one COPY each), cfg.Loaders at once.
// Ids are minted (one monotonic minter, the time of minting) when a batch is
// built, so the loaders' concurrency already commits some batches out of id
// order; on top of that every fourth pair of batches is committed later
// batch first.
func (t *table) load(ctx context.Context, pool *pgxpool.Pool, cfg ForensicsConfig) (LoadStats, error) {
	var seed [32]byte
	binary.LittleEndian.PutUint64(seed[:8], cfg.Seed)
	minter := eventlog.NewMinter(eventlog.ServerPrefix, rand.NewChaCha8(seed))
	runs := make([]string, cfg.Runs)
	now := time.Now()
	for i := range runs {
		runs[i] = "wrun_" + minter.Mint(now)[len(eventlog.ServerPrefix):]
	}
	total := 0
	for _, lt := range loadTypes {
		total += lt.weight
	}
	drawType := func(r *rand.Rand) eventlog.Type {
		n := r.IntN(total)
		for _, lt := range loadTypes {
			if n -= lt.weight; n < 0 {
				return lt.typ
			}
		}
		return loadTypes[0].typ
	}

	batches := (cfg.Events + cfg.Batch - 1) / cfg.Batch
	pairs := (batches + 1) / 2
	cols := []string{"id", "type", "correlation_id", "run_id", "payload", "spec_version"}
	build := func(b int, r *rand.Rand) [][]any {
		lo, hi := b*cfg.Batch, min((b+1)*cfg.Batch, cfg.Events)
		rows := make([][]any, 0, hi-lo)
		for i := lo; i < hi; i++ {
			at := time.Now()
			rows = append(rows, []any{minter.Mint(at), string(drawType(r)), "c" + strconv.Itoa(i),
				runs[r.IntN(len(runs))], json.RawMessage(`{"i":` + strconv.Itoa(i) + `}`), 1})
		}
		return rows
	}
	copyBatch := func(ctx context.Context, rows [][]any) error {
		_, err := pool.CopyFrom(ctx, pgx.Identifier{t.schema, "workflow_events"}, cols, pgx.CopyFromRows(rows))
		return err
	}
	var st LoadStats
	swapped := make([]bool, pairs)
	start := time.Now()
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(cfg.Loaders)
	for p := range pairs {
		g.Go(func() error {
			r := rand.New(rand.NewPCG(cfg.Seed, uint64(p)+1))
			var order [][][]any
			for b := 2 * p; b < min(2*p+2, batches); b++ {
				order = append(order, build(b, r))
			}
			if len(order) == 2 && p%4 == 0 {
				order[0], order[1] = order[1], order[0]
				swapped[p] = true
			}
			for _, rows := range order {
				if err := copyBatch(gctx, rows); err != nil {
					return fmt.Errorf("bench: load %s: %w", t.name(), err)
				}
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return st, err
	}
	st.Seconds = time.Since(start).Seconds()
	st.Transactions = batches
	for _, s := range swapped {
		if s {
			st.Swapped++
		}
	}
	return st, nil
}
