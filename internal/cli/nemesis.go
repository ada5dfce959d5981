package cli

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/redis/go-redis/v9"
	"github.com/spf13/pflag"

	"github.com/stormctl/stormctl/internal/redact"
	"github.com/stormctl/stormctl/nemesis"
	"github.com/stormctl/stormctl/stormdir"
)

// addNemesisFlags registers --nemesis and its bounds on fl.
func addNemesisFlags(fl *pflag.FlagSet, c *nemesis.Config) {
	fl.Var(&c.Kinds, "nemesis", "break the worlds' stores during the storm, on this machine's loopback only (off by default): "+
		"all, or kinds of "+nemesisKindsHelp()+". Faults and the runs they overlap are recorded in storm.json and runs.jsonl")
	fl.IntVar(&c.Faults, "nemesis-faults", nemesis.DefaultFaults, "faults of each --nemesis kind per world, one at a time")
	fl.DurationVar(&c.Window, "nemesis-window", nemesis.DefaultWindow, "longest fault: each lasts between half of this and all of it")
	fl.DurationVar(&c.Gap, "nemesis-gap", nemesis.DefaultGap, "mean quiet time before each fault (drawn between half and 1.5 times it)")
}

// nemesisOf is the storm's nemesis from its flags: the zero Config (off)
// unless --nemesis names a kind, so that a storm without one records none.
func nemesisOf(c nemesis.Config) nemesis.Config {
	if !c.On() {
		return nemesis.Config{}
	}
	return c
}

// checkNemesisEndpoints refuses, with one line, a storm whose nemesis would
// act on an endpoint it does not own: every endpoint a storm world is
// pointed at must be on loopback, and a kind that needs an embedded server
// must have one.
func checkNemesisEndpoints(c stormdir.Config, ep WorldEndpoints) error {
	if !c.Nemesis.On() {
		return nil
	}
	has := func(w string) bool { return slices.Contains(c.Worlds, w) }
	named := func(k nemesis.Kind) bool { return !c.Nemesis.Kinds.All() && slices.Contains(c.Nemesis.Kinds, k) }
	if has("postgres") && ep.PGURL != "" {
		pc, err := pgconn.ParseConfig(ep.PGURL)
		if err != nil {
			return fmt.Errorf("--pg-url: %s", parseError(ep.PGURL, err))
		}
		if strings.HasPrefix(pc.Host, "/") {
			return fmt.Errorf("--nemesis needs --pg-url on a loopback TCP address, not the unix socket %s", redact.Text(pc.Host, ep.PGURL))
		}
		if err := nemesis.CheckLoopback("--pg-url", fmt.Sprintf("%s:%d", pc.Host, pc.Port)); err != nil {
			// pgx may take a piece of a mistyped password for the host.
			return redact.Wrap(err, ep.PGURL)
		}
		if named(nemesis.PGRestart) {
			return fmt.Errorf("--nemesis pg-restart restarts the embedded cluster only: drop --pg-url, or the kind")
		}
	}
	if !has("vercel") {
		return nil
	}
	for _, e := range []struct {
		flag, url string
		kinds     []nemesis.Kind
	}{
		{"--ingest-url", ep.IngestURL, []nemesis.Kind{nemesis.Ingest503, nemesis.DynamoPause, nemesis.RedisDown}},
		{"--dynamo-endpoint", ep.DynamoEndpoint, []nemesis.Kind{nemesis.DynamoPause}},
		{"--redis-url", ep.RedisURL, []nemesis.Kind{nemesis.RedisDown}},
	} {
		if e.url == "" {
			continue
		}
		if err := nemesis.CheckLoopback(e.flag, e.url); err != nil {
			return err
		}
		for _, k := range e.kinds {
			if named(k) {
				return fmt.Errorf("--nemesis %s acts on the vercel world's own embedded servers only: drop %s, or the kind", k, e.flag)
			}
		}
	}
	return nil
}

// quietRedis sends the Redis client's own log lines (a Redis the nemesis
// took down makes it log every failed dial) to logger at debug level
// instead of stderr, where they would tear through the progress display.
func quietRedis(logger *slog.Logger) {
	redis.SetLogger(redisLog{logger})
}

type redisLog struct{ l *slog.Logger }

func (r redisLog) Printf(ctx context.Context, format string, v ...any) {
	r.l.DebugContext(ctx, "redis: "+fmt.Sprintf(format, v...))
}
