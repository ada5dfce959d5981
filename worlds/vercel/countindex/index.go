package countindex

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"

	"github.com/stormctl/stormctl/internal/base/clock"
	"github.com/stormctl/stormctl/internal/eventlog"
)

// Defaults of the legacy index (DOMAIN.md: 24 h TTL, 16-id window).
const (
	DefaultTTL    = 24 * time.Hour
	DefaultWindow = 16
)

// Config configures an Index.
type Config struct {
	// URL is a Redis URL (redis://[user:password@]host:port/db). Empty:
	// an embedded miniredis.
	URL string
	// Namespace prefixes every key. Empty: "stormctl:" plus a random suffix.
	Namespace string
	// TTL is how long a run's count and window live after its last append
	// (0: DefaultTTL).
	TTL time.Duration
	// Window is how many of a run's newest event ids are kept (0:
	// DefaultWindow).
	Window int
	// Keep leaves the namespace's keys in Redis on Close.
	Keep bool
	// DialTimeout bounds connecting (0: 2 s); Open fails within a few of
	// them when Redis cannot be reached.
	DialTimeout time.Duration
	// PoolSize is the connection pool size (0: 64).
	PoolSize int
}

// Index is a per-run event count and id window in Redis, safe for
// concurrent use.
type Index struct {
	cfg  Config
	rdb  *redis.Client
	mini *miniredis.Miniredis // nil unless embedded
	// wrote is set before the first write is sent (Start, Record): from
	// then on the namespace may hold keys.
	wrote atomic.Bool
}

// Wrote reports whether the Index has sent a write to Redis, so that its
// namespace may hold keys (a storm with no count-index run writes none).
func (ix *Index) Wrote() bool { return ix.wrote.Load() }

// Open connects to cfg.URL (or starts an embedded miniredis) and pings it.
// An unreachable Redis fails with eventlog.ErrUnavailable.
func Open(ctx context.Context, cfg Config) (*Index, error) {
	if cfg.TTL <= 0 {
		cfg.TTL = DefaultTTL
	}
	if cfg.Window <= 0 {
		cfg.Window = DefaultWindow
	}
	if cfg.DialTimeout <= 0 {
		cfg.DialTimeout = 2 * time.Second
	}
	if cfg.PoolSize <= 0 {
		cfg.PoolSize = 64
	}
	if cfg.Namespace == "" {
		var b [6]byte
		if _, err := rand.Read(b[:]); err != nil {
			return nil, fmt.Errorf("countindex: random namespace: %w", err)
		}
		cfg.Namespace = "stormctl:" + hex.EncodeToString(b[:])
	}
	if strings.ContainsAny(cfg.Namespace, "*?[]\\") {
		return nil, fmt.Errorf("countindex: namespace %q: no glob characters (*?[]\\) allowed", cfg.Namespace)
	}
	ix := &Index{cfg: cfg}
	var opts *redis.Options
	if cfg.URL == "" {
		ix.mini = miniredis.NewMiniRedis()
		if err := ix.mini.StartAddr("127.0.0.1:0"); err != nil {
			return nil, fmt.Errorf("countindex: embedded miniredis: %w", err)
		}
		opts = &redis.Options{Addr: ix.mini.Addr()}
	} else {
		var err error
		if opts, err = redis.ParseURL(cfg.URL); err != nil {
			return nil, fmt.Errorf("countindex: invalid Redis URL: %w", err)
		}
	}
	opts.Protocol = 2
	opts.DisableIdentity = true
	opts.MaintNotificationsConfig = &maintnotifications.Config{Mode: maintnotifications.ModeDisabled}
	opts.DialTimeout = cfg.DialTimeout
	opts.ReadTimeout = 5 * time.Second
	opts.WriteTimeout = 5 * time.Second
	opts.PoolSize = cfg.PoolSize
	opts.MaxRetries = 2
	ix.rdb = redis.NewClient(opts)
	pctx, cancel := context.WithTimeout(ctx, 3*cfg.DialTimeout)
	defer cancel()
	if err := ix.rdb.Ping(pctx).Err(); err != nil {
		_ = ix.rdb.Close()
		if ix.mini != nil {
			ix.mini.Close()
		}
		if ctx.Err() != nil {
			return nil, fmt.Errorf("countindex: ping: %w", ctx.Err())
		}
		return nil, eventlog.Unavailable("countindex: Redis at "+opts.Addr, rootCause(err))
	}
	return ix, nil
}

// Addr returns the address of the Redis the Index talks to.
func (ix *Index) Addr() string { return ix.rdb.Options().Addr }

// Namespace returns the prefix of the Index's keys.
func (ix *Index) Namespace() string { return ix.cfg.Namespace }

func (ix *Index) countKey(runID string) string  { return ix.cfg.Namespace + ":count:" + runID }
func (ix *Index) windowKey(runID string) string { return ix.cfg.Namespace + ":window:" + runID }

// Start records a new run with a count of 0 (unless the run has a count
// already), so that the guard can judge its first write.
func (ix *Index) Start(ctx context.Context, runID string) error {
	ix.wrote.Store(true)
	err := ix.rdb.SetNX(ctx, ix.countKey(runID), 0, ix.cfg.TTL).Err()
	return redisErr(ctx, "start the count of run "+runID, err)
}

// Count returns a run's count; ok is false when Redis holds none (never
// started, or expired).
func (ix *Index) Count(ctx context.Context, runID string) (n int64, ok bool, err error) {
	n, err = ix.rdb.Get(ctx, ix.countKey(runID)).Int64()
	if errors.Is(err, redis.Nil) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, redisErr(ctx, "read the count of run "+runID, err)
	}
	return n, true, nil
}

// Record adds appended events (ids in commit order) to a run's count and
// window in one MULTI/EXEC, and refreshes both TTLs. A count that had
// expired restarts from these events: the index is then short of the log,
// which the guard reads as incomplete.
func (ix *Index) Record(ctx context.Context, runID string, ids []string) error {
	if len(ids) == 0 {
		return nil
	}
	newest := make([]any, len(ids))
	for i, id := range ids {
		newest[i] = id
	}
	ck, wk := ix.countKey(runID), ix.windowKey(runID)
	ix.wrote.Store(true)
	_, err := ix.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.IncrBy(ctx, ck, int64(len(ids)))
		p.Expire(ctx, ck, ix.cfg.TTL)
		p.LPush(ctx, wk, newest...)
		p.LTrim(ctx, wk, 0, int64(ix.cfg.Window-1))
		p.Expire(ctx, wk, ix.cfg.TTL)
		return nil
	})
	return redisErr(ctx, "record appends to run "+runID, err)
}

// Window returns a run's newest event ids, newest first (at most
// Config.Window of them).
func (ix *Index) Window(ctx context.Context, runID string) ([]string, error) {
	ids, err := ix.rdb.LRange(ctx, ix.windowKey(runID), 0, -1).Result()
	return ids, redisErr(ctx, "read the window of run "+runID, err)
}

// Locate finds a writer's watermark (the last event id it saw) in a run's
// window: after is how many ids the index recorded after it; found is false
// when the id has left the window (or never was in it).
func (ix *Index) Locate(ctx context.Context, runID, watermark string) (after int, found bool, err error) {
	ids, err := ix.Window(ctx, runID)
	if err != nil {
		return 0, false, err
	}
	for i, id := range ids {
		if id == watermark {
			return i, true, nil
		}
	}
	return 0, false, nil
}

// Reset deletes every key of the namespace.
func (ix *Index) Reset(ctx context.Context) error {
	var cursor uint64
	for {
		keys, next, err := ix.rdb.Scan(ctx, cursor, ix.cfg.Namespace+":*", 500).Result()
		if err != nil {
			return redisErr(ctx, "scan the namespace", err)
		}
		if len(keys) > 0 {
			if err := ix.rdb.Del(ctx, keys...).Err(); err != nil {
				return redisErr(ctx, "delete the namespace's keys", err)
			}
		}
		if cursor = next; cursor == 0 {
			return nil
		}
	}
}

// Outage takes the embedded Redis down (closing its listener and every
// connection) for d, or until ctx ends, and brings it back on the same
// address with its data: the nemesis's redis-down. An Index on an outside
// Redis cannot be taken down.
func (ix *Index) Outage(ctx context.Context, d time.Duration) error {
	if ix.mini == nil {
		return errors.New("countindex: only the embedded Redis can be taken down")
	}
	ix.mini.Close()
	_ = clock.Sleep(ctx, d) // ctx ending early cuts the outage short
	if err := ix.mini.Restart(); err != nil {
		return fmt.Errorf("countindex: restart the embedded Redis: %w", err)
	}
	return nil
}

// Embedded reports whether the Index runs its own miniredis.
func (ix *Index) Embedded() bool { return ix.mini != nil }

// Close deletes the namespace's keys (unless Config.Keep), closes the
// connections and stops the embedded miniredis.
func (ix *Index) Close() error {
	var err error
	if !ix.cfg.Keep && ix.mini == nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		err = ix.Reset(ctx)
		cancel()
	}
	err = errors.Join(err, ix.rdb.Close())
	if ix.mini != nil {
		ix.mini.Close()
	}
	return err
}

// redisErr wraps err of operation op: a cancelled ctx wins; anything that
// is not a Redis reply error means Redis cannot be used
// (eventlog.ErrUnavailable).
func redisErr(ctx context.Context, op string, err error) error {
	if err == nil {
		return nil
	}
	if cerr := ctx.Err(); cerr != nil {
		return fmt.Errorf("countindex: %s: %w", op, cerr)
	}
	var reply redis.Error
	if errors.As(err, &reply) && !errors.Is(err, redis.ErrClosed) {
		return fmt.Errorf("countindex: %s: %w", op, err)
	}
	return eventlog.Unavailable("countindex: "+op, rootCause(err))
}

// rootCause returns the network error inside err when there is one.
func rootCause(err error) error {
	var opErr *net.OpError
	if errors.As(err, &opErr) {
		return opErr
	}
	if errors.Is(err, syscall.ECONNREFUSED) {
		return syscall.ECONNREFUSED
	}
	return err
}
