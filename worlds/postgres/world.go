package postgres

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	mrand "math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/stormctl/stormctl/internal/base/redact"
	"github.com/stormctl/stormctl/internal/eventlog"
	"github.com/stormctl/stormctl/internal/eventlog/pgconnect"
	"github.com/stormctl/stormctl/internal/nemesis"
	"github.com/stormctl/stormctl/worlds"
)

// Name is the world's registry name.
const Name = "postgres"

// World is the PostgreSQL world: one schema it created, on a pgx pool. It is
// safe for concurrent use.
type World struct {
	cfg      Config
	pool     *pgxpool.Pool
	q        queries
	marker   string
	commitTS bool
	minter   *eventlog.Minter
	runs     sync.Map // run id → runInfo; a run's record never changes
	closed   atomic.Bool
	// resetMu excludes Reset (writer) from every other operation (readers).
	resetMu sync.RWMutex
	// nemesis is the World's fault plumbing (Config.Nemesis), nil without.
	nemesis *faults
}

var (
	_ worlds.World       = (*World)(nil)
	_ worlds.Resetter    = (*World)(nil)
	_ worlds.CommitTimes = (*World)(nil)
	_ worlds.Dumper      = (*World)(nil)
)

// Source supplies the base Config of each World the registry opens: the
// connection string (of --pg-url, or of an embedded cluster started on first
// use), pool size and Keep. Latency and Seed come from worlds.Options.
type Source func(ctx context.Context) (Config, error)

// Register adds the postgres world to r. Every World it opens gets its
// connection settings from src and its own fresh schema.
func Register(r *worlds.Registry, src Source) { r.Register(Entry(src)) }

// Entry describes the postgres world whose Worlds take their connection
// settings from src, each in a fresh schema of its own: the registry's
// entry, and what a test hands the conformance suite (worldtest.Exercise).
func Entry(src Source) worlds.Entry {
	return worlds.Entry{
		Name:        Name,
		Description: "PostgreSQL (pgx): world-postgres's workflow_events table in a schema of its own; seq through a counter row updated in the insert's transaction; slot through a slot counter and reserved rows committed in place",
		Schemes:     []string{string(eventlog.SchemeULID), string(eventlog.SchemeSeq), string(eventlog.SchemeSequence), string(eventlog.SchemeSlot)},
		Connections: Connections,
		HookClaims:  true,
		Endpoints:   []worlds.Endpoint{URLFlag},
		Faults:      []nemesis.Kind{nemesis.PGRestart, nemesis.PGTerminate, nemesis.Latency},
		Open:        worlds.FactoryFrom(src, withOptions, Open),
	}
}

// withOptions applies a storm cell's options to the source's config: its
// latency, seed and nemesis, and its pool size when the storm gives one
// (the source's otherwise).
func withOptions(cfg *Config, opts worlds.Options) {
	cfg.Latency, cfg.Seed, cfg.Nemesis = opts.Latency, opts.Seed, opts.Nemesis
	if opts.PoolSize > 0 {
		cfg.PoolSize = opts.PoolSize
	}
}

// Open connects, creates the World's schema and tables and returns the
// World. An unreachable server fails with eventlog.ErrUnavailable, an
// existing schema with ErrSchemaTaken (nothing is changed in either case).
func Open(ctx context.Context, cfg Config) (*World, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	pc, err := pgxpool.ParseConfig(cfg.URL)
	if err != nil {
		return nil, fmt.Errorf("postgres: invalid connection string: %w", redact.Wrap(err, cfg.URL))
	}
	pc.MaxConns = cfg.PoolSize
	pc.MinConns = 0
	pc.MaxConnIdleTime = time.Minute
	pc.ConnConfig.ConnectTimeout = cfg.ConnectTimeout
	pc.ConnConfig.RuntimeParams["application_name"] = appName(cfg.Schema)
	var nem *faults
	if cfg.Nemesis {
		if nem, err = newFaults(cfg, pc.ConnConfig); err != nil {
			return nil, err
		}
	}
	pool, err := pgxpool.NewWithConfig(ctx, pc)
	if err != nil {
		nem.close()
		return nil, storeErr(ctx, "connect", redact.Wrap(err, cfg.URL))
	}
	w, err := open(ctx, cfg, pool)
	if err != nil {
		pool.Close()
		nem.close()
		return nil, err
	}
	w.nemesis = nem
	return w, nil
}

func open(ctx context.Context, cfg Config, pool *pgxpool.Pool) (*World, error) {
	if err := pool.Ping(ctx); err != nil {
		return nil, connectErr(ctx, cfg, err)
	}
	commitTS, err := CheckCommitTimestamps(ctx, pool)
	if err != nil {
		return nil, err
	}
	var tok [8]byte
	if _, err := rand.Read(tok[:]); err != nil {
		return nil, fmt.Errorf("postgres: schema marker: %w", err)
	}
	w := &World{
		cfg:      cfg,
		pool:     pool,
		q:        newQueries(cfg.Schema, commitTS),
		marker:   markerPrefix + hex.EncodeToString(tok[:]),
		commitTS: commitTS,
		minter:   eventlog.NewMinter(eventlog.ServerPrefix, newEntropy(cfg.Seed)),
	}
	if err := createSchema(ctx, pool, cfg.Schema, w.marker); err != nil {
		return nil, err
	}
	return w, nil
}

// connectErr is a failed first connection to cfg's server as one plain line
// (pgconnect.Error), telling the user which flag to check when the server
// was theirs; Ctrl-C stays a cancellation.
func connectErr(ctx context.Context, cfg Config, err error) error {
	if ctx.Err() != nil {
		return storeErr(ctx, "connect to "+redact.Server(cfg.URL), redact.Wrap(err, cfg.URL))
	}
	err = pgconnect.Error(cfg.URL, err)
	if cfg.Flag != "" {
		return fmt.Errorf("%w (check %s: host, port, user, password and database)", err, cfg.Flag)
	}
	return err
}

// newEntropy is a ChaCha8 stream seeded from seed, the ULID entropy source.
func newEntropy(seed uint64) *mrand.ChaCha8 {
	var s [32]byte
	binary.LittleEndian.PutUint64(s[:8], seed)
	copy(s[8:], "stormctl/worlds/postgres")
	return mrand.NewChaCha8(s)
}

// Schema returns the name of the World's schema.
func (w *World) Schema() string { return w.cfg.Schema }

// CommitTimestamps reports whether the server keeps commit times
// (track_commit_timestamp), which CommitTimes needs.
func (w *World) CommitTimestamps() bool { return w.commitTS }

// CheckCommitTimestamps reports whether the server behind pool runs with
// track_commit_timestamp on.
func CheckCommitTimestamps(ctx context.Context, pool *pgxpool.Pool) (bool, error) {
	var v string
	if err := pool.QueryRow(ctx, "SHOW track_commit_timestamp").Scan(&v); err != nil {
		return false, storeErr(ctx, "SHOW track_commit_timestamp", err)
	}
	return v == "on", nil
}

// runInfo is a run's record.
type runInfo struct {
	no     int64
	scheme eventlog.Scheme
	basis  eventlog.FenceBasis
	// claim is the run's hook-claim mode (eventlog.Run.HookClaim).
	claim eventlog.HookClaim
}

// CreateRun records the run with its scheme and fence basis. A sequence run
// gets its own database sequence. An existing run fails with
// eventlog.ErrConflict.
func (w *World) CreateRun(ctx context.Context, r eventlog.Run) error {
	unlock, err := w.enter(ctx)
	if err != nil {
		return err
	}
	defer unlock()
	switch {
	case r.ID == "" || len(r.ID) > 200:
		return fmt.Errorf("postgres: create run %q: invalid run id (want 1 to 200 characters)", r.ID)
	case !r.Scheme.Positioned() && r.Scheme != eventlog.SchemeULID:
		return fmt.Errorf("postgres: create run %s: scheme %q not supported (valid: ulid, seq, sequence, slot)", r.ID, r.Scheme)
	case r.CheckFenceBasis() != nil:
		return fmt.Errorf("postgres: create run %s: %w", r.ID, r.CheckFenceBasis())
	case r.CheckHookClaim() != nil:
		return fmt.Errorf("postgres: create run %s: %w", r.ID, r.CheckHookClaim())
	case r.Guard != eventlog.GuardNone:
		return fmt.Errorf("postgres: create run %s: guard %q not supported (this world has no legacy guard)", r.ID, r.Guard)
	}
	info := runInfo{scheme: r.Scheme, basis: r.FenceBasis, claim: r.HookClaim}
	err = pgx.BeginFunc(ctx, w.pool, func(tx pgx.Tx) error {
		if err := tx.QueryRow(ctx, w.q.createRun, r.ID, string(r.Scheme), string(r.FenceBasis), string(r.HookClaim)).Scan(&info.no); err != nil {
			return err
		}
		if r.Scheme != eventlog.SchemeSequence {
			return nil
		}
		_, err := tx.Exec(ctx, "CREATE SEQUENCE "+sequenceName(w.cfg.Schema, info.no)+" AS bigint")
		return err
	})
	if code, _ := pgCode(err); code == codeUniqueViolation {
		return fmt.Errorf("postgres: create run %s: run exists: %w", r.ID, eventlog.ErrConflict)
	}
	if err != nil {
		return storeErr(ctx, "create run "+r.ID, err)
	}
	w.runs.Store(r.ID, info)
	return nil
}

// run returns a run's record, from the cache or the runs table; an unknown
// run is eventlog.ErrNoRun.
func (w *World) run(ctx context.Context, runID string) (runInfo, error) {
	if v, ok := w.runs.Load(runID); ok {
		return v.(runInfo), nil
	}
	var info runInfo
	var scheme, basis, claim string
	err := w.pool.QueryRow(ctx, w.q.loadRun, runID).Scan(&info.no, &scheme, &basis, &claim)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return info, fmt.Errorf("postgres: run %s: %w", runID, eventlog.ErrNoRun)
	case err != nil:
		return info, storeErr(ctx, "read run "+runID, err)
	}
	info.scheme, info.basis, info.claim = eventlog.Scheme(scheme), eventlog.FenceBasis(basis), eventlog.HookClaim(claim)
	w.runs.Store(runID, info)
	return info, nil
}

// mint is the event a draft becomes: a wevt_ ULID minted now, in the client,
// before any window. MintedAt keeps microseconds, what timestamptz stores.
func (w *World) mint(runID string, d eventlog.Draft) eventlog.Event {
	now := time.Now().Truncate(time.Microsecond)
	return d.Event(runID, w.minter.Mint(now), now)
}

// enter admits an operation: the World must be open, ctx live and no Reset
// running. The returned func ends the operation.
func (w *World) enter(ctx context.Context) (func(), error) {
	if w.closed.Load() {
		return nil, errClosed
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	w.resetMu.RLock()
	if w.closed.Load() {
		w.resetMu.RUnlock()
		return nil, errClosed
	}
	return w.resetMu.RUnlock, nil
}

// enterRun enters the World, as enter does, and looks up the run; unlock
// leaves the World again (nil with an error: already left).
func (w *World) enterRun(ctx context.Context, runID string) (unlock func(), run runInfo, err error) {
	if unlock, err = w.enter(ctx); err != nil {
		return nil, runInfo{}, err
	}
	if run, err = w.run(ctx, runID); err != nil {
		unlock()
		return nil, runInfo{}, err
	}
	return unlock, run, nil
}

// Reset empties the World: it drops its schema, with every run and event,
// and creates it afresh under the same name. Keep does not apply: Keep is
// what Close leaves behind, and a caller asking for a reset asks for the
// data to go. Operations wait while Reset runs.
func (w *World) Reset(ctx context.Context) error {
	if w.closed.Load() {
		return errClosed
	}
	w.resetMu.Lock()
	defer w.resetMu.Unlock()
	if err := DropMarkedSchema(ctx, w.pool, w.cfg.Schema, w.marker); err != nil {
		return err
	}
	w.runs.Clear()
	return createSchema(ctx, w.pool, w.cfg.Schema, w.marker)
}

// Kept implements worlds.Keeper: with Config.Keep on a server other than
// an embedded cluster, the schema that stays, and its database.
func (w *World) Kept() string {
	if !w.cfg.Keep || w.cfg.Cluster != nil {
		return ""
	}
	where := ""
	if pc, err := pgconn.ParseConfig(w.cfg.URL); err == nil {
		where = fmt.Sprintf(" in database %s on %s:%d", pc.Database, pc.Host, pc.Port)
	}
	return "schema " + w.cfg.Schema + where
}

// Close drops the World's schema (unless Config.Keep) and closes the pool.
// Later operations fail. Close waits for operations in flight.
func (w *World) Close() error {
	if w.closed.Swap(true) {
		return nil
	}
	w.resetMu.Lock()
	defer w.resetMu.Unlock()
	var err error
	if !w.cfg.Keep {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		err = DropMarkedSchema(ctx, w.pool, w.cfg.Schema, w.marker)
		cancel()
	}
	w.pool.Close()
	w.nemesis.close()
	return err
}
