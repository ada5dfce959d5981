package cli

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/redis/go-redis/v9"
	"github.com/spf13/pflag"

	"github.com/stormctl/stormctl/nemesis"
	"github.com/stormctl/stormctl/worlds"
)

// addNemesisFlags registers --nemesis and its bounds on fl; reg's worlds
// say which kinds they offer.
func addNemesisFlags(fl *pflag.FlagSet, c *nemesis.Config, reg *worlds.Registry) {
	fl.Var(&c.Kinds, "nemesis", "break the worlds' stores during the storm, on this machine's loopback only (off by default): "+
		"all, or kinds of "+nemesisKindsHelp(reg)+". Faults and the runs they overlap are recorded in storm.json and runs.jsonl")
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
